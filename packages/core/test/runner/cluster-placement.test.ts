import * as fs from "node:fs"
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
import { RunnerOptions } from "../../src/runner/runner-options.js"
import { SessionLeases } from "../../src/runner/session-leases.js"
import { SessionRunner } from "../../src/runner/session-runner.js"
import { Sessions } from "../../src/session/sessions.js"
import { FreePort, LLMScript, ScriptedLLMServer } from "../../src/testing/index.js"
import { tempDir } from "../fixture.js"

type Run = <A, E>(effect: Effect.Effect<A, E, Core.Services>) => Effect.Effect<A, E>

/**
 * Runners over one SQLite file in this process (each Core a runner at its own loopback port), one LLM
 * server. Sessions live in `project`, apart from the database, so a Step's snapshot does not hash the
 * database file that every commit changes.
 */
const cluster = (options?: ScriptedLLMServer.Options) =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    const project = path.join(dir, "project")
    fs.mkdirSync(project)
    const server = yield* ScriptedLLMServer.make(options)
    const runner = Effect.gen(function* () {
      const address = { host: "127.0.0.1", port: yield* Effect.promise(FreePort.loopback) }
      const context = yield* Layer.build(
        Core.layer({
          databaseFile: path.join(dir, "opencode.db"),
          directory: dir,
          configDir: path.join(dir, "config"),
          env: {},
          config: Config.layerTest(ScriptedLLMServer.config(server.url)),
          runner: { address, refreshMs: 500, expiryMs: 3_000, healthCheckMs: 500 }
        })
      )
      const run: Run = (effect) => Effect.provide(effect, context)
      return { address: RunnerOptions.addressText(address), run }
    })
    /** A host over the same file placing sessions by first-come leases (no runner). */
    const leaseHost = Layer.build(
      Core.layer({
        databaseFile: path.join(dir, "opencode.db"),
        directory: dir,
        configDir: path.join(dir, "config"),
        env: {},
        config: Config.layerTest(ScriptedLLMServer.config(server.url))
      })
    )
    return { project, server, runner, leaseHost }
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

/** Runner A alone with every shard, and `count` new sessions on it, the i-th prompted with `text(i)`. */
const promptedOnA = (
  t: Effect.Effect.Success<ReturnType<typeof cluster>>,
  count: number,
  text: (i: number) => string
) =>
  Effect.gen(function* () {
    const a = yield* t.runner
    yield* eventually(Effect.map(lockRows(a.run), (rows) => rows.length === 1 && rows[0]!.n === 300))
    const sessions: Array<Identifier.SessionID> = []
    for (let i = 0; i < count; i++) {
      const sessionID = yield* sessionOn(a.run, t.project)
      sessions.push(sessionID)
      yield* prompt(a.run, sessionID, text(i))
    }
    return { a, sessions }
  })

/** How many prompts, Step starts, ends and failures the session's durable log holds, and its event types. */
const stepCounts = (run: Run, sessionID: Identifier.SessionID) =>
  Effect.map(run(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID))), (events) => {
    const types = events.map((event) => event.type)
    const count = (type: string) => types.filter((each) => each === type).length
    return {
      types,
      counts: {
        prompted: count("session.next.prompted"),
        started: count("session.next.step.started"),
        ended: count("session.next.step.ended"),
        failed: count("session.next.step.failed")
      }
    }
  })

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

/**
 * Sixteen sessions mid-Step on runner A, each with a second prompt queued; then (with `lapse`) A's
 * lock storage fails and recovers while the Steps run, so the cluster drops every shard and A takes
 * them all again; then runner B joins. The shards that move go to B at once, while A still runs
 * their sessions' Steps under their leases: every first Step ends on A, and every second prompt runs
 * where its session is placed now.
 */
