export * as Database from "./database.js"

import * as fs from "node:fs"
import * as path from "node:path"
import { Migrator, SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { Migrations } from "./migrations.js"
import { SqliteConnection } from "./sqlite-connection.js"

export interface Options {
  /** The SQLite file; its parent directory is created when missing. */
  readonly filename: string
}

/** The SQL of one migration as statements: drizzle-kit separates them with breakpoint markers. */
const statements = (source: string): ReadonlyArray<string> =>
  source
    .split("--> statement-breakpoint")
    .map((statement) => statement.trim())
    .filter((statement) => statement.length > 0)

/**
 * The embedded migrations with the ids the Migrator records. drizzle-kit numbers from `0000`, but
 * Effect's Migrator treats id 0 as "nothing applied" and would skip it, so `0000_init` runs as `1_init`.
 */
const numbered = Migrations.all.map((migration) => {
  const [, number = "", name = ""] = /^(\d+)_(.+)$/.exec(migration.tag) ?? []
  return { id: Number(number) + 1, name, migration }
})

/** The embedded migrations as a Migrator loader. */
const loader = Migrator.fromRecord(
  Object.fromEntries(
    numbered.map(({ id, name, migration }) => {
      const run = Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        for (const statement of statements(migration.sql)) yield* sql.unsafe(statement)
      })
      return [`${id}_${name}`, run]
    })
  )
)

/** `@effect/sql`'s migrator, with no schema dumps (the only part of it that needs more than the client). */
const migrate = Migrator.make({})

/** The id the Migrator records for the last embedded migration (see {@link loader}). */
const latestId = Math.max(0, ...numbered.map(({ id }) => id))

/**
 * Whether the file already records {@link latestId} (or a later migration, from a newer build): then
 * the Migrator has nothing to apply, and a start skips it (its table check, its transaction and its
 * reads are most of what opening a migrated file cost). One synchronous read, outside a transaction:
 * a file that is not yet migrated still goes through the Migrator, which decides in its transaction.
 */
const migrated = (handle: SqliteConnection.Handle): boolean => {
  const table = handle
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'effect_sql_migrations'")
    .get()
  if (table === undefined) return false
  const row = handle.prepare("SELECT max(migration_id) AS id FROM effect_sql_migrations").get() as
    | { readonly id: number | null }
    | undefined
  return (row?.id ?? 0) >= latestId
}

/**
 * One SQLite database file (its connection: `SqliteConnection`), opened in WAL mode (synchronous NORMAL) with a 5 s busy timeout and
 * foreign keys on, and migrated to the latest embedded schema before the layer resolves (migrating
 * is idempotent: applied migrations are recorded and skipped, and a file that records the latest one
 * is not handed to the Migrator at all). A failing migration is a defect. Each call is a distinct
 * layer, so two databases never share a connection even in one memo map. Closing the layer's scope
 * closes the connection.
 *
 * One layer over one effect, not a graph of layers: it is built at every start.
 */
export const layer = (options: Options): Layer.Layer<SqlClient.SqlClient> =>
  Layer.scoped(
    SqlClient.SqlClient,
    Effect.gen(function* () {
      fs.mkdirSync(path.dirname(path.resolve(options.filename)), { recursive: true })
      const sql = yield* SqliteConnection.make({ filename: options.filename })
      const handle = SqliteConnection.handleOf(sql)
      if (handle === undefined) return yield* Effect.dieMessage("Database: the SQLite connection has no handle")
      // The connection already switches to WAL; the rest are per-connection settings. In WAL mode
      // NORMAL still commits atomically and survives a process crash; only a power loss can drop the
      // last commits. It saves an fsync per transaction.
      const upToDate = yield* handle.use(() => {
        for (const pragma of [
          "journal_mode = WAL",
          "busy_timeout = 5000",
          "synchronous = NORMAL",
          "foreign_keys = ON"
        ]) {
          // A pragma that sets a value may answer with it (a row), which `run` refuses.
          const statement = handle.prepare(`PRAGMA ${pragma}`)
          if (statement.reader) statement.get()
          else statement.run()
        }
        return migrated(handle)
      })
      if (!upToDate) yield* migrate({ loader }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      return sql
    })
  ).pipe(Layer.orDie)
