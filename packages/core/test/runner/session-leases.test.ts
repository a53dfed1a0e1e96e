import * as childProcess from "node:child_process"
import * as os from "node:os"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { describe, expect } from "vitest"
import { Config } from "../../src/config/config.js"
import { Core } from "../../src/core.js"
import { CommitFence } from "../../src/event/commit-fence.js"
import { EventLog } from "../../src/event/event-log.js"
import { SessionInput } from "../../src/input/session-input.js"
import { Locations } from "../../src/location/locations.js"
import { SessionLeases } from "../../src/runner/session-leases.js"
import { SessionRunner } from "../../src/runner/session-runner.js"
import { StepRunner } from "../../src/runner/step-runner.js"
import { Sessions } from "../../src/session/sessions.js"
import { LLMScript, ScriptedLLMServer } from "../../src/testing/index.js"
import { tempDir } from "../fixture.js"

/**
 * Leases between hosts. The Core's own host is one; more hosts over the same connection play other
 * processes (each layer is a host of its own), and rows written by hand play hosts that stopped.
 */
const setup = Effect.gen(function* () {
  const dir = yield* tempDir
  const core = yield* Layer.build(
    Core.layer({
      databaseFile: path.join(dir, "opencode.db"),
      directory: dir,
      configDir: path.join(dir, "config"),
      env: {},
      config: Config.layerTest({})
    })
  )
  const run = <A, E>(effect: Effect.Effect<A, E, Core.Services>) => Effect.provide(effect, core)
  const sql = yield* run(SqlClient.SqlClient)
  const location = yield* run(Effect.flatMap(Locations.Service, (locations) => locations.resolve({ directory: dir })))
  const session = () =>
    run(Effect.flatMap(Sessions.Service, (sessions) => sessions.create({ location }))).pipe(Effect.map((s) => s.id))
  /** Another host over the same database, open until `close` (or the test's end). */
  const host = Effect.gen(function* () {
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const context = yield* Layer.buildWithScope(SessionLeases.layer({ heartbeatMs: 50 }), scope).pipe(
      Effect.provideService(SqlClient.SqlClient, sql)
    )
    return { leases: Context.get(context, SessionLeases.Service), close: Scope.close(scope, Exit.void) }
  })
  const hostRows = sql<{ readonly id: string }>`SELECT id FROM runtime_host ORDER BY id`.pipe(
    Effect.map((rows) => rows.map((row) => row.id))
  )
  const holder = (sessionID: string) =>
    sql<{ readonly host_id: string }>`SELECT host_id FROM session_lease WHERE session_id = ${sessionID}`.pipe(
      Effect.map((rows) => rows[0]?.host_id)
    )
  /** A host row, as a stopped (or far away) host left it, holding `sessionID`. */
  const stoppedHost = (
    row: { readonly id: string; readonly pid: number; readonly machine: string; readonly seen: number },
    sessionID: string
  ) =>
    Effect.all([
      sql`INSERT INTO runtime_host (id, pid, machine, time_started, time_seen) VALUES (${row.id}, ${row.pid}, ${row.machine}, ${row.seen}, ${row.seen})`,
      sql`INSERT INTO session_lease (session_id, host_id, time_claimed) VALUES (${sessionID}, ${row.id}, ${row.seen})`
    ])
  const own = yield* run(SessionLeases.Service)
  return { sql, session, host, hostRows, holder, stoppedHost, own, run }
})

/** A pid that no process has: a child that has already exited. */
const exitedPid = Effect.promise(
  () =>
    new Promise<number>((resolve) => {
      const child = childProcess.spawn(process.execPath, ["-e", ""], { stdio: "ignore" })
      child.once("exit", () => resolve(child.pid!))
    })
)

