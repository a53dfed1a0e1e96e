import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { it } from "@effect/vitest"
import Sqlite from "better-sqlite3"
import { Effect, Layer } from "effect"
import { expect } from "vitest"
import { EventLog } from "../../src/event/event-log.js"
import { LiveBus } from "../../src/event/live-bus.js"
import { Database } from "../../src/storage/database.js"
import { Migrations } from "../../src/storage/migrations.js"
import { tempDir } from "../fixture.js"

const originMigration = "0011_session_origin_seq"

/**
 * A database file as the runtime wrote it before `session.created` became seq 0: every migration
 * before 0011 applied (and recorded the way Effect's Migrator records them), one session numbered
 * the old way, one the new way, and a permission request's own aggregate.
 */
const writeOldFile = (filename: string) => {
  const db = new Sqlite(filename)
  const before = Migrations.all.slice(
    0,
    Migrations.all.findIndex((m) => m.tag === originMigration)
  )
  expect(before.length).toBe(11)
  for (const migration of before) {
    for (const statement of migration.sql.split("--> statement-breakpoint")) {
      if (statement.trim() !== "") db.exec(statement)
    }
  }
  db.exec(`CREATE TABLE IF NOT EXISTS effect_sql_migrations (
    migration_id integer PRIMARY KEY NOT NULL,
    created_at datetime NOT NULL DEFAULT current_timestamp,
    name VARCHAR(255) NOT NULL)`)
  before.forEach((migration, index) =>
    db
      .prepare("INSERT INTO effect_sql_migrations (migration_id, name) VALUES (?, ?)")
      .run(index + 1, migration.tag.replace(/^\d+_/, ""))
  )
  const session = (id: string) =>
    db
      .prepare(
        "INSERT INTO session (id, project_id, directory, title, time_created, time_updated, info) VALUES (?, 'p', '/r', 't', 1, 1, '{}')"
      )
      .run(id)
  const event = (aggregate: string, seq: number, type: string) =>
    db
      .prepare(
        "INSERT INTO event (id, aggregate_id, seq, type, version, data, time_created) VALUES (?, ?, ?, ?, 1, '{}', 1)"
      )
      .run(`evt_${aggregate}_${seq}`, aggregate, seq, type)
  session("ses_old")
  db.prepare("INSERT INTO event_sequence (aggregate_id, seq) VALUES ('ses_old', 5)").run()
  event("ses_old", 1, "session.created")
  event("ses_old", 2, "session.next.prompt.admitted")
  event("ses_old", 3, "session.next.prompted")
  event("ses_old", 4, "session.next.step.started")
  event("ses_old", 5, "session.next.step.ended")
  for (const [id, seq] of [
    ["msg_user", 3],
    ["msg_assistant", 4]
  ] as const) {
    db.prepare(
      "INSERT INTO message (id, session_id, seq, type, info, time_created) VALUES (?, 'ses_old', ?, 'user', '{}', 1)"
    ).run(id, seq)
  }
  db.prepare(
    "INSERT INTO session_input (id, session_id, delivery, input, prompt, admitted_seq, promoted_seq, time_created) VALUES ('msg_user', 'ses_old', 'steer', '{}', '{}', 2, 3, 1)"
  ).run()
  db.prepare(
    "INSERT INTO session_input (id, session_id, delivery, input, prompt, admitted_seq, promoted_seq, time_created) VALUES ('msg_pending', 'ses_old', 'queue', '{}', '{}', 5, NULL, 1)"
  ).run()
  db.prepare(
    "INSERT INTO instruction_checkpoint (session_id, baseline_text, baseline_seq, applied, compaction_seq, revision, time_created, time_updated) VALUES ('ses_old', 'b', 3, '{}', NULL, 1, 1, 1)"
  ).run()
  db.prepare(
    "INSERT INTO session_revert (session_id, from_seq, to_seq, message_id, time_created) VALUES ('ses_old', 2, 4, 'msg_user', 1), ('ses_old', 5, 5, 'msg_x', 1)"
  ).run()
  session("ses_new")
  db.prepare("INSERT INTO event_sequence (aggregate_id, seq) VALUES ('ses_new', 1)").run()
  event("ses_new", 0, "session.created")
  event("ses_new", 1, "session.next.prompt.admitted")
  db.prepare("INSERT INTO event_sequence (aggregate_id, seq) VALUES ('per_1', 1)").run()
  event("per_1", 1, "permission.v2.asked")
  db.close()
}

