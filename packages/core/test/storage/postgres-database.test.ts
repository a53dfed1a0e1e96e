import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { layer } from "@effect/vitest"
import { Chunk, Context, Deferred, Effect, Fiber, Layer, Stream, TestServices } from "effect"
import { describe, expect } from "vitest"
import { PostgresDatabase } from "../../src/storage/postgres-database.js"
import { PostgresServer } from "../../src/testing/postgres-server.js"

describe.runIf(PostgresServer.testable())("PostgresDatabase over a real PostgreSQL server", () => {
  layer(PostgresServer.layer(), { timeout: 90_000 })((it) => {
    it.scoped("a commit on one pool is announced with pg_notify to a listener on another (two hosts)", () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.Service
        const url = yield* server.database()
        // Two pools, as two hosts would have; each lives as long as the test's scope.
        const listener = Context.get(yield* Layer.build(PostgresDatabase.layer({ url })), PgClient.PgClient)
        const writer = Context.get(yield* Layer.build(PostgresDatabase.layer({ url })), SqlClient.SqlClient)

        const listening = yield* Deferred.make<void>()
        const received = yield* listener.listen("event_committed").pipe(
          Stream.tap((payload) => (payload === "ready" ? Deferred.succeed(listening, undefined) : Effect.void)),
          Stream.filter((payload) => payload !== "ready"),
          Stream.take(2),
          Stream.runCollect,
          Effect.fork
        )
        // LISTEN runs on the listener's own connection some time after the fork: announce until it hears.
        while (!(yield* Deferred.isDone(listening))) {
          yield* writer`SELECT pg_notify('event_committed', 'ready')`
          yield* TestServices.provideLive(Effect.sleep("50 millis"))
        }

        // The payload carries the aggregate and the seq, never the event: a follower reads the rows.
        yield* writer.withTransaction(
          Effect.gen(function* () {
            yield* writer`INSERT INTO event_sequence (aggregate_id, seq) VALUES ('ses_1', 1)`
            yield* writer`SELECT pg_notify('event_committed', ${JSON.stringify({ aggregate: "ses_1", seq: 1 })})`
          })
        )
        // A notification of a transaction that rolls back is never delivered.
        yield* writer
          .withTransaction(
            Effect.gen(function* () {
              yield* writer`SELECT pg_notify('event_committed', ${JSON.stringify({ aggregate: "ses_x", seq: 9 })})`
              return yield* Effect.fail("rolled back")
            })
          )
          .pipe(Effect.ignore)
        yield* writer`SELECT pg_notify('event_committed', ${JSON.stringify({ aggregate: "ses_1", seq: 2 })})`

        const payloads = Chunk.toReadonlyArray(yield* Fiber.join(received)).map((p) => JSON.parse(p))
        expect(payloads).toEqual([
          { aggregate: "ses_1", seq: 1 },
          { aggregate: "ses_1", seq: 2 }
        ])
        const [row] = yield* writer<{ seq: number }>`SELECT seq FROM event_sequence WHERE aggregate_id = 'ses_1'`
        expect(row?.seq).toBe(1)
      })
    )
  })
})
