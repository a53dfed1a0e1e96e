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
 * The embedded migrations as a Migrator loader. drizzle-kit numbers from `0000`, but Effect's
 * Migrator treats id 0 as "nothing applied" and would skip it, so `0000_init` runs as `1_init`.
 */
const loader = Migrator.fromRecord(
  Object.fromEntries(
    Migrations.all.map((migration) => {
      const [, number = "", name = ""] = /^(\d+)_(.+)$/.exec(migration.tag) ?? []
      const run = Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        for (const statement of statements(migration.sql)) yield* sql.unsafe(statement)
      })
      return [`${Number(number) + 1}_${name}`, run]
    })
  )
)

/** `@effect/sql`'s migrator, with no schema dumps (the only part of it that needs more than the client). */
const migrate = Migrator.make({})

/**
 * One SQLite database file (its connection: `SqliteConnection`), opened in WAL mode (synchronous NORMAL) with a 5 s busy timeout and
 * foreign keys on, and migrated to the latest embedded schema before the layer resolves (migrating
 * is idempotent: applied migrations are recorded and skipped). A failing migration is a defect. Each call is a distinct
 * layer, so two databases never share a connection even in one memo map. Closing the layer's scope
 * closes the connection.
 */
export const layer = (options: Options): Layer.Layer<SqlClient.SqlClient> => {
  const connection = Layer.unwrapEffect(
    Effect.sync(() => {
      fs.mkdirSync(path.dirname(path.resolve(options.filename)), { recursive: true })
      return SqliteConnection.layer({ filename: options.filename })
    })
  )
  const prepare = Layer.effectDiscard(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // The client already switches to WAL; the rest are per-connection settings.
      yield* sql`PRAGMA journal_mode = WAL`
      yield* sql`PRAGMA busy_timeout = 5000`
      // In WAL mode NORMAL still commits atomically and survives a process crash; only a power loss
      // can drop the last commits. It saves an fsync per transaction.
      yield* sql`PRAGMA synchronous = NORMAL`
      yield* sql`PRAGMA foreign_keys = ON`
      yield* migrate({ loader })
    })
  )
  return prepare.pipe(Layer.provideMerge(connection), Layer.orDie)
}
