import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import {
  Config,
  type Core,
  EventLog,
  InstructionCheckpoint,
  KnownSessions,
  LiveBus,
  Locations,
  Recovery,
  SessionEvents,
  SessionHistory,
  SessionInput,
  type SessionLeases,
  SessionRunner,
  Sessions
} from "@opencode-ai/core"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Identifier } from "@opencode-ai/schema"
import { Effect, Layer, Logger, LogLevel, Option, Schema, type Scope } from "effect"
import { TestDatabase } from "../../src/testing/test-database.js"

/**
 * A restart in the middle of a Step: a host in a child process (`restart.child.ts`) is killed with
 * SIGKILL while its Step is running (a tool that never returns, or a text block held open by the
 * scripted server), a prompt is admitted into the same file while no host runs, and then this process
 * opens Core over the file. Building Core runs Recovery and resumes the sessions with pending input.
 */

const { reply, text, toolCall, finish, hold, gate } = LLMScript

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..")
const childScript = path.join(packageDir, "test", "runner", "restart.child.ts")

/** The child's `stranded` line: the session it left with an open Step. */
const decodeStranded = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ sessionID: Identifier.SessionID })))

const files = () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-restart-")))
  const directory = path.join(root, "project")
  fs.mkdirSync(directory)
  return { root, directory, databaseFile: path.join(root, "opencode.db") }
}

/** Where a test's hosts meet: the database file, the project directory and the scripted server. */
type At = { readonly databaseFile: string; readonly directory: string; readonly url: string }

/**
 * Runs the crashing host until it reports its Step stranded at `mode`, then kills it with SIGKILL
 * (no finalizer, no clean close: the WAL is left as the crash left it). Resolves with its session.
 */
const crash = (
  mode: "tool" | "text" | "compaction" | "compacted",
  at: At,
  before: Effect.Effect<void, never, Scope.Scope> = Effect.void
) =>
  Effect.gen(function* () {
    const child = childProcess.spawn(
      process.execPath,
      ["--import", "tsx", childScript, at.databaseFile, at.directory, at.url, mode],
      {
        cwd: packageDir,
        stdio: ["ignore", "pipe", "pipe"]
      }
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.on("exit", (code, signal) => resolve(signal ?? code))
    )
    let out = ""
    let err = ""
    child.stderr.on("data", (chunk) => (err += String(chunk)))
    const stranded = new Promise<{ sessionID: Identifier.SessionID }>((resolve, reject) => {
      child.stdout.on("data", (chunk) => {
        out += String(chunk)
        const match = /^stranded (.*)$/m.exec(out)
        if (match) resolve(decodeStranded(match[1]!))
      })
      void exited.then((code) => reject(new Error(`the child exited (${code}) before its step was stranded: ${err}`)))
    })
    const { sessionID } = yield* Effect.promise(() => stranded)
    yield* before
    child.kill("SIGKILL")
    expect(yield* Effect.promise(() => exited)).toBe("SIGKILL")
    return sessionID
  })

/**
 * Admits a prompt into the file while no host runs: only the stores admission needs, no runner, so
 * nothing is recovered or resumed by this.
 */
const admitOffline = (
  databaseFile: string,
  sessionID: Identifier.SessionID,
  text: string,
  delivery: "steer" | "queue"
) =>
  Effect.flatMap(SessionInput.Service, (input) => input.admit(sessionID, { prompt: { text }, delivery })).pipe(
    Effect.provide(
      SessionInput.layer.pipe(
        Layer.provideMerge(Sessions.layer),
        Layer.provideMerge(SessionEvents.layer),
        Layer.provideMerge(KnownSessions.layer),
        Layer.provideMerge(EventLog.layer),
        Layer.provideMerge(TestDatabase.databaseLayer({ filename: databaseFile })),
        Layer.provide(LiveBus.layer),
        Layer.provide(NodeContext.layer)
      )
    ),
    Effect.scoped,
    Effect.orDie
  )

/** Core over the test's file and directory, configured for its scripted server. */
const coreOver = (at: At, options: Partial<Core.Options> = {}) =>
  TestDatabase.coreLayer({
    databaseFile: at.databaseFile,
    directory: at.directory,
    configDir: path.join(at.directory, "config"),
    env: {},
    config: Config.layerTest(ScriptedLLMServer.config(at.url)),
    ...options
  })

/**
 * Opens Core over the file in this process (Recovery runs and pending sessions resume) until the
 * test's end; `run` provides it.
 */
