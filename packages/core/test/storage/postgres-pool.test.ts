import { Reactivity } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Metric, Redacted, Scope } from "effect"
import { describe, expect } from "vitest"
import { RuntimeMetrics } from "../../src/observability/runtime-metrics.js"
import { PostgresPool } from "../../src/storage/postgres-pool.js"
import { PostgresServer } from "../../src/testing/postgres-server.js"

/*
 * The runtime's PostgreSQL pool against a real server: an interrupted statement's connection is
 * retired, so the cancel `@effect/sql-pg` would send for it can never fail another caller's statement.
 */

const startTimeout = 90_000

/** A client over the runtime's pool of `maxConnections` on a fresh database of `server`. */
const client = (server: PostgresServer.PostgresServer, maxConnections: number) =>
  Effect.gen(function* () {
    const url = yield* server.database()
    return yield* PgClient.fromPool({ acquire: PostgresPool.make({ url: Redacted.make(url), maxConnections }) })
  }).pipe(Effect.provide(Reactivity.layer))

const backendPid = (sql: PgClient.PgClient) =>
  Effect.map(sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`, (rows) => Number(rows[0]!.pid))

describe.runIf(PostgresServer.testable())("PostgresPool", () => {
  it.scopedLive(
    "an interrupted statement's connection is closed, not reused: the next statement runs on another backend, and the old one goes",
    () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.make()
        const sql = yield* client(server, 1)
        const before = yield* backendPid(sql)
        // A statement on the pool's only connection, interrupted while it runs.
        const slow = yield* Effect.fork(sql`SELECT pg_sleep(600), pg_backend_pid()`)
        yield* Effect.sleep("200 millis")
        yield* Fiber.interrupt(slow)
        const after = yield* backendPid(sql)
        expect(after).not.toBe(before)
        // The retired backend ends once it notices its connection closed; nothing cancelled it.
        const admin = yield* client(server, 1)
        let gone = false
        for (let i = 0; i < 200 && !gone; i++) {
          const rows = yield* admin<{
            n: number
          }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${before}`
          gone = rows[0]!.n === 0
          if (!gone) yield* Effect.sleep("100 millis")
        }
        expect(gone, `backend ${before} still runs the interrupted statement`).toBe(true)
      }),
    startTimeout
  )

  it.scopedLive(
    "a statement interrupted just before it ends never fails the statement that gets its connection next",
    () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.make()
        const sql = yield* client(server, 2)
        // Both connections busy: A's statement (ends at ~200 ms) and C's (ends at ~400 ms).
        const a = yield* Effect.fork(sql`SELECT pg_sleep(0.2)`)
        const c = yield* Effect.fork(sql`SELECT pg_sleep(0.4)`)
        yield* Effect.sleep("50 millis")
        // B waits for a connection: it gets A's when A's statement ends, and runs for a second on it.
        const b = yield* Effect.fork(Effect.exit(sql`SELECT pg_sleep(1)`))
        yield* Effect.sleep("50 millis")
        // A is interrupted before its statement ends. A cancel of A's backend would wait for C's
        // connection, and so reach that backend while B's statement runs there.
        yield* Fiber.interrupt(a)
        yield* Fiber.join(c)
        const exit = yield* Fiber.join(b)
        expect(Exit.isSuccess(exit) || String(Cause.squash(exit.cause))).toBe(true)
      }),
    startTimeout
  )

  it.scopedLive(
    "a transaction interrupted mid-statement is rolled back once its statement is cancelled, not when the statement would have ended",
    () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.make()
        const sql = yield* client(server, 1)
        yield* sql`CREATE TABLE note (body text)`
        const started = yield* Deferred.make<number>()
        // Without the cancel, the transaction's ROLLBACK waits behind pg_sleep(600), and so does the interrupt.
        const transaction = yield* Effect.fork(
          sql.withTransaction(
            Effect.gen(function* () {
              yield* sql`INSERT INTO note (body) VALUES ('uncommitted')`
              yield* Deferred.succeed(started, yield* backendPid(sql))
              yield* sql`SELECT pg_sleep(600)`
            })
          )
        )
        const pid = yield* Deferred.await(started)
        yield* Effect.sleep("200 millis")
        const cancelled = yield* Metric.value(RuntimeMetrics.dbStatementsCancelled)
        yield* Fiber.interrupt(transaction)
        expect((yield* Metric.value(RuntimeMetrics.dbStatementsCancelled)).count).toBe(cancelled.count + 1)
        // The insert was rolled back; the pool's next connection is another backend.
        expect(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM note`).toEqual([{ n: 0 }])
        expect(yield* backendPid(sql)).not.toBe(pid)
        const sleeping = yield* sql<{
          n: number
        }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid()`
        expect(sleeping).toEqual([{ n: 0 }])
      }),
    startTimeout
  )

  it.scopedLive(
    "statements sent at once on one reserved connection run in turn, each with its own answer, and the driver does not warn",
    () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.make()
        const sql = yield* client(server, 2)
        // The driver's deprecation warning for a statement queued behind another (as the cluster's
        // storage does with its lock connection) is emitted once per process, on the next tick.
        const warnings: Array<string> = []
        const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`)
        yield* Effect.acquireRelease(
          Effect.sync(() => process.on("warning", onWarning)),
          () => Effect.sync(() => process.off("warning", onWarning))
        )
        const connection = yield* sql.reserve
        const answers = yield* Effect.all(
          Array.from({ length: 6 }, (_, i) =>
            connection.executeValues(`SELECT $1::int AS n, pg_backend_pid(), pg_sleep(0.02)`, [i])
          ),
          { concurrency: "unbounded" }
        )
        expect(answers.map((rows) => Number(rows[0]![0]))).toEqual([0, 1, 2, 3, 4, 5])
        // All on the one connection.
        expect(new Set(answers.map((rows) => rows[0]![1])).size).toBe(1)
        yield* Effect.sleep("50 millis")
        expect(warnings).toEqual([])
      }),
    startTimeout
  )

  it.scoped("a server that cannot be reached is the driver's SqlError, not a hang", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const exit = yield* Effect.exit(
        PostgresPool.make({ url: Redacted.make("postgres://postgres@127.0.0.1:1/none") }).pipe(Scope.extend(scope))
      )
      yield* Scope.close(scope, Exit.void)
      expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain("PgClient: Failed to connect")
    })
  )
})
