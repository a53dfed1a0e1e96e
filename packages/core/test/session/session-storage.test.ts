import { SqlClient } from "@effect/sql"
import { layer } from "@effect/vitest"
import { type Identifier, Session, SessionMessages } from "@opencode-ai/schema"
import { Effect, Option, Schema } from "effect"
import { describe, expect } from "vitest"
import type { EventLog } from "../../src/event/event-log.js"
import { MessageProjection } from "../../src/session/message-projection.js"
import { RevertedMessages } from "../../src/session/reverted-messages.js"
import { Sessions } from "../../src/session/sessions.js"
import { PostgresServer } from "../../src/testing/postgres-server.js"
import { dialects, freshDatabase } from "../storage/dialects.js"

/**
 * The owners of tables `session` (Sessions), `message` (MessageProjection) and `session_revert`
 * (RevertedMessages), over SQLite and a real PostgreSQL: the same operations give the same answers.
 * Rows are written by the owners themselves (Sessions.insert, MessageProjection.apply with committed
 * envelopes), in one transaction as an append would.
 */

const model = { id: "qwen", providerID: "local" }
const tokens = { input: 1, output: 1, reasoning: 0, cache: { read: 0, write: 0 } }

const sessionInfo = (
  id: string,
  created: number,
  options: { parentID?: string; directory?: string } = {}
): Session.SessionV2Info => ({
  id: id as Identifier.SessionID,
  ...(options.parentID === undefined ? {} : { parentID: options.parentID as Identifier.SessionID }),
  projectID: "prj_root" as Session.SessionV2Info["projectID"],
  cost: 0,
  tokens: Session.emptyTokens,
  time: { created, updated: created },
  title: `${Sessions.defaultTitlePrefix}${id}`,
  location: { directory: options.directory ?? "/repo" }
})

/** Committed envelopes for `sessionID`, numbered from `seq`, at increasing timestamps from `at`. */
const envelopes = (
  sessionID: string,
  seq: number,
  at: number,
  events: ReadonlyArray<readonly [type: string, data: Record<string, unknown>]>
): ReadonlyArray<EventLog.Envelope> =>
  events.map(([type, data], index) => ({
    id: `evt_${sessionID}_${seq + index}` as EventLog.Envelope["id"],
    type,
    durable: { aggregateID: sessionID, seq: seq + index, version: 1 },
    data: { timestamp: at + index, sessionID, ...data }
  }))

const user = (messageID: string, text: string) =>
  ["session.next.prompted", { messageID, prompt: { text }, delivery: "steer" }] as const
const started = (assistantMessageID: string) =>
  ["session.next.step.started", { assistantMessageID, agent: "build", model }] as const
const ended = (assistantMessageID: string, finish: string) =>
  ["session.next.step.ended", { assistantMessageID, finish, cost: 0, tokens }] as const