it.scopedLive("one host holds a session at a time; releasing lets another claim it; claims are idempotent", () =>
  Effect.gen(function* () {
    const t = yield* setup
    const a = yield* t.host
    const b = yield* t.host
    const sessionID = yield* t.session()
    expect(yield* a.leases.holding(sessionID)).toBe("free")
    expect(yield* a.leases.claim(sessionID)).toEqual({ _tag: "Claimed" })
    expect(yield* a.leases.claim(sessionID)).toEqual({ _tag: "Claimed" })
    expect(yield* a.leases.holding(sessionID)).toBe("here")
    expect(yield* b.leases.holding(sessionID)).toBe("elsewhere")
    expect(yield* b.leases.claim(sessionID)).toEqual({ _tag: "Held", host: a.leases.host })
    // Releasing what another host holds changes nothing.
    yield* b.leases.release(sessionID)
    expect(yield* t.holder(sessionID)).toBe(a.leases.host)
    yield* a.leases.release(sessionID)
    yield* a.leases.release(sessionID)
    expect(yield* t.holder(sessionID)).toBeUndefined()
    expect(yield* b.leases.claim(sessionID)).toEqual({ _tag: "Claimed" })
    expect(yield* a.leases.claim(sessionID)).toEqual({ _tag: "Held", host: b.leases.host })
    // A live host's lease is not orphaned.
    expect(yield* a.leases.orphaned).toEqual([])
  })
)

it.scopedLive(
  "a host on this machine whose process is gone is dead at once: its sessions are orphaned and taken over",
  () =>
    Effect.gen(function* () {
      const t = yield* setup
      const sessionID = yield* t.session()
      const pid = yield* exitedPid
      // The machine identity as this process writes it: read back from the Core's own host row.
      const [mine] = yield* t.sql<{
        readonly machine: string
      }>`SELECT machine FROM runtime_host WHERE id = ${t.own.host}`
      expect(mine!.machine.startsWith(`${os.hostname()}|`)).toBe(true)
      yield* t.stoppedHost({ id: "crashed", pid, machine: mine!.machine, seen: Date.now() }, sessionID)

      const other = yield* t.host
      expect(yield* other.leases.orphaned).toEqual([sessionID])
      expect(yield* other.leases.claim(sessionID)).toEqual({ _tag: "Claimed", from: "crashed" })
      expect(yield* t.holder(sessionID)).toBe(other.leases.host)
      // Holding nothing now, the dead host is forgotten at the next look.
      expect(yield* other.leases.orphaned).toEqual([])
      expect(yield* t.hostRows).not.toContain("crashed")
    })
)

it.scopedLive(
  "the fence: a drain's commits pass while its host holds the lease; once another host took it over they are refused and write nothing",
  () =>
    Effect.gen(function* () {
      const t = yield* setup
      const sessionID = yield* t.session()
      const admit = (text: string) =>
        t.run(Effect.flatMap(SessionInput.Service, (input) => input.admit(sessionID, { prompt: { text } })))
      const events = t.run(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)))
      expect(yield* t.own.claim(sessionID)).toEqual({ _tag: "Claimed" })
      // Held here: a drain's commit passes.
      yield* SessionLeases.drive(sessionID, admit("while held"))
      const before = (yield* events).length
      // This host freezes past its expiry: another host (expiry 1 s) judges it dead and takes the lease over.
      yield* t.sql`UPDATE runtime_host SET time_seen = 0 WHERE id = ${t.own.host}`
      const other = yield* Effect.provideService(
        Layer.build(SessionLeases.layer({ heartbeatMs: 60_000, expiryMs: 1_000 })),
        SqlClient.SqlClient,
        t.sql
      )
      const taker = Context.get(other, SessionLeases.Service)
      expect(yield* taker.claim(sessionID)).toEqual({ _tag: "Claimed", from: t.own.host })
      // The frozen host's drain wakes and commits: refused in the commit's transaction, nothing written.
      const refused = yield* Effect.exit(SessionLeases.drive(sessionID, admit("a late admission")))
      expect(Exit.isFailure(refused) && Cause.isDie(refused.cause)).toBe(true)
      const defect = Exit.isFailure(refused) ? Option.getOrUndefined(Cause.dieOption(refused.cause)) : undefined
      expect(defect).toBeInstanceOf(CommitFence.CommitFenced)
      expect((defect as CommitFence.CommitFenced).aggregateID).toBe(sessionID)
      expect((yield* events).length).toBe(before)
      expect(JSON.stringify(yield* events)).not.toContain("a late admission")
      // Admission outside a drain is not fenced (any host may admit); commits to other sessions neither.
      yield* admit("admitted anywhere")
      expect((yield* events).length).toBe(before + 1)
      const unrelated = yield* t.session()
      yield* SessionLeases.drive(
        sessionID,
        t.run(Effect.flatMap(SessionInput.Service, (input) => input.admit(unrelated, { prompt: { text: "x" } })))
      )
      // Released by its new holder, the lease is nobody's: still refused for the host that lost it.
      yield* taker.release(sessionID)
      const afterRelease = yield* Effect.exit(SessionLeases.drive(sessionID, admit("later")))
      expect(Exit.isFailure(afterRelease) && Cause.isDie(afterRelease.cause)).toBe(true)
      expect((yield* events).length).toBe(before + 1)
    })
)