const joinMidStep = (lapse: boolean) =>
  Effect.gen(function* () {
    const first = new Map<string, LLMScript.Gate>()
    const second = new Map<string, LLMScript.Gate>()
    const t = yield* cluster({
      // Each session's first and second prompts hold after a chunk, until released.
      respond: (request) => {
        const sent = JSON.stringify(request.body)
        const after = /after-(\d+)/.exec(sent)
        const gates = after === null ? first : second
        const match = after ?? /hold-(\d+)/.exec(sent)
        if (match === null) return undefined
        const held = LLMScript.gate()
        gates.set(match[1]!, held)
        return LLMScript.reply(LLMScript.text("partial"), LLMScript.hold(held), LLMScript.finish("stop"))
      },
      title: () => LLMScript.reply(LLMScript.text("A title"), LLMScript.finish("stop"))
    })
    // 16 sessions on A alone, each mid-Step with a second prompt queued behind it.
    const { a, sessions } = yield* promptedOnA(t, 16, (i) => `hold-${i}`)
    yield* eventually(Effect.sync(() => first.size === 16 && [...first.values()].every((held) => held.isReached)))
    for (const [i, sessionID] of sessions.entries()) yield* prompt(a.run, sessionID, `after-${i}`)

    if (lapse) {
      // A's lock refresh is refused (its UPDATE fails): the cluster takes the lock storage for
      // unhealthy, interrupts the entity's messages and gives every shard up; once
      // the storage answers again it deletes its lock rows (counted here) and takes every shard back
      // while the Steps still run.
      const execute = (statement: string) =>
        a.run(
          Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<{ readonly n: number }>(statement)).pipe(Effect.orDie)
        )
      yield* execute("CREATE TABLE lapsed (shard_id TEXT)")
      yield* execute(
        "CREATE TRIGGER lapsed AFTER DELETE ON cluster_locks BEGIN INSERT INTO lapsed VALUES (old.shard_id); END"
      )
      yield* execute(
        "CREATE TRIGGER lapse BEFORE UPDATE ON cluster_locks BEGIN SELECT RAISE(ABORT, 'lock storage down'); END"
      )
      yield* eventually(Effect.map(execute("SELECT COUNT(*) AS n FROM lapsed"), (rows) => rows[0]!.n >= 300))
      yield* execute("DROP TRIGGER lapse")
      yield* execute("DROP TRIGGER lapsed")
      yield* eventually(Effect.map(lockRows(a.run), (rows) => rows.length === 1 && rows[0]!.n === 300))
    }

    // B joins: the shards assigned to it leave A at once, running Steps or not. Some of the sixteen
    // sessions are placed on B while A still runs their Steps (their leases name A): a handover does
    // not wait for a drain.
    const b = yield* t.runner
    const placedOnB = (sessionID: Identifier.SessionID) =>
      b.run(Effect.map(SessionLeases.Service, (leases) => leases.placedHere(sessionID)))
    yield* eventually(Effect.map(Effect.forEach(sessions, placedOnB), (placed) => placed.some((here) => here)))
    for (const sessionID of sessions) expect(yield* holderOf(a.run, sessionID)).toBe(a.address)

    // The first Steps end: each second prompt runs where its session is placed now, on B for
    // the sessions whose shard moved (out of 16, none or all on B's half would be a 1 in 32,768 draw).
    for (const held of first.values()) yield* held.release
    yield* eventually(Effect.sync(() => second.size === 16 && [...second.values()].every((held) => held.isReached)))
    const holders = yield* Effect.forEach(sessions, (sessionID) => holderOf(a.run, sessionID))
    const moving = sessions.filter((_, i) => holders[i] === b.address)
    expect(moving.length).toBeGreaterThan(0)
    expect(holders.filter((holder) => holder === a.address).length).toBeGreaterThan(0)
    expect(holders.every((holder) => holder === a.address || holder === b.address)).toBe(true)
    for (const held of second.values()) yield* held.release
    for (const sessionID of sessions) {
      yield* a.run(Effect.flatMap(SessionRunner.Service, (runner) => runner.wait(sessionID))).pipe(Effect.orDie)
      yield* b.run(Effect.flatMap(SessionRunner.Service, (runner) => runner.wait(sessionID))).pipe(Effect.orDie)
      const { types, counts } = yield* stepCounts(a.run, sessionID)
      const context = `${sessionID} (${moving.includes(sessionID) ? "moved" : "stayed"}): ${types.join(" ")}`
      expect(counts, context).toEqual({ prompted: 2, started: 2, ended: 2, failed: 0 })
    }
  })

