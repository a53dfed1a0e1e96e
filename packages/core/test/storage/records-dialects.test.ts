import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, layer } from "@effect/vitest"
import { Identifier, type Location } from "@opencode-ai/schema"
import { Clock, Deferred, Effect, Fiber, Layer } from "effect"
import { Config } from "../../src/config/config.js"
import { EventLog } from "../../src/event/event-log.js"
import { LiveBus } from "../../src/event/live-bus.js"
import * as SessionInput from "../../src/input/session-input.js"
import { InstructionCheckpoint } from "../../src/instructions/instruction-checkpoint.js"
import { InstructionEntries } from "../../src/instructions/instruction-entries.js"
import { NestedInstructions } from "../../src/instructions/nested-instructions.js"
import { PermissionRequests } from "../../src/permission/permission-requests.js"
import { QuestionRequests } from "../../src/question/question-requests.js"
import { Recovery } from "../../src/runner/recovery.js"
import { SessionLeases } from "../../src/runner/session-leases.js"
import { KnownSessions } from "../../src/session/known-sessions.js"
import { MessageProjection } from "../../src/session/message-projection.js"
import { SessionEvents } from "../../src/session/session-events.js"
import { Sessions } from "../../src/session/sessions.js"
import { PostgresServer } from "../../src/testing/postgres-server.js"
import { tempDir } from "../fixture.js"
import { dialects, freshDatabase } from "./dialects.js"

/**
 * The record owners of h-records (instruction checkpoint, entries and nested files, permission and
 * question requests, and start-up Recovery over their owners) against both storage dialects: the same
 * operations give the same results over an SQLite file and a real PostgreSQL database.
 */

const services = (dialect: (typeof dialects)[number]) =>
  Effect.gen(function* () {
    const database = yield* freshDatabase(dialect)
    const eventLog = Layer.fresh(EventLog.layer).pipe(
      Layer.provideMerge(database),
      Layer.provideMerge(Layer.scoped(LiveBus.Service, LiveBus.make))
    )
    const base = Layer.fresh(SessionEvents.layer).pipe(
      Layer.provideMerge(Layer.fresh(KnownSessions.layer).pipe(Layer.provideMerge(eventLog)))
    )
    const config = Config.layerTest({ agent: { build: { permission: { probe: "ask" } } } })
    const stores = Layer.mergeAll(
      Layer.fresh(Sessions.layer),
      Layer.fresh(InstructionCheckpoint.layer),
      Layer.fresh(InstructionEntries.layer),
      NestedInstructions.layer({ env: {} }),
      Layer.fresh(QuestionRequests.layer),
      SessionLeases.layer()
    ).pipe(Layer.provideMerge(base))
    const permissions = Layer.fresh(PermissionRequests.layer).pipe(
      Layer.provideMerge(stores),
      Layer.provideMerge(config)
    )
    return Layer.fresh(Recovery.layer).pipe(Layer.provideMerge(permissions))
  })

const newSession = (directory: string) =>
  Effect.gen(function* () {
    const sessions = yield* Sessions.Service
    const location: Location.LocationInfo = { directory, project: { id: "prj_records", directory } }
    const info = yield* sessions.create({ location })
    return { id: info.id, location }
  })

/** What a host that died mid-Step leaves: step.started, an open text block and a running tool call. */
const strand = (sessionID: Identifier.SessionID) =>
  Effect.gen(function* () {
    const events = yield* SessionEvents.Service
    const assistantMessageID = Identifier.newMessageID() as typeof Identifier.SessionMessageID.Type
    const at = { timestamp: Date.now(), sessionID, assistantMessageID }
    yield* events.append(sessionID, [
      SessionEvents.draft("session.next.step.started", { ...at, agent: "build", model: { id: "m", providerID: "p" } }),
      SessionEvents.draft("session.next.text.started", { ...at, textID: "txt_open" }),
      SessionEvents.draft("session.next.text.started", { ...at, textID: "txt_closed" }),
      SessionEvents.draft("session.next.text.ended", { ...at, textID: "txt_closed", text: "done" }),
      SessionEvents.draft("session.next.tool.called", {
        ...at,
        callID: "call_1",
        tool: "echo",
        input: {},
        provider: { executed: false }
      })
    ])
    return at
  })

/** A Step that started and ended normally: two events, nothing left to do. */
const finishedStep = (sessionID: Identifier.SessionID) =>
  Effect.gen(function* () {
    const events = yield* SessionEvents.Service
    const assistantMessageID = Identifier.newMessageID() as typeof Identifier.SessionMessageID.Type
    const at = { timestamp: Date.now(), sessionID, assistantMessageID }
    yield* events.append(sessionID, [
      SessionEvents.draft("session.next.step.started", { ...at, agent: "build", model: { id: "m", providerID: "p" } }),
      SessionEvents.draft("session.next.step.ended", { ...at, finish: "stop", cost: 0, tokens })
    ])
  })

/** The tests run on the wall clock: timestamps and waits are real. */
const wallClock = Effect.withClock(Clock.make())