it.scopedLive("a host elsewhere is live while its heartbeat is recent, dead once it is older than the expiry", () =>
  Effect.gen(function* () {
    const t = yield* setup
    const recent = yield* t.session()
    const silent = yield* t.session()
    // Another machine: its pid cannot be checked from here, and happens to be ours.
    yield* t.stoppedHost({ id: "far-recent", pid: process.pid, machine: "elsewhere|", seen: Date.now() }, recent)
    yield* t.stoppedHost(
      {
        id: "far-silent",
        pid: process.pid,
        machine: "elsewhere|",
        seen: Date.now() - SessionLeases.defaultExpiryMs - 1_000
      },
      silent
    )
    const other = yield* t.host
    expect(yield* other.leases.orphaned).toEqual([silent])
    expect(yield* other.leases.holding(recent)).toBe("elsewhere")
    expect(yield* other.leases.holding(silent)).toBe("stopped")
    expect(yield* other.leases.claim(recent)).toEqual({ _tag: "Held", host: "far-recent" })
    expect(yield* other.leases.claim(silent)).toEqual({ _tag: "Claimed", from: "far-silent" })
    // A lease whose host row is gone altogether is free to take over too.
    const rowless = yield* t.session()
    yield* t.sql`INSERT INTO session_lease (session_id, host_id, time_claimed) VALUES (${rowless}, 'vanished', ${Date.now()})`
    expect(yield* other.leases.claim(rowless)).toEqual({ _tag: "Claimed", from: "vanished" })
  })
)

it.scopedLive("a host writes its heartbeat, and closing it deletes its row and its leases", () =>
  Effect.gen(function* () {
    const t = yield* setup
    const a = yield* t.host
    const sessionID = yield* t.session()
    yield* a.leases.claim(sessionID)
    const seen = () =>
      t.sql<{ readonly time_seen: number }>`SELECT time_seen FROM runtime_host WHERE id = ${a.leases.host}`
    const first = (yield* seen())[0]!.time_seen
    // The beats come every 50 ms; waited for rather than timed, so a loaded machine only makes it slower
    // (a host that never beat again would hold the test until its timeout).
    while ((yield* seen())[0]!.time_seen <= first) yield* Effect.sleep("25 millis")
    // A host another one judged dead and forgot registers again at its next beat.
    yield* t.sql`DELETE FROM runtime_host WHERE id = ${a.leases.host}`
    while (!(yield* t.hostRows).includes(a.leases.host)) yield* Effect.sleep("25 millis")

    yield* a.close
    expect(yield* t.hostRows).not.toContain(a.leases.host)
    expect(yield* t.holder(sessionID)).toBeUndefined()
  })
)

/** The host holding the session's lease, read through one Core's connection. */
const holderOf = (run: <A, E>(effect: Effect.Effect<A, E, Core.Services>) => Effect.Effect<A, E>, sessionID: string) =>
  run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ readonly host_id: string }>`SELECT host_id FROM session_lease WHERE session_id = ${sessionID}`
    ).pipe(
      Effect.orDie,
      Effect.map((rows) => rows[0]?.host_id)
    )
  )