const open = (at: At, leases?: SessionLeases.Options) =>
  Layer.build(coreOver(at, { leases })).pipe(
    Effect.orDie,
    Logger.withMinimumLogLevel(LogLevel.Warning),
    Effect.map((context) => ({
      run: <A, E>(effect: Effect.Effect<A, E, Core.Services>) => Effect.provide(effect, context)
    }))
  )

/** Opens Core over the file again, then waits for the session. */
const restart = (at: At, sessionID: Identifier.SessionID) =>
  Effect.gen(function* () {
    const { run } = yield* open(at)
    yield* run(Effect.flatMap(SessionRunner.Service, (runner) => runner.wait(sessionID))).pipe(Effect.orDie)
    const events = yield* run(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)))
    const pending = yield* run(Effect.flatMap(SessionInput.Service, (input) => input.pending(sessionID))).pipe(
      Effect.orDie
    )
    return { events, pending, run }
  })

const typesOf = (events: ReadonlyArray<EventLog.Envelope>) => events.map((e) => e.type.replace("session.next.", ""))

/**
 * The log of a session whose host stopped while its tool ran, with a queued prompt and a steer
 * pending, once another host settled it and ran what was pending: the same after a restart as after
 * a takeover by a live host.
 */
const strandedToolSettledAndResumed = [
  "prompt.admitted",
  "prompted",
  "step.started",
  "tool.input.started",
  "tool.input.ended",
  "tool.called",
  "prompt.admitted", // queued by the stopped host behind its running step
  "prompt.admitted", // the steer admitted while it was stopped (or beside it, before it stopped)
  // Settled
  "tool.failed",
  "step.failed",
  // Resumed: the steer joins the next step, then the queued prompt gets its own
  "prompted",
  "step.started",
  "text.started",
  "text.ended",
  "step.ended",
  "prompted",
  "step.started",
  "text.started",
  "text.ended",
  "step.ended"
]

/** Nothing admitted is lost (each admitted prompt is promoted exactly once) and the seq is gapless from 1. */
const expectIntact = (events: ReadonlyArray<EventLog.Envelope>) => {
  expect(events.map((e) => e.durable.seq)).toEqual(events.map((_, i) => i + 1))
  const admitted = events.filter((e) => e.type === "session.next.prompt.admitted").map((e) => (e.data as any).messageID)
  const prompted = events.filter((e) => e.type === "session.next.prompted").map((e) => (e.data as any).messageID)
  expect(new Set(admitted).size).toBe(admitted.length)
  expect([...prompted].sort()).toEqual([...admitted].sort())
}

/**
 * One scenario: a scripted LLM server, a fresh database file and project directory, and the time the
 * child processes need.
 */
const scenario = (
  name: string,
  body: (world: {
    readonly server: ScriptedLLMServer.ScriptedLLMServer
    readonly at: At
  }) => Effect.Effect<void, unknown, Scope.Scope>
) =>
  it.scopedLive(
    name,
    () => Effect.flatMap(ScriptedLLMServer.make(), (server) => body({ server, at: { ...files(), url: server.url } })),
    180_000
  )

