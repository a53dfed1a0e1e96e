import * as fs from "node:fs"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { it } from "@effect/vitest"
import { Effect } from "effect"
import { expect } from "vitest"
import { migrationsDir, moduleFile, render } from "../../scripts/embed-migrations.js"
import { Database } from "../../src/storage/database.js"
import { Migrations } from "../../src/storage/migrations.js"
import { tempDir } from "../fixture.js"

const tables = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`
  return rows.map((row) => row.name)
})

it.scoped("creates the parent directory, migrates, and opens in WAL mode with busy_timeout and foreign keys", () =>
  Effect.gen(function* () {
    const filename = path.join(yield* tempDir, "nested", "dir", "opencode.db")
    const result = yield* Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const [journal] = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
      const [timeout] = yield* sql<{ timeout: number }>`PRAGMA busy_timeout`
      const [foreignKeys] = yield* sql<{ foreign_keys: number }>`PRAGMA foreign_keys`
      const applied = yield* sql<{
        migration_id: number
        name: string
      }>`SELECT migration_id, name FROM effect_sql_migrations`
      const indexes = yield* sql<{
        name: string
      }>`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'session' AND sql IS NOT NULL ORDER BY name`
      return { tables: yield* tables, journal, timeout, foreignKeys, applied, indexes: indexes.map((row) => row.name) }
    }).pipe(Effect.provide(Database.layer({ filename })))

    expect(fs.existsSync(filename)).toBe(true)
    expect(result.tables).toEqual(expect.arrayContaining(["event", "event_sequence", "session"]))
    expect(result.journal?.journal_mode).toBe("wal")
    expect(result.timeout?.timeout).toBe(5000)
    expect(result.foreignKeys?.foreign_keys).toBe(1)
    // drizzle-kit's 0000 is migration 1: Effect's Migrator would skip an id of 0.
    expect(result.applied).toEqual([
      { migration_id: 1, name: "init" },
      { migration_id: 2, name: "instructions" },
      { migration_id: 3, name: "messages_and_input" },
      { migration_id: 4, name: "permissions" },
      { migration_id: 5, name: "questions" },
      { migration_id: 6, name: "nested_instructions" },
      { migration_id: 7, name: "hosts" },
      { migration_id: 8, name: "interrupt_requests" },
      { migration_id: 9, name: "continuation" },
      { migration_id: 10, name: "revert" },
      { migration_id: 11, name: "title_source" },
      { migration_id: 12, name: "session_origin_seq" },
      { migration_id: 13, name: "records_recovery" },
      { migration_id: 14, name: "evlog_position" },
      { migration_id: 15, name: "session_parent" },
      { migration_id: 16, name: "message_context_reads" },
      { migration_id: 17, name: "session_list_order" }
    ])
    expect(result.indexes).toEqual([
      "session_directory_list_idx",
      "session_list_idx",
      "session_parent_id_idx",
      "session_project_list_idx"
    ])
  })
)

it.scoped("reopening a migrated file applies nothing twice and keeps the data", () =>
  Effect.gen(function* () {
    const filename = path.join(yield* tempDir, "opencode.db")
    yield* Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO event_sequence (aggregate_id, seq) VALUES ('kept', 3)`
    }).pipe(Effect.provide(Database.layer({ filename })))
    const [applied, kept] = yield* Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return [
        yield* sql<{ n: number }>`SELECT count(*) AS n FROM effect_sql_migrations`,
        yield* sql<{ seq: number }>`SELECT seq FROM event_sequence WHERE aggregate_id = 'kept'`
      ] as const
    }).pipe(Effect.provide(Database.layer({ filename })))
    expect(applied).toEqual([{ n: Migrations.all.length }])
    expect(kept).toEqual([{ seq: 3 }])
  })
)

it("the embedded migrations module matches migrations/ (regenerate with scripts/embed-migrations.ts)", () => {
  expect(fs.readFileSync(moduleFile, "utf8")).toBe(render(migrationsDir))
  const sqlFiles = fs.readdirSync(migrationsDir).filter((file) => file.endsWith(".sql"))
  expect(Migrations.all.map((migration) => `${migration.tag}.sql`)).toEqual(sqlFiles.sort())
})

it.scoped("a file one migration behind is migrated at the next open", () =>
  Effect.gen(function* () {
    const filename = path.join(yield* tempDir, "opencode.db")
    // The file as the build before `0016_session_list_order` left it: that migration's indexes
    // replaced by the ones it drops, and its row gone.
    yield* Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`DROP INDEX session_list_idx`
      yield* sql`DROP INDEX session_directory_list_idx`
      yield* sql`DROP INDEX session_project_list_idx`
      yield* sql`CREATE INDEX session_time_created_id_idx ON session (time_created, id)`
      yield* sql`CREATE INDEX session_directory_idx ON session (directory)`
      yield* sql`CREATE INDEX session_project_id_idx ON session (project_id)`
      yield* sql`DELETE FROM effect_sql_migrations WHERE migration_id = ${Migrations.all.length}`
    }).pipe(Effect.provide(Database.layer({ filename })))
    const [applied, indexes] = yield* Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return [
        yield* sql<{ n: number }>`SELECT count(*) AS n FROM effect_sql_migrations`,
        yield* sql<{
          name: string
        }>`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'session' AND sql IS NOT NULL ORDER BY name`
      ] as const
    }).pipe(Effect.provide(Database.layer({ filename })))
    expect(applied).toEqual([{ n: Migrations.all.length }])
    expect(indexes.map((row) => row.name)).toEqual([
      "session_directory_list_idx",
      "session_list_idx",
      "session_parent_id_idx",
      "session_project_list_idx"
    ])
  })
)