describe.runIf(PostgresServer.testable())("session, message and session_revert owners", () => {
  layer(PostgresServer.layer(), { timeout: 120_000 })((it) => {
    for (const dialect of dialects) {
      it.scoped(`${dialect}: rows written and read by their owners, pages as stored JSON`, () =>
        Effect.gen(function* () {
          const database = yield* freshDatabase(dialect)
          yield* Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            // A parent, its child and grandchild, and an unrelated session elsewhere.
            const parent = sessionInfo("ses_c", 1000)
            const child = sessionInfo("ses_b", 1001, { parentID: "ses_c" })
            const grandchild = sessionInfo("ses_a", 1002, { parentID: "ses_b" })
            const other = sessionInfo("ses_d", 1003, { directory: "/elsewhere" })
            for (const info of [parent, child, grandchild, other]) {
              expect(yield* Sessions.insert(info, "default")).toBe(true)
            }
            expect(yield* Sessions.insert(parent, "default")).toBe(false)

            // Session ses_c: a prompt, a tool Step that finished with tool-calls, then an open Step.
            yield* MessageProjection.apply(
              envelopes("ses_c", 1, 2000, [
                user("msg_u1", "list the files"),
                started("msg_a1"),
                [
                  "session.next.tool.called",
                  {
                    assistantMessageID: "msg_a1",
                    callID: "call_1",
                    tool: "bash",
                    input: { command: "ls" },
                    provider: { executed: false }
                  }
                ],
                [
                  "session.next.tool.success",
                  {
                    assistantMessageID: "msg_a1",
                    callID: "call_1",
                    structured: {},
                    content: [],
                    outputPaths: ["/data/tool-output/one", "/data/tool-output/two"],
                    provider: { executed: false }
                  }
                ],
                ended("msg_a1", "tool-calls")
              ])
            ).pipe(sql.withTransaction)
            // Session ses_d ends with a finished text Step: nothing to continue.
            yield* MessageProjection.apply(
              envelopes("ses_d", 1, 3000, [user("msg_u2", "hello"), started("msg_a2"), ended("msg_a2", "stop")])
            ).pipe(sql.withTransaction)
            // Session ses_b: a prompt only (continues after a restart).
            yield* MessageProjection.apply(envelopes("ses_b", 1, 4000, [user("msg_u3", "go")])).pipe(
              sql.withTransaction
            )

            // The session row followed the projection: the first prompt named it.
            const stored = yield* Sessions.find(parent.id)
            expect(Option.map(stored, (info) => info.title)).toEqual(Option.some("list the files"))
            expect(yield* Sessions.exists(parent.id)).toBe(true)
            expect(yield* Sessions.exists("ses_missing" as Identifier.SessionID)).toBe(false)
            expect(yield* Sessions.projectOf(other.id)).toEqual(Option.some("prj_root"))

            // The tree walks parent_id, parents before children.
            expect((yield* Sessions.tree(parent.id)).map((info) => info.id)).toEqual(["ses_c", "ses_b", "ses_a"])
            expect(yield* Sessions.hasChildOutside([parent.id, child.id])).toBe(true)
            expect(yield* Sessions.hasChildOutside([parent.id, child.id, grandchild.id])).toBe(false)

            // Messages: lookups, tool output paths, settled columns.
            expect(yield* MessageProjection.exists("msg_a1" as Identifier.MessageID)).toBe(true)
            expect(yield* MessageProjection.exists("msg_none" as Identifier.MessageID)).toBe(false)
            const found = yield* MessageProjection.find(parent.id, "msg_a1" as Identifier.MessageID)
            expect(Option.map(found, (row) => [row.seq, row.message.type])).toEqual(Option.some([2, "assistant"]))
            expect(yield* MessageProjection.find(other.id, "msg_a1" as Identifier.MessageID)).toEqual(Option.none())
            expect([...(yield* MessageProjection.outputPaths([parent.id, other.id]))].sort()).toEqual([
              "/data/tool-output/one",
              "/data/tool-output/two"
            ])
            expect((yield* MessageProjection.assistantsFrom(parent.id, 1)).map((m) => m.id)).toEqual(["msg_a1"])
            // Recovery's reads: open Steps through the pending-work index, and the latest conversation message.
            yield* MessageProjection.apply(envelopes("ses_c", 6, 5000, [started("msg_a3")])).pipe(sql.withTransaction)
            expect(yield* MessageProjection.pendingWorkSessions()).toContain("ses_c")
            expect((yield* MessageProjection.openSteps(parent.id)).map(({ message }) => message.id)).toEqual(["msg_a3"])
            expect((yield* MessageProjection.lastConversation(parent.id))?.id).toBe("msg_a3")
            yield* MessageProjection.apply(
              envelopes("ses_c", 7, 6000, [
                [
                  "session.next.step.failed",
                  { assistantMessageID: "msg_a3", error: { type: "unknown", message: "stopped" } }
                ]
              ])
            ).pipe(sql.withTransaction)
            expect(yield* MessageProjection.openSteps(parent.id)).toEqual([])
            // A failed Step leaves nothing to continue.
            expect(yield* MessageProjection.pendingWorkSessions()).not.toContain("ses_c")
            // An interruption is recorded on the session row.
            yield* Sessions.markInterrupted(child.id, 4500)
            expect(yield* Sessions.interruptedAt(child.id)).toBe(4500)
            expect(yield* Sessions.interruptedAt(parent.id)).toBeUndefined()

            // Reverts: the range leaves Session History, not the transcript.
            yield* RevertedMessages.record({
              sessionID: parent.id,
              fromSeq: 6,
              toSeq: 7,
              messageID: "msg_a3" as Identifier.MessageID
            })
            expect(yield* RevertedMessages.isReverted(parent.id, 6)).toBe(true)
            expect(yield* RevertedMessages.isReverted(parent.id, 2)).toBe(false)
            expect((yield* MessageProjection.context(parent.id, 0)).map((m) => m.id)).toEqual(["msg_u1", "msg_a1"])

            // Message pages: stored JSON, keyset cursors both ways.
            const first = yield* MessageProjection.page({
              sessionID: parent.id,
              order: "asc",
              limit: 2,
              direction: "next"
            })
            expect(first.infos.map((info) => JSON.parse(info).id)).toEqual(["msg_u1", "msg_a1"])
            expect(first.previous).toBeUndefined()
            expect(first.next).toEqual({ seq: 2, id: "msg_a1" })
            const second = yield* MessageProjection.page({
              sessionID: parent.id,
              order: "asc",
              limit: 2,
              anchor: first.next,
              direction: "next"
            })
            expect(second.infos.map((info) => JSON.parse(info).id)).toEqual(["msg_a3"])
            expect(second.previous).toEqual({ seq: 6, id: "msg_a3" })
            expect(second.next).toBeUndefined()
            const back = yield* MessageProjection.page({
              sessionID: parent.id,
              order: "asc",
              limit: 2,
              anchor: second.previous,
              direction: "previous"
            })
            expect(back.infos.map((info) => JSON.parse(info).id)).toEqual(["msg_u1", "msg_a1"])
            expect(back.previous).toBeUndefined()
            expect(back.next).toEqual({ seq: 2, id: "msg_a1" })
            const past = yield* MessageProjection.page({
              sessionID: parent.id,
              order: "asc",
              limit: 2,
              anchor: { seq: 99, id: "msg_z" },
              direction: "next"
            })
            expect(past).toEqual({ infos: [], previous: { seq: 99, id: "msg_z" }, next: undefined })
            // Each stored JSON is the message's wire encoding.
            for (const info of first.infos) {
              const decoded = yield* MessageProjection.decodeInfo(info)
              expect(info).toBe(JSON.stringify(Schema.encodeSync(SessionMessages.SessionMessage)(decoded)))
            }

            // Session pages: newest first, with filters.
            const query = { order: "desc" as const, limit: 2 }
            const page1 = yield* Sessions.page({ query, direction: "next" })
            expect(page1.infos.map((info) => JSON.parse(info).id)).toEqual(["ses_d", "ses_a"])
            expect(page1.previous).toBeUndefined()
            expect(page1.next).toEqual({ time: 1002, id: "ses_a" })
            const page2 = yield* Sessions.page({ query, anchor: page1.next, direction: "next" })
            expect(page2.infos.map((info) => JSON.parse(info).id)).toEqual(["ses_b", "ses_c"])
            expect(page2.previous).toEqual({ time: 1001, id: "ses_b" })
            expect(page2.next).toBeUndefined()
            const page0 = yield* Sessions.page({ query, anchor: page2.previous, direction: "previous" })
            expect(page0.infos.map((info) => JSON.parse(info).id)).toEqual(["ses_d", "ses_a"])
            expect(page0.previous).toBeUndefined()
            expect(page0.next).toEqual({ time: 1002, id: "ses_a" })
            const filtered = yield* Sessions.page({
              query: { order: "asc", limit: 10, directory: "/repo", search: "list" },
              direction: "next"
            })
            expect(filtered.infos.map((info) => JSON.parse(info).id)).toEqual(["ses_c"])
            for (const info of page1.infos) {
              const decoded = Schema.decodeUnknownSync(Schema.parseJson(Session.SessionV2Info))(info)
              expect(info).toBe(JSON.stringify(Schema.encodeSync(Session.SessionV2Info)(decoded)))
            }

            // Deleting the rows takes the messages and reverts with them (foreign keys).
            expect([...(yield* Sessions.removeAll([parent.id, child.id, grandchild.id]))].sort()).toEqual([
              "ses_a",
              "ses_b",
              "ses_c"
            ])
            expect(yield* Sessions.removeAll([parent.id])).toEqual([])
            expect(yield* MessageProjection.exists("msg_a1" as Identifier.MessageID)).toBe(false)
            expect(yield* RevertedMessages.isReverted(parent.id, 6)).toBe(false)
            expect(yield* MessageProjection.exists("msg_u2" as Identifier.MessageID)).toBe(true)
          }).pipe(Effect.provide(database))
        })
      )

      it.scoped(`${dialect}: a record read again is the one its row holds now, however the row changed`, () =>
        Effect.gen(function* () {
          const database = yield* freshDatabase(dialect)
          yield* Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const info = sessionInfo("ses_m", 1000)
            yield* Sessions.insert(info, "default")
            const first = yield* Sessions.find(info.id)
            expect(first).toEqual(Option.some(info))
            // Unchanged JSON: the record decoded before is reused.
            expect(Option.getOrThrow(yield* Sessions.find(info.id))).toBe(Option.getOrThrow(first))

            // Stored by its owner: read back equal to what was stored.
            const renamed = { ...info, title: "renamed", time: { created: 1000, updated: 1001 } }
            yield* Sessions.store(renamed)
            expect(yield* Sessions.find(info.id)).toEqual(Option.some(renamed))

            // Changed behind the owner's back (another process, a raw statement): the new JSON is decoded.
            const elsewhere = { ...renamed, title: "elsewhere", cost: 2 }
            yield* sql`UPDATE session SET info = ${JSON.stringify(elsewhere)} WHERE id = ${info.id}`
            expect(yield* Sessions.find(info.id)).toEqual(Option.some(elsewhere))

            // A store whose transaction rolls back leaves the committed record as what is read.
            yield* Sessions.store({ ...elsewhere, title: "rolled back" }).pipe(
              Effect.zipRight(Effect.fail("abort")),
              sql.withTransaction,
              Effect.ignore
            )
            expect(yield* Sessions.find(info.id)).toEqual(Option.some(elsewhere))
          }).pipe(Effect.provide(database))
        })
      )
    }
  })
})