describe("restart in the middle of a step", () => {
  scenario(
    "a host killed while a tool runs: the call and its step are failed, the pending prompts resume",
    ({ server, at }) =>
      Effect.gen(function* () {
        yield* server.enqueue(reply(toolCall("call_1", "block", { what: "forever" }), finish("tool-calls")))
        const sessionID = yield* crash("tool", at)
        // The crashed host had made its provider call; its Step was waiting on the tool.
        expect((yield* server.awaitRequest(1)).headers["x-session-id"]).toBe(sessionID)

        // While no host runs, another process admits a steer.
        yield* admitOffline(at.databaseFile, sessionID, "steered while down", "steer")

        // After the restart: the steer joins the next step, then the queued prompt gets its own.
        yield* server.enqueue(
          reply(text("after the restart"), finish("stop")),
          reply(text("the queued one"), finish("stop"))
        )
        const { events, pending } = yield* restart(at, sessionID)

        expect(typesOf(events)).toEqual(strandedToolSettledAndResumed)
        expectIntact(events)
        expect(pending).toEqual([])

        const failed: any = events.find((e) => e.type === "session.next.tool.failed")!.data
        expect(failed).toMatchObject({ callID: "call_1", error: { message: Recovery.strandedToolMessage } })
        const stepFailed: any = events.find((e) => e.type === "session.next.step.failed")!.data
        expect(stepFailed.error.message).toBe(Recovery.strandedMessage)
        const started: any = events.find((e) => e.type === "session.next.step.started")!.data
        expect(stepFailed.assistantMessageID).toBe(started.assistantMessageID)
        expect(failed.assistantMessageID).toBe(started.assistantMessageID)
        const prompted = events
          .filter((e) => e.type === "session.next.prompted")
          .map((e) => (e.data as any).prompt.text)
        expect(prompted).toEqual(["run the blocking tool", "steered while down", "queued behind the tool"])

        // The resumed steps ran against the scripted server, carrying the stranded call's failure.
        const requests = yield* server.requests
        expect(requests).toHaveLength(3)
        for (const request of requests) expect(request.headers["x-session-id"]).toBe(sessionID)
        const second = requests[1]!.body.messages as Array<any>
        expect(second.slice(1).map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"])
        expect(second[2].tool_calls[0]).toMatchObject({ id: "call_1", function: { name: "block" } })
        expect(second[3]).toMatchObject({ tool_call_id: "call_1", content: Recovery.strandedToolMessage })
        expect(second[4]).toEqual({ role: "user", content: "steered while down" })
        const third = requests[2]!.body.messages as Array<any>
        expect(third.at(-1)).toEqual({ role: "user", content: "queued behind the tool" })
        expect(third.at(-2)).toMatchObject({ role: "assistant", content: "after the restart" })
      })
  )

  scenario(
    "a host killed while text streams: the step is failed, the prompt admitted while down resumes",
    ({ server, at }) =>
      Effect.gen(function* () {
        const held = gate()
        yield* server.enqueue(reply(text("Once upon", " a time"), hold(held), text(" there was"), finish("stop")))
        const sessionID = yield* crash("text", at, held.reached)
        // The crash dropped the provider connection mid-stream.
        yield* held.aborted
        expect(yield* (yield* server.awaitRequest(1)).outcome).toBe("aborted")

        yield* admitOffline(at.databaseFile, sessionID, "are you still there?", "queue")

        yield* server.enqueue(reply(text("I am back"), finish("stop")))
        const { events, pending, run } = yield* restart(at, sessionID)
        // Idempotent: nothing is left open for another run to find.
        expect(yield* run(Effect.flatMap(Recovery.Service, (recovery) => recovery.run))).toEqual({
          stranded: 0,
          tools: 0,
          requests: 0,
          pending: []
        })

        expect(typesOf(events)).toEqual([
          "prompt.admitted",
          "prompted",
          "step.started",
          "text.started",
          "prompt.admitted",
          // Recovery: the open block is ended with what was durable (its deltas were live-only)
          "text.ended",
          "step.failed",
          // Resumed
          "prompted",
          "step.started",
          "text.started",
          "text.ended",
          "step.ended"
        ])
        expectIntact(events)
        expect(pending).toEqual([])
        const failed = events
          .filter((e) => e.type === "session.next.step.failed")
          .map((e) => (e.data as any).error.message)
        expect(failed).toEqual([Recovery.strandedMessage])
        const started: any = events.find((e) => e.type === "session.next.text.started")!.data
        expect(events.find((e) => e.type === "session.next.text.ended")!.data).toMatchObject({
          assistantMessageID: started.assistantMessageID,
          textID: started.textID,
          text: ""
        })

        const requests = yield* server.requests
        expect(requests).toHaveLength(2)
        const second = requests[1]!
        expect(second.headers["x-session-id"]).toBe(sessionID)
        // The failed step's text was never durable (deltas are live-only): the model gets both prompts.
        expect((second.body.messages as Array<any>).slice(1)).toEqual([
          { role: "user", content: "tell me a story" },
          { role: "user", content: "are you still there?" }
        ])
      })
  )

  scenario(
    "a second host beside a live one leaves its running session alone, then takes it over once it is killed",
    ({ server, at }) =>
      Effect.gen(function* () {
        yield* server.enqueue(reply(toolCall("call_1", "block", { what: "forever" }), finish("tool-calls")))
        let beside: Effect.Effect.Success<ReturnType<typeof open>> | undefined
        const sessionID = yield* crash(
          "tool",
          at,
          Effect.gen(function* () {
            // While the first host runs its Step, a second one opens the same file: its startup
            // Recovery must leave that Step alone.
            beside = yield* open(at, { heartbeatMs: 50 })
            const run = beside.run
            const sessionID = (yield* run(Effect.flatMap(Sessions.Service, (sessions) => sessions.list({})))).data[0]!
              .id
            // A steer admitted here wakes this host, which finds the session held and leaves it be.
            yield* run(
              Effect.flatMap(SessionInput.Service, (input) =>
                input.admit(sessionID, { prompt: { text: "steered beside it" }, delivery: "steer" })
              )
            ).pipe(Effect.orDie)
            yield* run(Effect.flatMap(SessionRunner.Service, (runner) => runner.wake(sessionID)))
            yield* Effect.sleep("200 millis")
            const events = yield* run(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)))
            expect(typesOf(events).slice(-3)).toEqual(["tool.called", "prompt.admitted", "prompt.admitted"])
            expect(yield* run(Effect.flatMap(SessionRunner.Service, (runner) => runner.active))).toEqual({})
          }).pipe(Effect.orDie)
        )
        // The first host is gone: at its next look this one takes the session over, settles the
        // stranded call and Step, and runs what is pending.
        yield* server.enqueue(reply(text("taken over"), finish("stop")), reply(text("the queued one"), finish("stop")))
        const run = beside!.run
        const read = run(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)))
        const deadline = Date.now() + 10_000
        while (typesOf(yield* read).filter((type) => type === "step.ended").length < 2 && Date.now() < deadline) {
          yield* Effect.sleep("20 millis")
        }
        yield* run(Effect.flatMap(SessionRunner.Service, (runner) => runner.wait(sessionID))).pipe(Effect.orDie)
        const events = yield* read
        expect(typesOf(events)).toEqual(strandedToolSettledAndResumed)
        expectIntact(events)
        const prompted = events
          .filter((e) => e.type === "session.next.prompted")
          .map((e) => (e.data as any).prompt.text)
        expect(prompted).toEqual(["run the blocking tool", "steered beside it", "queued behind the tool"])
        expect((yield* server.requests).map((request) => request.headers["x-session-id"])).toEqual([
          sessionID,
          sessionID,
          sessionID
        ])
        // Idle again: this host released the session.
        const [lease] = yield* run(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql`SELECT host_id FROM session_lease WHERE session_id = ${sessionID}`
          )
        ).pipe(Effect.orDie)
        expect(lease).toBeUndefined()
      })
  )

  scenario(
    "a drain stopped between Steps is continued after a restart, unless the session was interrupted",
    ({ server, at }) =>
      Effect.gen(function* () {
        // The state a host leaves when it stops between Steps, written by a Core that runs nothing.
        const crafted = yield* Effect.gen(function* () {
          const sessions = yield* Sessions.Service
          const input = yield* SessionInput.Service
          const events = yield* SessionEvents.Service
          const runner = yield* SessionRunner.Service
          const location = yield* (yield* Locations.Service).resolve({ directory: at.directory })
          const promoted = (text: string) =>
            Effect.gen(function* () {
              const session = yield* sessions.create({ location })
              yield* input.admit(session.id, { prompt: { text } })
              expect(yield* input.promoteSteers(session.id)).toBe(1)
              return session.id as Identifier.SessionID
            })
          const afterToolStep = (text: string) =>
            Effect.gen(function* () {
              const sessionID = yield* promoted(text)
              const ids = {
                timestamp: Date.now(),
                sessionID,
                assistantMessageID: Identifier.newMessageID() as Identifier.MessageID
              }
              yield* events.append(sessionID, [
                SessionEvents.draft("session.next.step.started", {
                  ...ids,
                  agent: "build",
                  model: { id: "m", providerID: "scripted" }
                }),
                SessionEvents.draft("session.next.tool.called", {
                  ...ids,
                  callID: "call_1",
                  tool: "noop",
                  input: {},
                  provider: { executed: false }
                }),
                SessionEvents.draft("session.next.tool.success", {
                  ...ids,
                  callID: "call_1",
                  structured: {},
                  content: [{ type: "text", text: "the tool's result" }],
                  provider: { executed: false }
                }),
                SessionEvents.draft("session.next.step.ended", {
                  ...ids,
                  finish: "tool-calls",
                  cost: 0,
                  tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } }
                })
              ])
              return sessionID
            })
          const toolStep = yield* afterToolStep("call the tool")
          const prompt = yield* promoted("promoted, never answered")
          const interrupted = yield* afterToolStep("interrupted afterwards")
          yield* runner.interrupt(interrupted)
          return { toolStep, prompt, interrupted }
        }).pipe(Effect.provide(coreOver(at, { recover: false })), Effect.scoped, Effect.orDie)

        yield* server.enqueue(reply(text("continued"), finish("stop")), reply(text("continued"), finish("stop")))
        const { run } = yield* open(at)
        const typesAfter = (sessionID: Identifier.SessionID) =>
          Effect.gen(function* () {
            yield* run(Effect.flatMap(SessionRunner.Service, (runner) => runner.wait(sessionID))).pipe(Effect.orDie)
            return typesOf(yield* run(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID))))
          })
        expect((yield* typesAfter(crafted.toolStep)).slice(-9)).toEqual([
          "prompted",
          "step.started",
          "tool.called",
          "tool.success",
          "step.ended",
          // Continued: the next Step, with no new input
          "step.started",
          "text.started",
          "text.ended",
          "step.ended"
        ])
        expect((yield* typesAfter(crafted.prompt)).slice(-5)).toEqual([
          "prompted",
          "step.started",
          "text.started",
          "text.ended",
          "step.ended"
        ])
        expect((yield* typesAfter(crafted.interrupted)).at(-1)).toBe("step.ended")
        expect((yield* typesAfter(crafted.interrupted)).filter((type) => type === "step.started")).toHaveLength(1)

        const requests = yield* server.requests
        expect(requests.map((request) => request.headers["x-session-id"]).sort()).toEqual(
          [crafted.toolStep, crafted.prompt].sort()
        )
        const continued = requests.find((request) => request.headers["x-session-id"] === crafted.toolStep)!
        const messages = (continued.body.messages as Array<any>).slice(1)
        expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"])
        expect(messages[2]).toMatchObject({ tool_call_id: "call_1", content: "the tool's result" })
      })
  )

  scenario(
    "a host killed in the middle of a compaction: after the restart the session is untouched (no summary, same history and baseline)",
    ({ server, at }) =>
      Effect.gen(function* () {
        const held = gate()
        yield* server.enqueue(
          reply(text("one"), finish("stop")),
          reply(text("## Objective"), hold(held), text("\n- never committed"), finish("stop"))
        )
        // Killed once the summary is streaming (its request is held open by the gate).
        const sessionID = yield* crash("compaction", at, held.reached)
        yield* server.enqueue(reply(text("after the restart"), finish("stop")))
        const { run } = yield* open(at)
        const checkpoint = yield* run(Effect.flatMap(InstructionCheckpoint.Service, (c) => c.get(sessionID)))
        const context = yield* run(Effect.flatMap(SessionHistory.Service, (h) => h.context(sessionID)))
        expect(context.map((message) => message.type)).toEqual(["user", "assistant"])
        expect(Option.getOrThrow(checkpoint).compactionSeq).toBeUndefined()
        yield* run(
          Effect.gen(function* () {
            yield* (yield* SessionInput.Service).admit(sessionID, { prompt: { text: "second" } })
            const runner = yield* SessionRunner.Service
            yield* runner.wake(sessionID)
            yield* runner.wait(sessionID)
          })
        ).pipe(Effect.orDie)
        const events = yield* run(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)))
        expectIntact(events)
        expect(typesOf(events)).toContain("compaction.started")
        expect(typesOf(events)).not.toContain("compaction.ended")
        const last = (yield* server.requests).at(-1)!
        expect(JSON.stringify(last.body.messages)).toContain("tell me a story")
        expect(JSON.stringify(last.body.messages)).not.toContain("never committed")
      })
  )

  scenario(
    "a host killed right after a compaction committed: after the restart the session is fully compacted",
    ({ server, at }) =>
      Effect.gen(function* () {
        yield* server.enqueue(
          reply(text("one"), finish("stop")),
          reply(text("## Objective\n- tell a story"), finish("stop"))
        )
        const sessionID = yield* crash("compacted", at)
        yield* server.enqueue(reply(text("after the restart"), finish("stop")))
        const { run } = yield* open(at)
        const events = yield* run(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)))
        const ended = events.find((event) => event.type === "session.next.compaction.ended")!
        const checkpoint = Option.getOrThrow(
          yield* run(Effect.flatMap(InstructionCheckpoint.Service, (c) => c.get(sessionID)))
        )
        expect(checkpoint).toMatchObject({ baselineSeq: ended.durable.seq, compactionSeq: ended.durable.seq })
        const context = yield* run(Effect.flatMap(SessionHistory.Service, (h) => h.context(sessionID)))
        expect(context[0]?.type).toBe("compaction")
        yield* run(
          Effect.gen(function* () {
            yield* (yield* SessionInput.Service).admit(sessionID, { prompt: { text: "second" } })
            const runner = yield* SessionRunner.Service
            yield* runner.wake(sessionID)
            yield* runner.wait(sessionID)
          })
        ).pipe(Effect.orDie)
        const last = (yield* server.requests).at(-1)!
        expect(JSON.stringify(last.body.messages)).toContain("tell a story")
        expect(JSON.stringify(last.body.messages)).toContain("second")
      })
  )
})
