import * as net from "node:net"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { it } from "@effect/vitest"
import type { Identifier } from "@opencode-ai/schema"
import { Effect, Fiber, Layer, Option } from "effect"
import { describe, expect } from "vitest"
import { Config } from "../../src/config/config.js"
import { Core } from "../../src/core.js"
import { EventLog } from "../../src/event/event-log.js"
import { SessionInput } from "../../src/input/session-input.js"
import { Locations } from "../../src/location/locations.js"
import { ClusterRunner } from "../../src/runner/cluster-runner.js"
import { SessionLeases } from "../../src/runner/session-leases.js"
import { SessionRunner } from "../../src/runner/session-runner.js"
import { Sessions } from "../../src/session/sessions.js"
import { LLMScript, ScriptedLLMServer } from "../../src/testing/index.js"
import { tempDir } from "../fixture.js"

/** A loopback port nothing listens on now. */
const freePort = Effect.promise(
  () =>
    new Promise<number>((resolve, reject) => {
      const server = net.createServer()
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as net.AddressInfo
        server.close(() => resolve(port))
      })
    })
)

type Run = <A, E>(effect: Effect.Effect<A, E, Core.Services>) => Effect.Effect<A, E>

/** Runners over one SQLite file in this process (each Core a runner at its own loopback port), one LLM server. */
const cluster = Effect.gen(function* () {
  const dir = yield* tempDir
  const server = yield* ScriptedLLMServer.make()
  const runner = Effect.gen(function* () {
    const address = { host: "127.0.0.1", port: yield* freePort }
    const context = yield* Layer.build(
      Core.layer({
        databaseFile: path.join(dir, "opencode.db"),
        directory: dir,
        configDir: path.join(dir, "config"),
        env: {},
        config: Config.layerTest(ScriptedLLMServer.config(server.url)),
        runner: { address, refreshMs: 200, expiryMs: 1_000, healthCheckMs: 200 }
      })
    )
    const run: Run = (effect) => Effect.provide(effect, context)
    return { address: ClusterRunner.addressText(address), run }
  })
  return { dir, server, runner }
})

const sessionOn = (run: Run, dir: string) =>
  run(
    Effect.gen(function* () {
      const location = yield* Effect.flatMap(Locations.Service, (locations) => locations.resolve({ directory: dir }))
      return (yield* Effect.flatMap(Sessions.Service, (sessions) => sessions.create({ location }))).id
    })
  )

const prompt = (run: Run, sessionID: Identifier.SessionID, text: string) =>
  run(
    Effect.flatMap(SessionInput.Service, (input) =>
      input.admit(sessionID, { prompt: { text }, delivery: "queue" })
    ).pipe(Effect.zipRight(Effect.flatMap(SessionRunner.Service, (runner) => runner.wake(sessionID))))
  )

const lockRows = (run: Run) =>
  run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{
          readonly address: string
          readonly n: number
        }>`SELECT address, COUNT(*) AS n FROM cluster_locks GROUP BY address`
    ).pipe(Effect.orDie)
  )

const holderOf = (run: Run, sessionID: string) =>
  run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ readonly host_id: string }>`SELECT host_id FROM session_lease WHERE session_id = ${sessionID}`
    ).pipe(
      Effect.orDie,
      Effect.map((rows) => rows[0]?.host_id)
    )
  )

/** Waits (polling, real time) until `check` holds; the test's own timeout bounds it. */
const eventually = <E, R>(check: Effect.Effect<boolean, E, R>): Effect.Effect<void, E, R> =>
  Effect.flatMap(check, (ok) => (ok ? Effect.void : Effect.zipRight(Effect.sleep("50 millis"), eventually(check))))

/** Whether the session is placed on this runner: its claim succeeds there (and is given back). */
const placedOn = (run: Run, sessionID: Identifier.SessionID) =>
  run(
    Effect.flatMap(SessionLeases.Service, (leases) =>
      Effect.flatMap(leases.claim(sessionID), (claim) =>
        claim._tag === "Claimed" ? Effect.as(leases.release(sessionID), true) : Effect.succeed(false)
      )
    )
  )