describe("cluster placement", () => {
  it.scopedLive(
    "one runner takes every shard and runs sessions; the lease names its address while it drives one",
    () =>
      Effect.gen(function* () {
        const t = yield* cluster()
        const a = yield* t.runner
        yield* eventually(Effect.map(lockRows(a.run), (rows) => rows.length === 1 && rows[0]!.n === 300))
        expect((yield* lockRows(a.run))[0]!.address).toBe(a.address)
        expect(yield* a.run(Effect.map(SessionLeases.Service, (leases) => leases.host))).toBe(a.address)

        const sessionID = yield* sessionOn(a.run, t.project)
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
        const t = yield* cluster()
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
          const candidate = yield* sessionOn(a.run, t.project)
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

  it.scopedLive(
    "a runner joins: its shards move at once; sessions whose shard moved finish their Step on the old runner, stop at the boundary and go on on the new runner; nothing fails or runs twice",
    () => joinMidStep(false),
    120_000
  )

  it.scopedLive(
    "the lock storage fails mid-Step and recovers: the runner takes its shards again, and a runner joining later gets its shards while the Steps run, without cutting them off",
    () => joinMidStep(true),
    120_000
  )

  it.scopedLive(
    "subagents across a join: parents on A wait for their children while B joins and takes shards; every child runs once and every parent's Step ends once",
    () =>
      Effect.gen(function* () {
        const gates = new Map<string, LLMScript.Gate>()
        const t = yield* cluster({
          // A parent delegates to a child (task tool); the child answers after its gate opens; the
          // parent ends once its tool result (the child's answer) is back.
          respond: (request) => {
            const sent = JSON.stringify(request.body)
            const answered = /answer-(\d+)/.exec(sent)
            if (answered !== null) return LLMScript.reply(LLMScript.text("parent done"), LLMScript.finish("stop"))
            const parent = /parent-(\d+)/.exec(sent)
            if (parent !== null) {
              return LLMScript.reply(
                LLMScript.toolCall(`call_${parent[1]}`, "task", {
                  description: "delegated",
                  prompt: `child-${parent[1]}`,
                  subagent_type: "general"
                }),
                LLMScript.finish("tool-calls")
              )
            }
            const child = /child-(\d+)/.exec(sent)
            if (child === null) return undefined
            const held = LLMScript.gate()
            gates.set(child[1]!, held)
            return LLMScript.reply(LLMScript.hold(held), LLMScript.text(`answer-${child[1]}`), LLMScript.finish("stop"))
          },
          title: () => LLMScript.reply(LLMScript.text("A title"), LLMScript.finish("stop"))
        })
        const { a, sessions: parents } = yield* promptedOnA(t, 12, (i) => `parent-${i}`)
        // Every child is mid-Step, every parent's Step waits for its child.
        yield* eventually(Effect.sync(() => gates.size === 12 && [...gates.values()].every((held) => held.isReached)))
        const children = yield* a.run(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql<{ readonly id: Identifier.SessionID }>`SELECT id FROM session WHERE parent_id IS NOT NULL`
          ).pipe(Effect.orDie)
        )
        expect(children).toHaveLength(12)

        // B joins and takes its shards, those of running parents and children included.
        const b = yield* t.runner
        const all = [...parents, ...children.map((row) => row.id)]
        yield* eventually(
          Effect.map(
            Effect.forEach(all, (sessionID) =>
              b.run(Effect.map(SessionLeases.Service, (leases) => leases.placedHere(sessionID)))
            ),
            (placed) => placed.filter((here) => here).length >= 4
          )
        )
        for (const held of gates.values()) yield* held.release
        for (const sessionID of parents) {
          yield* b.run(Effect.flatMap(SessionRunner.Service, (runner) => runner.wait(sessionID))).pipe(Effect.orDie)
        }
        for (const sessionID of parents) {
          const { types, counts } = yield* stepCounts(a.run, sessionID)
          expect(counts, types.join(" ")).toEqual({ prompted: 1, started: 2, ended: 2, failed: 0 })
        }
        for (const { id } of children) {
          const { types, counts } = yield* stepCounts(a.run, id)
          expect(counts, types.join(" ")).toEqual({ prompted: 1, started: 1, ended: 1, failed: 0 })
        }
      }),
    120_000
  )

  it.scopedLive(
    "a database is placed one way: a lease host does not start beside live runners, nor a runner beside live lease hosts",
    () =>
      Effect.gen(function* () {
        const withRunner = yield* cluster()
        const a = yield* withRunner.runner
        yield* eventually(Effect.map(lockRows(a.run), (rows) => rows.length === 1))
        const refused = yield* Effect.flip(withRunner.leaseHost)
        expect(refused._tag).toBe("ConfigError")
        expect(refused.message).toContain(`runners placing sessions by shard use this database (one at ${a.address})`)

        const withLeases = yield* cluster()
        yield* withLeases.leaseHost
        const refusedRunner = yield* Effect.flip(withLeases.runner)
        expect(refusedRunner._tag).toBe("ConfigError")
        expect(refusedRunner.message).toContain("a host placing sessions by first-come leases uses this database")
      }),
    60_000
  )
})
