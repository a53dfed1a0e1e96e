export * as PostgresPool from "./postgres-pool.js"

import { SqlError } from "@effect/sql"
import { Duration, Effect, Redacted, type Scope } from "effect"
import Pg from "pg"
import { RuntimeMetrics } from "../observability/runtime-metrics.js"

/**
 * The runtime's pool of PostgreSQL connections: the `pg` driver's pool, except in how an interrupted
 * statement is stopped.
 *
 * Why: `@effect/sql-pg` stops an interrupted statement with `SELECT pg_cancel_backend(<pid>)` sent
 * through the pool, and PostgreSQL cancels whatever that backend runs when the signal lands. When the
 * interrupted statement ends on its own first, its connection goes back to the pool (straight to the
 * next caller waiting for one, when the pool is busy) and the cancel fails that caller's statement
 * with `57014 canceling statement due to user request`: an unrelated request answered 500, or a
 * commit lost. Interruptions are ordinary here (the loser of a race, a timeout, a client gone).
 *
 * So, when the driver asks for that cancel:
 * - the interrupted statement's connection is retired: once its holder releases it, it is closed
 *   rather than reused, so no other caller's statement can ever run on that backend;
 * - the cancel goes out on a connection of its own (a full pool cannot hold it up), and the driver is
 *   answered at once: an interruption does not wait for it;
 * - a statement the holder sends on that connection meanwhile (a transaction's `ROLLBACK`) waits until
 *   the cancel has been delivered. PostgreSQL ignores a cancel that reaches a backend waiting for its
 *   next statement, so the cancel can stop only the interrupted statement, and the `ROLLBACK` runs as
 *   soon as it has (not once the statement would have ended: minutes, for a long one);
 * - if the connection is back in the pool already (its statement ended first), nothing is sent:
 *   nothing of the interrupted caller runs there any more.
 *
 * A backend whose cancel did not arrive (the server refused the extra connection) stops its statement
 * when it notices its connection closed ({@link connectionCheckMs}), or ends it on its own first.
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

/** How long (ms) a cancel may take to be delivered before the statements held behind it go ahead. */
const cancelTimeoutMs = 5000

class RetiringPool extends Pg.Pool {
  /** The connections handed out and not released yet, by backend pid. */
  private readonly out = new Map<number, Pg.PoolClient>()
  /** Connections handed out whose statement was interrupted: closed when released. */
  private readonly retiring = new Set<Pg.PoolClient>()
  /** Retiring connections whose cancel is on its way: their next statements wait for it. */
  private readonly cancelling = new Map<Pg.PoolClient, Promise<void>>()

  /** Connections that have had {@link connectionCheckMs} set and their `query` watched. */
  private readonly checked = new WeakSet<Pg.PoolClient>()

  constructor(private readonly config: Pg.PoolConfig) {
    super(config)
  }

  /** The driver's overloads, passed on unchanged. */
  override query(...args: Array<any>): any {
    const cancel = typeof args[0] === "string" ? cancelStatement.exec(args[0]) : null
    if (cancel === null) return super.query(...(args as Parameters<Pg.Pool["query"]>))
    const pid = Number(cancel[1])
    const client = this.out.get(pid)
    if (client !== undefined && !this.retiring.has(client)) {
      this.retiring.add(client)
      RuntimeMetrics.dbStatementsCancelled.unsafeUpdate(1, [])
      const delivered = this.cancel(pid).then(() => {
        this.cancelling.delete(client)
      })
      this.cancelling.set(client, delivered)
    }
    const callback = args.find((arg) => typeof arg === "function") as ((error: Error | null) => void) | undefined
    if (callback === undefined) return Promise.resolve({ rows: [], rowCount: 0 })
    queueMicrotask(() => callback(null))
  }

  /** Sends `pg_cancel_backend(pid)` on a connection of its own; settles when sent, failed or timed out. */
  private cancel(pid: number): Promise<void> {
    const canceller = new Pg.Client(this.config)
    canceller.on("error", () => {})
    const sent = canceller
      .connect()
      .then(() => canceller.query(`SELECT pg_cancel_backend(${pid})`))
      .then(
        () => undefined,
        () => undefined
      )
    let timer: ReturnType<typeof setTimeout> | undefined
    const timedOut = new Promise<void>((resolve) => {
      // Unreferenced: a cancel on its way never keeps a process from exiting.
      timer = setTimeout(resolve, cancelTimeoutMs).unref()
    })
    return Promise.race([sent, timedOut]).then(() => {
      clearTimeout(timer)
      canceller.end().catch(() => {})
    })
  }

  /**
   * Watches `client.query` (once per connection):
   * - statements sent while one runs wait their turn here, one after another, rather than in the
   *   driver's queue: the order and the answers are the same, but the driver warns (a deprecation,
   *   its queue goes in pg 9) once a statement waits behind another there. The cluster's storage
   *   sends its lock statements on one reserved connection from several fibers at once;
   * - while a cancel for its interrupted statement is on its way, the holder's next statements wait
   *   for it.
   * A Submittable (a cursor) is passed on at once: the driver queues it behind the running statement.
   */
  private watch(client: Pg.PoolClient) {
    const query = client.query
    /** Whether a statement was sent and is not answered yet; the statements waiting their turn. */
    let busy = false
    const turns: Array<() => void> = []
    const next = () => {
      const start = turns.shift()
      if (start === undefined) busy = false
      else start()
    }
    /** Sends `args` now, the connection busy until its answer (a callback's, or a promise's). */
    const send = (args: Array<any>): any => {
      busy = true
      const last = args.length - 1
      const callback = args[last]
      try {
        if (typeof callback !== "function") {
          const answered = query.apply(client, args as any) as unknown as Promise<unknown> | undefined
          // (A config object with a callback of its own returns nothing: its turn is not waited for.)
          if (answered === undefined) next()
          else answered.then(next, next)
          return answered
        }
        args[last] = (error: unknown, result: unknown) => {
          next()
          callback(error, result)
        }
        return query.apply(client, args as any)
      } catch (error) {
        next()
        throw error
      }
    }
    /** Sends `args` once the statements sent before it are answered. */
    const inTurn = (args: Array<any>): any => {
      if (!busy) return send(args)
      if (typeof args[args.length - 1] === "function") {
        turns.push(() => send(args))
        return undefined
      }
      return new Promise((resolve, reject) => turns.push(() => (send(args) as Promise<unknown>).then(resolve, reject)))
    }
    client.query = ((...args: Array<any>) => {
      if (typeof args[0]?.submit === "function") return query.apply(client, args as any)
      const pending = this.cancelling.get(client)
      if (pending === undefined) return inTurn(args)
      if (typeof args[args.length - 1] === "function") {
        void pending.then(() => inTurn(args))
        return undefined
      }
      return pending.then(() => inTurn(args))
    }) as typeof client.query
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
      this.watch(client)
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