describe("cluster placement", () => {
  it.scopedLive(
    "one runner takes every shard and runs sessions; the lease names its address while it drives one",
    () =>
      Effect.gen(function* () {
        const t = yield* cluster
        const a = yield* t.runner
        yield* eventually(Effect.map(lockRows(a.run), (rows) => rows.length === 1 && rows[0]!.n === 300))
        expect((yield* lockRows(a.run))[0]!.address).toBe(a.address)
        expect(yield* a.run(Effect.map(SessionLeases.Service, (leases) => leases.host))).toBe(a.address)

        const sessionID = yield* sessionOn(a.run, t.dir)
        const held = LLMScript.gate()
        yield* t.server.enqueue(LLMScript.reply(LLMScript.text("hi"), LLMScript.hold(held), LLMScript.finish("stop")))
        yield* prompt(a.run, sessionID, "hello")
        yield* held.reached
        expect(yield* holderOf(a.run, sessionID)).toBe(a.address)
        yield* held.release
        yield* a.run(Effect.flatMap(SessionRunner.Service, (runner) => runner.wait(sessionID)))
        expect(yield* holderOf(a.run, sessionID)).toBeUndefined()
        const events = yield* a.run(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)))
        expect(events.filter((e) => e.type === "session.next.step.ended")).toHaveLength(1)
      }),
    60_000
  )

  it.scopedLive(
    "two runners share the shards; a session runs on its shard's runner wherever it was prompted, and wait and interrupt reach it",
    () =>
      Effect.gen(function* () {
        const t = yield* cluster
        const a = yield* t.runner
        const b = yield* t.runner
        yield* eventually(
          Effect.map(
            lockRows(a.run),
            (rows) =>
              rows.length === 2 && rows.every((row) => row.n > 0) && rows.reduce((n, row) => n + row.n, 0) === 300
          )
        )
        // A session placed on B, created and prompted through A.
        let sessionID: Identifier.SessionID | undefined
        while (sessionID === undefined) {
          const candidate = yield* sessionOn(a.run, t.dir)
          if (yield* placedOn(b.run, candidate)) sessionID = candidate
        }
        expect(yield* placedOn(a.run, sessionID)).toBe(false)

        const held = LLMScript.gate()
        yield* t.server.enqueue(LLMScript.reply(LLMScript.text("slow"), LLMScript.hold(held), LLMScript.finish("stop")))
        yield* prompt(a.run, sessionID, "run where you are placed")
        yield* held.reached
        expect(yield* holderOf(a.run, sessionID)).toBe(b.address)
        expect(yield* a.run(Effect.flatMap(SessionRunner.Service, (runner) => runner.active))).toEqual({})
        expect(Object.keys(yield* b.run(Effect.flatMap(SessionRunner.Service, (runner) => runner.active)))).toEqual([
          sessionID
        ])
        // A wait through A follows B's drain.
        const waiting = yield* Effect.fork(
          a.run(Effect.flatMap(SessionRunner.Service, (runner) => runner.wait(sessionID!)))
        )
        yield* Effect.sleep("200 millis")
        expect(yield* Fiber.poll(waiting)).toEqual(Option.none())
        // An interrupt through A stops B's Step; the wait then ends.
        yield* a.run(Effect.flatMap(SessionRunner.Service, (runner) => runner.interrupt(sessionID!))).pipe(Effect.orDie)
        yield* Fiber.join(waiting).pipe(Effect.orDie)
        expect(yield* holderOf(a.run, sessionID)).toBeUndefined()
        const events = yield* a.run(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID!)))
        expect(
          events.filter((e) => e.type === "session.next.step.ended" || e.type === "session.next.step.failed").length
        ).toBe(1)
        yield* held.release
      }),
    60_000
  )
})