it.scoped("a file written with session.created at seq 1 is renumbered: the session's events start at seq 1", () =>
  Effect.gen(function* () {
    const filename = path.join(yield* tempDir, "opencode.db")
    writeOldFile(filename)
    const result = yield* Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const log = yield* EventLog.Service
      const events = yield* sql<{ aggregate_id: string; seq: number; type: string }>`
        SELECT aggregate_id, seq, type FROM event ORDER BY aggregate_id, seq`
      const sequences = yield* sql<{ aggregate_id: string; seq: number }>`
        SELECT aggregate_id, seq FROM event_sequence WHERE aggregate_id <> '' ORDER BY aggregate_id`
      const messages = yield* sql<{ id: string; seq: number }>`SELECT id, seq FROM message ORDER BY seq`
      const inputs = yield* sql<{ id: string; admitted_seq: number; promoted_seq: number | null }>`
        SELECT id, admitted_seq, promoted_seq FROM session_input ORDER BY id`
      const checkpoint = yield* sql<{ baseline_seq: number; compaction_seq: number | null }>`
        SELECT baseline_seq, compaction_seq FROM instruction_checkpoint`
      const reverts = yield* sql<{ from_seq: number; to_seq: number }>`
        SELECT from_seq, to_seq FROM session_revert ORDER BY to_seq`
      const served = yield* log.read("ses_old")
      const appended = yield* log.append("ses_old", [{ type: "session.next.agent.switched", version: 1, data: {} }])
      const tables = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE name = 'renumbered_session'`
      return { events, sequences, messages, inputs, checkpoint, reverts, served, appended, tables }
    }).pipe(
      Effect.provide(
        EventLog.layer.pipe(Layer.provideMerge(Database.layer({ filename })), Layer.provide(LiveBus.layer))
      )
    )

    expect(result.events).toEqual([
      { aggregate_id: "per_1", seq: 1, type: "permission.v2.asked" },
      { aggregate_id: "ses_new", seq: 0, type: "session.created" },
      { aggregate_id: "ses_new", seq: 1, type: "session.next.prompt.admitted" },
      { aggregate_id: "ses_old", seq: 0, type: "session.created" },
      { aggregate_id: "ses_old", seq: 1, type: "session.next.prompt.admitted" },
      { aggregate_id: "ses_old", seq: 2, type: "session.next.prompted" },
      { aggregate_id: "ses_old", seq: 3, type: "session.next.step.started" },
      { aggregate_id: "ses_old", seq: 4, type: "session.next.step.ended" }
    ])
    expect(result.sequences).toEqual([
      { aggregate_id: "per_1", seq: 1 },
      { aggregate_id: "ses_new", seq: 1 },
      { aggregate_id: "ses_old", seq: 4 }
    ])
    expect(result.messages).toEqual([
      { id: "msg_user", seq: 2 },
      { id: "msg_assistant", seq: 3 }
    ])
    expect(result.inputs).toEqual([
      { id: "msg_pending", admitted_seq: 4, promoted_seq: null },
      { id: "msg_user", admitted_seq: 1, promoted_seq: 2 }
    ])
    expect(result.checkpoint).toEqual([{ baseline_seq: 2, compaction_seq: null }])
    expect(result.reverts).toEqual([
      { from_seq: 1, to_seq: 3 },
      { from_seq: 4, to_seq: 4 }
    ])
    expect(result.served.map((e) => [e.durable.seq, e.type])).toEqual([
      [1, "session.next.prompt.admitted"],
      [2, "session.next.prompted"],
      [3, "session.next.step.started"],
      [4, "session.next.step.ended"]
    ])
    expect(result.appended.map((e) => e.durable.seq)).toEqual([5])
    expect(result.tables).toEqual([])
  })
)

it.scoped("a new session's session.created is seq 0 and its first durable event seq 1", () =>
  Effect.gen(function* () {
    const filename = path.join(yield* tempDir, "opencode.db")
    const [origin, first, served] = yield* Effect.gen(function* () {
      const log = yield* EventLog.Service
      const origin = yield* log.append("ses_x", [{ type: "session.created", version: 1, data: {} }], undefined, {
        opens: true
      })
      const first = yield* log.append("ses_x", [{ type: "session.next.agent.switched", version: 1, data: {} }])
      return [origin, first, yield* log.read("ses_x")] as const
    }).pipe(
      Effect.provide(
        EventLog.layer.pipe(Layer.provideMerge(Database.layer({ filename })), Layer.provide(LiveBus.layer))
      )
    )
    expect(origin.map((e) => e.durable.seq)).toEqual([0])
    expect(first.map((e) => e.durable.seq)).toEqual([1])
    expect(served.map((e) => e.durable.seq)).toEqual([1])
  })
)
