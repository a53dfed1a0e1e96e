export * as PostgresPool from "./postgres-pool.js"

import { SqlError } from "@effect/sql"
import { Duration, Effect, Redacted, type Scope } from "effect"
import Pg from "pg"

/**
 * The runtime's pool of PostgreSQL connections: the `pg` driver's pool, except that a statement that
 * is interrupted is never cancelled on the server; its connection is retired instead.
 *
 * Why: `@effect/sql-pg` stops an interrupted statement with `SELECT pg_cancel_backend(<pid>)` on
 * another connection, and PostgreSQL cancels whatever that backend runs when the signal lands. When
 * the interrupted statement ends on its own first, its connection goes back to the pool (straight to
 * the next caller waiting for one, when the pool is busy) and the cancel fails that caller's
 * statement with `57014 canceling statement due to user request`: an unrelated request answered 500,
 * or a commit lost. Interruptions are ordinary here (the loser of a race, a timeout, a client gone).
 *
 * So the pool answers such a cancel at once without sending it, and the interrupted statement's
 * connection, once its holder releases it, is closed rather than reused: no later statement can run
 * on that backend. The statement itself ends on the server when the backend notices its connection
 * closed ({@link connectionCheckMs}), or on its own first; the pool opens a new connection when it
 * needs one. A connection already back in the pool when the cancel comes (its statement ended first) is
 * left alone: nothing of the interrupted caller runs there any more.
 */

/** The statement `@effect/sql-pg` sends to cancel a statement (PgClient's `makeCancel`). */
const cancelStatement = /^SELECT pg_cancel_backend\((\d+)\)$/

/** The backend pid of a connection (the driver's `processID`, known once it has connected). */
const pidOf = (client: Pg.PoolClient): number | undefined => (client as { processID?: number }).processID

/**
 * How often (ms) a backend running a statement checks that its connection is still open (PostgreSQL
 * 14 and later; older servers refuse the setting, which is then left out): a retired connection's
 * statement, a lock wait included, ends within about this long.
 */
const connectionCheckMs = 1000

class RetiringPool extends Pg.Pool {
  /** The connections handed out and not released yet, by backend pid. */
  private readonly out = new Map<number, Pg.PoolClient>()
  /** Connections handed out whose statement was interrupted: closed when released. */
  private readonly retiring = new Set<Pg.PoolClient>()

  /** Connections that have had {@link connectionCheckMs} set (before their first statement). */
  private readonly checked = new WeakSet<Pg.PoolClient>()

  /** The driver's overloads, passed on unchanged. */
  override query(...args: Array<any>): any {
    const cancel = typeof args[0] === "string" ? cancelStatement.exec(args[0]) : null
    if (cancel === null) return super.query(...(args as Parameters<Pg.Pool["query"]>))
    const client = this.out.get(Number(cancel[1]))
    if (client !== undefined) this.retiring.add(client)
    const callback = args.find((arg) => typeof arg === "function") as ((error: Error | null) => void) | undefined
    if (callback === undefined) return Promise.resolve({ rows: [], rowCount: 0 })
    queueMicrotask(() => callback(null))
  }

  /** The driver's overloads, passed on unchanged. */
  override connect(callback?: any): any {
    if (callback === undefined) {
      return new Promise<Pg.PoolClient>((resolve, reject) =>
        this.connect((error: Error | undefined, client: Pg.PoolClient) => (error ? reject(error) : resolve(client)))
      )
    }
    super.connect((error, client, done) => {
      if (error || client === undefined) return callback(error, client, done)
      if (this.checked.has(client)) return this.handOut(client, callback)
      this.checked.add(client)
      // Set before the caller's first statement, not queued beside it; refused by older servers.
      client.query(`SET client_connection_check_interval = ${connectionCheckMs}`, () => this.handOut(client, callback))
    })
  }

  /** Gives `client` to `callback`, watched: retired on release if its statement was interrupted. */
  private handOut(client: Pg.PoolClient, callback: (...args: Array<any>) => void) {
    const pid = pidOf(client)
    if (pid !== undefined) this.out.set(pid, client)
    const release = client.release
    client.release = (failure?: Error | boolean) => {
      if (pid !== undefined && this.out.get(pid) === client) this.out.delete(pid)
      const retire = this.retiring.delete(client)
      release(failure || retire || undefined)
    }
    callback(undefined, client, client.release)
  }
}

export interface Options {
  readonly url: Redacted.Redacted<string>
  /** Default 10. */
  readonly maxConnections?: number | undefined
  readonly types?: Pg.CustomTypesConfig | undefined
}

/**
 * A pool for `url`, checked with `SELECT 1` (failing with the driver's SqlError when the server cannot
 * be reached in 5 s, as `PgClient.make` does) and ended when the scope closes.
 */
export const make = (options: Options): Effect.Effect<Pg.Pool, SqlError.SqlError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const pool = new RetiringPool({
        connectionString: Redacted.value(options.url),
        max: options.maxConnections,
        application_name: "opencode",
        ...(options.types === undefined ? {} : { types: options.types })
      })
      // A connection that fails while idle is dropped by the pool; its statements report their own errors.
      pool.on("error", () => {})
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  ).pipe(
    Effect.tap((pool) =>
      Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(
        Effect.timeoutFail({
          duration: Duration.seconds(5),
          onTimeout: () =>
            new SqlError.SqlError({
              cause: new Error("Connection timed out"),
              message: "PgClient: Connection timed out"
            })
        })
      )
    )
  )