describe("two hosts over one database", () => {
  /** Two Cores over one file in this process, a session, and a way to prompt it through either. */
  const twoHosts = Effect.gen(function* () {
    const dir = yield* tempDir
    const server = yield* ScriptedLLMServer.make()
    const open = Layer.build(
      Core.layer({
        databaseFile: path.join(dir, "opencode.db"),
        directory: dir,
        configDir: path.join(dir, "config"),
        env: {},
        config: Config.layerTest(ScriptedLLMServer.config(server.url)),
        leases: { heartbeatMs: 50 }
      })
    )
    const a = yield* open
    const b = yield* open
    const on =
      (context: Context.Context<Core.Services>) =>
      <A, E>(effect: Effect.Effect<A, E, Core.Services>) =>
        Effect.provide(effect, context)
    const [onA, onB] = [on(a), on(b)]
    const location = yield* onA(Effect.flatMap(Locations.Service, (locations) => locations.resolve({ directory: dir })))
    const sessionID = (yield* onA(Effect.flatMap(Sessions.Service, (sessions) => sessions.create({ location })))).id
    const prompt = (run: typeof onA, text: string) =>
      run(
        Effect.flatMap(SessionInput.Service, (input) =>
          input.admit(sessionID, { prompt: { text }, delivery: "queue" })
        ).pipe(Effect.zipRight(Effect.flatMap(SessionRunner.Service, (runner) => runner.wake(sessionID))))
      )
    const runner = (run: typeof onA) => run(SessionRunner.Service)
    const events = onA(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)))
    return { server, onA, onB, sessionID, prompt, runner, events }
  })

  it.scopedLive(
    "input admitted on the host that does not run the session is run by the one that does; wait waits for it",
    () =>
      Effect.gen(function* () {
        const { server, onA, onB, sessionID, prompt, runner, events: read } = yield* twoHosts
        const wait = (run: typeof onA) => Effect.flatMap(runner(run), (r) => r.wait(sessionID))

        const held = LLMScript.gate()
        yield* server.enqueue(
          LLMScript.reply(LLMScript.text("first"), LLMScript.hold(held), LLMScript.finish("stop")),
          LLMScript.reply(LLMScript.text("second"), LLMScript.finish("stop"))
        )
        yield* prompt(onA, "run on A")
        yield* held.reached
        // B finds the session held by A: it runs nothing itself, and its wait follows A's drain.
        yield* prompt(onB, "admitted on B")
        const waiting = yield* Effect.fork(wait(onB))
        yield* Effect.sleep("300 millis")
        expect(yield* Fiber.poll(waiting)).toEqual(Option.none())
        expect(yield* Effect.flatMap(runner(onB), (r) => r.active)).toEqual({})
        expect(Object.keys(yield* Effect.flatMap(runner(onA), (r) => r.active))).toEqual([sessionID])

        yield* held.release
        yield* Fiber.join(waiting).pipe(Effect.orDie)
        // A ran both prompts, one Step each, in admission order.
        const events = yield* read
        const prompted = events
          .filter((e) => e.type === "session.next.prompted")
          .map((e) => (e.data as any).prompt.text)
        expect(prompted).toEqual(["run on A", "admitted on B"])
        expect(events.filter((e) => e.type === "session.next.step.ended")).toHaveLength(2)
        expect(yield* onB(Effect.flatMap(SessionInput.Service, (input) => input.pending(sessionID)))).toEqual([])
        expect(yield* holderOf(onB, sessionID)).toBeUndefined()

        // Idle everywhere, the next prompt runs on whichever host wakes it.
        yield* server.enqueue(LLMScript.reply(LLMScript.text("third"), LLMScript.finish("stop")))
        yield* prompt(onB, "run on B")
        yield* wait(onA)
        yield* wait(onB)
        expect((yield* server.requests).length).toBe(3)
      }),
    // Two Cores in one process on a loaded machine.
    120_000
  )

  it.scopedLive(
    "interrupt on the host that does not run the session interrupts it where it runs",
    () =>
      Effect.gen(function* () {
        const { server, onA, onB, sessionID, prompt, runner, events } = yield* twoHosts
        const held = LLMScript.gate()
        yield* server.enqueue(
          LLMScript.reply(
            LLMScript.text("Once upon"),
            LLMScript.hold(held),
            LLMScript.text(" a time"),
            LLMScript.finish("stop")
          )
        )
        yield* prompt(onA, "tell me a story")
        yield* held.reached
        yield* prompt(onB, "queued on B")
        yield* Effect.flatMap(runner(onB), (r) => r.interrupt(sessionID))
        // Resolved only once A let the session go: its provider stream was aborted and its Step settled.
        expect(yield* Effect.flatMap(runner(onA), (r) => r.active)).toEqual({})
        yield* held.aborted
        const types = (yield* events).map((e) => e.type.replace("session.next.", ""))
        expect(types.slice(-5)).toEqual([
          "step.started",
          "text.started",
          "prompt.admitted",
          "text.ended",
          "step.failed"
        ])
        const failed: any = (yield* events).at(-1)!.data
        expect(failed.error.message).toBe(StepRunner.providerInterruptedMessage)
        // As after a local interrupt, the input admitted meanwhile is still pending, for the next wake.
        expect((yield* onB(Effect.flatMap(SessionInput.Service, (input) => input.pending(sessionID)))).length).toBe(1)
        expect(yield* holderOf(onB, sessionID)).toBeUndefined()
      }),
    120_000
  )
})
