export * as PostgresDatabase from "./postgres-database.js"

import * as NodeContext from "@effect/platform-node/NodeContext"
import { type Migrator, SqlClient, SqlError } from "@effect/sql"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Duration, Effect, Layer, Redacted, type Scope, Stream } from "effect"
import Pg from "pg"
import { WallClock } from "../clock/wall-clock.js"
import { PostgresMigrations } from "./postgres-migrations.js"
import { PostgresPool } from "./postgres-pool.js"

/**
 * The driver's client service, for the modules that need it only over PostgreSQL (EventLog's and the
 * Live Relay's listeners): they import it from here, dynamically, so this module is the one way into
 * the driver and a host over SQLite never evaluates it.
 */
export { PgClient }

/**
 * Listens on `channel` while the scope is open, handing each payload to `onPayload` in arrival order
 * (in a fiber of the scope; the LISTEN is issued once that fiber starts). Every channel of one client
 * shares its single LISTEN connection. When the connection fails, the failure is logged as `what`
 * failing and the listen starts again a second later; notifications sent in between are lost, so a
 * listener that must not miss one has its own way to catch up (EventLog reads the log by seq).
 */
export const listenForever = (
  pg: PgClient.PgClient,
  channel: string,
  onPayload: (payload: string) => Effect.Effect<void>,
  what: string
): Effect.Effect<void, never, Scope.Scope> =>
  pg.listen(channel).pipe(
    Stream.runForEach(onPayload),
    Effect.catchAllCause((cause) => Effect.logWarning(`${what} failed`, cause)),
    Effect.zipRight(WallClock.sleep(Duration.seconds(1))),
    Effect.forever,
    Effect.forkScoped,
    Effect.asVoid
  )

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
 * The key of the session-level advisory lock held while migrating ("opencode" in ASCII). Advisory
 * locks belong to one database, so hosts on different databases of one server never wait on each other.
 */
export const migrationLockKey = "8029476032302982245"

/**
 * Runs `effect` while holding the migration advisory lock on its own connection (outside the pool, so
 * a pool of one connection still has it free for the migrator). A second process starting at the same
 * time waits for the lock, then finds every migration recorded and applies none. The lock goes with
 * the connection, so a process that dies while migrating releases it.
 */
const withMigrationLock = <A, E, R>(url: Redacted.Redacted<string>, effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.tryPromise({
      try: async () => {
        const client = new Pg.Client({ connectionString: Redacted.value(url), application_name: "opencode-migrate" })
        client.on("error", () => {})
        try {
          await client.connect()
          await client.query("SELECT pg_advisory_lock($1::bigint)", [migrationLockKey])
        } catch (error) {
          await client.end().catch(() => {})
          throw error
        }
        return client
      },
      catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to take the migration lock" })
    }),
    () => effect,
    (client) => Effect.promise(() => client.end().catch(() => {}))
  )

/**
 * Migrates the database of the `SqlClient` (at `url`) to the latest schema under the migration lock:
 * safe to run from any number of processes at once, each migration is applied once. Idempotent.
 */
export const migrate = (url: string | Redacted.Redacted<string>) =>
  withMigrationLock(typeof url === "string" ? Redacted.make(url) : url, PgMigrator.run({ loader }))

/**
 * A pool of connections to the PostgreSQL database at `url`, migrated to the latest schema before the
 * layer resolves. Migrating is idempotent (applied migrations are recorded in `effect_sql_migrations`
 * and skipped) and runs under a session-level advisory lock ({@link migrationLockKey}), so processes
 * starting together on an empty database migrate one after the other: the first applies every
 * migration, the others find them recorded. Fails with the driver's SqlError when the server cannot
 * be reached (or the credentials, the database... are refused), and with a MigrationError when a
 * migration fails. Closing the layer's scope ends the pool.
 */
export const layerFallible = (
  options: Options
): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient, SqlError.SqlError | Migrator.MigrationError> => {
  const url = typeof options.url === "string" ? Redacted.make(options.url) : options.url
  // The pool retires a connection whose statement was interrupted instead of cancelling it (PostgresPool).
  const connection = PgClient.layerFromPool({
    acquire: PostgresPool.make({ url, maxConnections: options.maxConnections, types }),
    types
  })
  return Layer.effectDiscard(migrate(url)).pipe(Layer.provideMerge(connection), Layer.provide(NodeContext.layer))
}

/** {@link layerFallible} with every failure to connect or migrate as a defect (tests, tools). */
export const layer = (options: Options): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient> =>
  Layer.orDie(layerFallible(options))