const tokens = { input: 1, output: 1, reasoning: 0, cache: { read: 0, write: 0 } }

layer(PostgresServer.layer(), { timeout: 120_000 })("record owners over both dialects", (it) => {
  for (const dialect of dialects) {
    describe(dialect, () => {
      it.scoped(
        "Recovery finds unfinished work through the owners' indexes and leaves none behind",
        () =>
          Effect.gen(function* () {
            const dir = yield* tempDir
            const live = yield* services(dialect)
            yield* Effect.gen(function* () {
              const recovery = yield* Recovery.Service
              const idle = yield* newSession(dir)
              const crashed = yield* newSession(dir)
              // Nothing unfinished: start-up finds nothing.
              expect(yield* MessageProjection.pendingWorkSessions()).toEqual([])
              expect(yield* recovery.run).toEqual({ stranded: 0, tools: 0, requests: 0, pending: [] })

              yield* strand(crashed.id)
              expect(yield* MessageProjection.pendingWorkSessions()).toEqual([crashed.id])
              const before = yield* Effect.flatMap(EventLog.Service, (log) => log.read(crashed.id))
              const report = yield* recovery.run
              expect(report).toEqual({ stranded: 1, tools: 1, requests: 0, pending: [] })
              const after = (yield* Effect.flatMap(EventLog.Service, (log) => log.read(crashed.id))).slice(
                before.length
              )
              // Only the open block is ended; the running call and the Step fail.
              expect(after.map((e) => e.type)).toEqual([
                "session.next.text.ended",
                "session.next.tool.failed",
                "session.next.step.failed"
              ])
              expect(after[0]!.data).toMatchObject({ textID: "txt_open" })
              // A failed Step leaves nothing for the next start-up.
              expect(yield* MessageProjection.pendingWorkSessions()).toEqual([])
              expect(yield* recovery.run).toEqual({ stranded: 0, tools: 0, requests: 0, pending: [] })

              // A Step that ended with tool calls is continued, until the session is interrupted.
              const events = yield* SessionEvents.Service
              const at = { timestamp: Date.now() - 1000, sessionID: idle.id }
              const assistantMessageID = Identifier.newMessageID() as typeof Identifier.SessionMessageID.Type
              yield* events.append(idle.id, [
                SessionEvents.draft("session.next.step.started", {
                  ...at,
                  assistantMessageID,
                  agent: "build",
                  model: { id: "m", providerID: "p" }
                })
              ])
              expect(yield* MessageProjection.pendingWorkSessions()).toEqual([idle.id])
              yield* events.append(idle.id, [
                SessionEvents.draft("session.next.step.ended", {
                  ...at,
                  assistantMessageID,
                  finish: "tool-calls",
                  cost: 0,
                  tokens
                })
              ])
              expect(yield* MessageProjection.pendingWorkSessions()).toEqual([idle.id])
              expect(yield* recovery.continues(idle.id)).toBe(true)
              expect((yield* recovery.run).pending).toEqual([idle.id])
              yield* recovery.interrupted(idle.id)
              expect(yield* recovery.continues(idle.id)).toBe(false)
              expect((yield* recovery.run).pending).toEqual([])
              expect(yield* SessionInput.pendingSessions()).toEqual([])
            }).pipe(Effect.provide(live))
          }).pipe(wallClock),
        120_000
      )

      it.scoped(
        "permission and question requests: pending, listed by Location, answered; runner asks are stranded",
        () =>
          Effect.gen(function* () {
            const dir = yield* tempDir
            const live = yield* services(dialect)
            yield* Effect.gen(function* () {
              const permissions = yield* PermissionRequests.Service
              const questions = yield* QuestionRequests.Service
              const session = yield* newSession(dir)
              const other = yield* newSession(path.join(dir, "elsewhere"))

              const created = yield* permissions.create(session.id, { action: "probe", resources: ["a", "b"] })
              expect(created.effect).toBe("ask")
              // Idempotent by id; another session's id is refused.
              expect(
                yield* permissions.create(session.id, { id: created.id, action: "probe", resources: ["a"] })
              ).toEqual(created)
              const refused = yield* permissions
                .create(other.id, { id: created.id, action: "probe", resources: ["a"] })
                .pipe(Effect.flip)
              expect(refused._tag).toBe("InvalidRequestError")
              expect((yield* permissions.list(session.id)).map((r) => r.id)).toEqual([created.id])
              expect((yield* permissions.listIn({ directory: dir })).map((r) => r.id)).toEqual([created.id])
              expect(yield* permissions.listIn({ directory: path.join(dir, "elsewhere") })).toEqual([])
              expect(yield* permissions.listIn({ directory: dir, workspaceID: "wrk_none" })).toEqual([])
              // A client's request is not a stranded call.
              expect(yield* permissions.strandedSessions()).toEqual([])
              yield* permissions.reply(session.id, created.id, { reply: "always" })
              expect(yield* permissions.list(session.id)).toEqual([])
              expect((yield* permissions.saved("prj_records")).map((s) => [s.action, s.resource])).toEqual([
                ["probe", "a"],
                ["probe", "b"]
              ])
              // Saved: the same action is allowed now.
              expect((yield* permissions.create(session.id, { action: "probe", resources: ["b"] })).effect).toBe(
                "allow"
              )
              const gone = yield* permissions.get(session.id, created.id).pipe(Effect.flip)
              expect(gone._tag).toBe("PermissionNotFoundError")

              // A question a call waits on is a runner request: stranded if its host stops.
              const asked = yield* Deferred.make<void>()
              const waiting = yield* questions
                .ask({
                  sessionID: session.id,
                  questions: [{ question: "Which?", header: "Pick", options: [{ label: "x", description: "x" }] }]
                })
                .pipe(Effect.fork)
              yield* Effect.gen(function* () {
                while ((yield* questions.list(session.id)).length === 0) yield* Effect.sleep("10 millis")
                yield* Deferred.succeed(asked, undefined)
              })
              const [question] = yield* questions.listIn({ directory: dir })
              expect(question?.sessionID).toBe(session.id)
              expect(yield* questions.strandedSessions()).toEqual([session.id])
              // This process still waits on it: recover leaves it.
              expect(yield* questions.recover(session.id)).toBe(0)
              yield* questions.reply(session.id, question!.id, [["x"]])
              expect(yield* Fiber.join(waiting)).toEqual([["x"]])
              expect(yield* questions.strandedSessions()).toEqual([])
            }).pipe(Effect.provide(live))
          }).pipe(wallClock),
        120_000
      )

      it.scoped(
        "instruction records: nested files in noted order, checkpoint seqs from the log, entries",
        () =>
          Effect.gen(function* () {
            const dir = yield* tempDir
            const live = yield* services(dialect)
            yield* Effect.gen(function* () {
              const session = yield* newSession(dir)
              fs.mkdirSync(path.join(dir, "b", "c"), { recursive: true })
              fs.mkdirSync(path.join(dir, "a"), { recursive: true })
              for (const sub of ["b", path.join("b", "c"), "a"]) {
                fs.writeFileSync(path.join(dir, sub, "AGENTS.md"), `rules of ${sub}`)
              }
              const nested = yield* NestedInstructions.Service
              expect(yield* nested.note(session.id, dir, path.join(dir, "b", "c", "f.ts"), "file")).toEqual([
                path.join(dir, "b", "AGENTS.md"),
                path.join(dir, "b", "c", "AGENTS.md")
              ])
              expect(yield* nested.note(session.id, dir, path.join(dir, "a", "g.ts"), "file")).toEqual([
                path.join(dir, "a", "AGENTS.md")
              ])
              // Idempotent: nothing new, order kept (noted order, not path order).
              expect(yield* nested.note(session.id, dir, path.join(dir, "b", "c", "f.ts"), "file")).toEqual([])
              const loaded = yield* nested.load(session.id, session.location)
              expect(Array.isArray(loaded) ? loaded.map((f: NestedInstructions.File) => f.path) : loaded).toEqual([
                path.join(dir, "b", "AGENTS.md"),
                path.join(dir, "b", "c", "AGENTS.md"),
                path.join(dir, "a", "AGENTS.md")
              ])

              const checkpoint = yield* InstructionCheckpoint.Service
              yield* finishedStep(session.id)
              const seq = yield* EventLog.lastSeq(session.id)
              expect(seq).toBe(2)
              const prepared = yield* checkpoint.prepare(session.id, nested.instructions(session.id, session.location))
              expect(prepared).toMatchObject({ _tag: "Prepared", baselineSeq: seq })
              expect(prepared._tag === "Prepared" ? prepared.baseline : "").toContain("rules of a")
              // A compaction recorded at an event of the session; an older one changes nothing.
              yield* checkpoint.recordCompaction(session.id, seq)
              yield* checkpoint.recordCompaction(session.id, seq - 1)
              const stored = yield* checkpoint.get(session.id)
              expect(stored._tag === "Some" ? stored.value.compactionSeq : undefined).toBe(seq)
              const beyond = yield* checkpoint.recordCompaction(session.id, seq + 100).pipe(Effect.exit)
              expect(beyond._tag).toBe("Failure")
              yield* checkpoint.reset(session.id)
              expect((yield* checkpoint.get(session.id))._tag).toBe("None")

              const entries = yield* InstructionEntries.Service
              yield* entries.put(session.id, "b-key", { deep: [1, "two", null] })
              yield* entries.put(session.id, "a-key", "first")
              yield* entries.put(session.id, "a-key", "second")
              expect(yield* entries.list(session.id)).toEqual([
                { name: "a-key", value: "second" },
                { name: "b-key", value: { deep: [1, "two", null] } }
              ])
              yield* entries.remove(session.id, "a-key")
              expect((yield* entries.list(session.id)).map((e) => e.name)).toEqual(["b-key"])
            }).pipe(Effect.provide(live))
          }).pipe(wallClock),
        120_000
      )
    })
  }
})
