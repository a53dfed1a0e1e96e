export * as PostgresDatabase from "./postgres-database.js"

import * as NodeContext from "@effect/platform-node/NodeContext"
import { SqlClient } from "@effect/sql"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import Pg from "pg"
import { PostgresMigrations } from "./postgres-migrations.js"

export interface Options {
  /** `postgres://user:password@host:port/database` (and the `pg` driver's query parameters, e.g. `sslmode`). */
  readonly url: string | Redacted.Redacted<string>
  /**
   * The pool's size; default 10. Session placement on `@effect/cluster` holds one pooled connection
   * for its shard locks and `listen` takes its own, so it needs at least 3.
   */
  readonly maxConnections?: number
}

/** PostgreSQL's type id of `bigint` (`int8`). */
const int8 = 20

/**
 * The driver's parsers, except that `bigint` becomes a JS number (the driver's default is a string),
 * so rows read the same as from SQLite. Every `bigint` column holds milliseconds, seqs, counters or
 * pids, all far below 2^53. `numeric` (e.g. `sum()` of a `bigint`) stays a string.
 */
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === int8 && format !== "binary"
      ? (value: string) => Number(value)
      : Pg.types.getTypeParser(oid, format as "text")) as typeof Pg.types.getTypeParser
}

/**
 * The PostgreSQL migrations as a Migrator loader, with the same ids and names as the SQLite ones
 * (`Database`): the migration tagged `0000_init` is id 1 (the Migrator treats 0 as "none applied").
 */
export const loader = PgMigrator.fromRecord(
  Object.fromEntries(
    PostgresMigrations.all.map((migration) => {
      const [, number = "", name = ""] = /^(\d+)_(.+)$/.exec(migration.tag) ?? []
      const run = Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        for (const statement of migration.statements) yield* sql.unsafe(statement)
      })
      return [`${Number(number) + 1}_${name}`, run]
    })
  )
)

/**
 * A pool of connections to the PostgreSQL database at `url`, migrated to the latest schema before the
 * layer resolves. Migrating is idempotent (applied migrations are recorded in `effect_sql_migrations`
 * and skipped) and runs in one transaction that locks that table, so processes starting together
 * apply each migration once; the first start on an empty database can still race on creating that
 * table, so start one process first. A database that cannot be reached or migrated is a defect.
 * Closing the layer's scope ends the pool.
 */
export const layer = (options: Options): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient> => {
  const connection = PgClient.layer({
    url: typeof options.url === "string" ? Redacted.make(options.url) : options.url,
    types,
    ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections })
  })
  const migrate = Layer.effectDiscard(PgMigrator.run({ loader }))
  return migrate.pipe(Layer.provideMerge(connection), Layer.provide(NodeContext.layer), Layer.orDie)
}
