import { SqlClient } from "@effect/sql"
import { layer } from "@effect/vitest"
import { Identifier } from "@opencode-ai/schema"
import { Context, Effect, Fiber, Layer, Option, TestServices } from "effect"
import { describe, expect } from "vitest"
import { SessionLeases } from "../../src/runner/session-leases.js"
import { PostgresServer } from "../../src/testing/postgres-server.js"
import { freshDatabase } from "../storage/dialects.js"

/**
 * How a host that holds a session learns that another host asked for an interrupt: over PostgreSQL
 * at once (`interruptRequested`, a notification sent as the request commits), over SQLite only by
 * looking (`interruptRequests`, which SessionRunner does every 250 ms).
 */
describe("SessionLeases.interruptRequested", () => {
  layer(PostgresServer.layer(), { timeout: 120_000 })((it) => {
    for (const dialect of ["postgres", "sqlite"] as const) {
      it.scoped(
        `${dialect}: a request recorded by another host ${dialect === "postgres" ? "wakes the holder, and only it" : "is found by looking"}`,
        () =>
          Effect.gen(function* () {
            const database = yield* Layer.build(yield* freshDatabase(dialect))
            const sql = Context.get(database, SqlClient.SqlClient)
            // Hosts whose own heartbeats and looks are an hour apart: only the signal can be quick.
            const host = Effect.map(
              Layer.build(
                SessionLeases.layer({ heartbeatMs: 3_600_000 }).pipe(Layer.provide(Layer.succeedContext(database)))
              ),
              (context) => Context.get(context, SessionLeases.Service)
            )
            const [a, b, bystander] = yield* Effect.all([host, host, host])
            const sessionID = Identifier.newSessionID()
            yield* sql`INSERT INTO session (id, project_id, directory, title, time_created, time_updated, info)
              VALUES (${sessionID}, 'global', '/tmp', 'x', 1, 1, '{}')`
            expect((yield* a.claim(sessionID))._tag).toBe("Claimed")

            const woken = yield* Effect.fork(a.interruptRequested.sleep(3_600_000))
            const elsewhere = yield* Effect.fork(bystander.interruptRequested.sleep(3_600_000))
            yield* b.requestInterrupt(sessionID)
            if (dialect === "postgres") {
              // (The listen starts in the background: a request sent before it is in place is asked again.)
              yield* Effect.raceFirst(
                Fiber.join(woken),
                Effect.forever(Effect.zipRight(Effect.sleep("500 millis"), b.requestInterrupt(sessionID)))
              )
            } else {
              // Nothing tells the holder over SQLite: it finds the request when it looks.
              yield* Effect.sleep("300 millis")
              expect(Option.isNone(yield* Fiber.poll(woken))).toBe(true)
            }
            expect(yield* a.interruptRequests).toEqual([sessionID])
            // The request named A only: the other listening host was not woken.
            yield* Effect.sleep("300 millis")
            expect(Option.isNone(yield* Fiber.poll(elsewhere))).toBe(true)
          }).pipe(TestServices.provideLive),
        60_000
      )
    }
  })
})
