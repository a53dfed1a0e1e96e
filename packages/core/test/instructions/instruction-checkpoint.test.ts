import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { it } from "@effect/vitest"
import { Errors, Identifier } from "@opencode-ai/schema"
import { Cause, Context, Deferred, Effect, Exit, Fiber, Layer, Option, Queue, Schema } from "effect"
import { describe, expect } from "vitest"
import { EventLog } from "../../src/event/event-log.js"
import { ContextUpdated } from "../../src/instructions/context-updated.js"
import { InstructionCheckpoint } from "../../src/instructions/instruction-checkpoint.js"
import { InstructionDiscovery } from "../../src/instructions/instruction-discovery.js"
import { InstructionEntries } from "../../src/instructions/instruction-entries.js"
import { Instructions } from "../../src/instructions/instructions.js"
import { McpGuidance } from "../../src/instructions/mcp-guidance.js"
import { SessionInstructions } from "../../src/instructions/session-instructions.js"
import { SessionEvents } from "../../src/session/session-events.js"
import { Sessions } from "../../src/session/sessions.js"
import { contextUpdates, eventTypes, unreadable, type World, world, write } from "./world.js"

// Every test drives `prepare` directly at simulated Safe Step Boundaries over a real SQLite session;
// the runner that calls it at real boundaries comes with the execution issue.

const files = (w: World) => ({
  global: path.join(w.configDir, "AGENTS.md"),
  root: path.join(w.root, "AGENTS.md"),
  app: path.join(w.app, "AGENTS.md")
})

/** The usual files: a global rule, a project-root rule and a rule next to the Location. */
const furnish = (w: World) =>
  Effect.all([
    write(files(w).global, "Global: be brief.\n"),
    write(files(w).root, "Root: use pnpm.\n"),
    write(files(w).app, "App: tabs, not spaces.\n")
  ])

const createSession = (w: World) =>
  Effect.flatMap(Sessions.Service, (sessions) => sessions.create({ location: w.location }))

/** One simulated Safe Step Boundary: compose the session's Instructions, then prepare. */
const boundary = <R = never>(
  sessionID: Identifier.SessionID,
  location: World["location"],
  producers?: SessionInstructions.Producers<R>,
  extra: Instructions.Instructions<R> = Instructions.empty
) =>
  Effect.gen(function* () {
    const composed = yield* SessionInstructions.forSession(sessionID, location, producers)
    return yield* (yield* InstructionCheckpoint.Service).prepare(sessionID, Instructions.combine(composed, extra))
  })

const asPrepared = (preparation: InstructionCheckpoint.Preparation): InstructionCheckpoint.Prepared => {
  expect(preparation._tag).toBe("Prepared")
  return preparation as InstructionCheckpoint.Prepared
}

const stored = (sessionID: Identifier.SessionID) =>
  Effect.flatMap(InstructionCheckpoint.Service, (checkpoint) => checkpoint.get(sessionID)).pipe(
    Effect.map(Option.getOrThrowWith(() => new Error("no checkpoint stored")))
  )

const rawBaseline = (sessionID: Identifier.SessionID) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{
        readonly baseline_text: string
      }>`SELECT baseline_text FROM instruction_checkpoint WHERE session_id = ${sessionID}`
  ).pipe(
    Effect.map((rows) => rows[0]?.baseline_text),
    Effect.orDie
  )

const lastSeq = (sessionID: Identifier.SessionID) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ readonly seq: number }>`SELECT seq FROM event_sequence WHERE aggregate_id = ${sessionID}`
  ).pipe(
    Effect.map((rows) => rows[0]?.seq),
    Effect.orDie
  )

/** A source whose load waits for `gate` after signalling `entered`; its value never changes. */
const gated = (entered: Deferred.Deferred<void>, gate: Deferred.Deferred<void>) =>
  Instructions.make({
    key: "test/gate",
    codec: Schema.String,
    load: Effect.zipRight(Deferred.succeed(entered, undefined), Effect.as(Deferred.await(gate), "steady")),
    baseline: () => "",
    update: () => ""
  })

describe("InstructionCheckpoint", () => {
  describe("The first Step renders the latest complete Instruction Baseline and creates its InstructionCheckpoint without emitting a redundant Instruction Update; an unavailable initial source blocks the Step instead of persisting an incomplete baseline.", () => {
    it.scoped(
      "the first prepare stores the complete baseline and emits no event; the next one says nothing either",
      () =>
        Effect.gen(function* () {
          const w = yield* world
          yield* furnish(w)
          yield* Effect.gen(function* () {
            const session = yield* createSession(w)
            const composed = yield* SessionInstructions.forSession(session.id, w.location)
            const expected = (yield* Instructions.initialize(composed)) as Instructions.Complete

            const first = asPrepared(yield* boundary(session.id, w.location))
            expect(first).toEqual({ _tag: "Prepared", baseline: expected.text, baselineSeq: 0 })
            for (const rule of ["Global: be brief.", "Root: use pnpm.", "App: tabs, not spaces."])
              expect(first.baseline).toContain(rule)
            expect(yield* eventTypes(session.id)).toEqual([])
            expect(yield* stored(session.id)).toEqual({
              baseline: expected.text,
              baselineSeq: 0,
              applied: expected.applied
            })

            expect(yield* boundary(session.id, w.location)).toEqual(first)
            expect(yield* eventTypes(session.id)).toEqual([])
          }).pipe(Effect.provide(w.core()))
        })
    )

    it.scoped("an unavailable initial source blocks and writes nothing; once readable the baseline is created", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        const readable = yield* unreadable(files(w).app)
        yield* Effect.gen(function* () {
          const session = yield* createSession(w)
          expect(yield* boundary(session.id, w.location)).toEqual({
            _tag: "Blocked",
            unavailable: [InstructionDiscovery.key]
          })
          expect(yield* (yield* InstructionCheckpoint.Service).get(session.id)).toEqual(Option.none())
          expect(yield* eventTypes(session.id)).toEqual([])
          expect(yield* lastSeq(session.id)).toBe(0)

          yield* readable
          yield* write(files(w).app, "App: tabs, not spaces.\n")
          const first = asPrepared(yield* boundary(session.id, w.location))
          expect(first.update).toBeUndefined()
          expect(first.baseline).toContain("App: tabs, not spaces.")
          expect(yield* eventTypes(session.id)).toEqual([])
        }).pipe(Effect.provide(w.core()))
      })
    )
  })

  describe("Applied Instructions advances atomically with the corresponding durable Instruction Update.", () => {
    it.scoped(
      "after an AGENTS.md edit the next prepare publishes exactly one context.updated, with Applied advanced",
      () =>
        Effect.gen(function* () {
          const w = yield* world
          yield* furnish(w)
          yield* Effect.gen(function* () {
            const session = yield* createSession(w)
            const first = asPrepared(yield* boundary(session.id, w.location))
            const before = yield* stored(session.id)

            yield* write(files(w).app, "App: two-space indents.\n")
            const second = asPrepared(yield* boundary(session.id, w.location))
            expect(second.baseline).toBe(first.baseline)
            expect(second.update?.seq).toBe(1)
            expect(second.update?.text).toContain("App: two-space indents.")
            expect(second.update?.text).toContain("replace all instruction files loaded earlier")
            // The complete current set, not a diff: the unchanged files are restated too.
            expect(second.update?.text).toContain("Root: use pnpm.")

            const updates = yield* contextUpdates(session.id)
            expect(updates).toHaveLength(1)
            expect(updates[0]?.durable).toEqual({ aggregateID: session.id, seq: 1, version: 1 })
            expect(updates[0]?.data).toEqual({
              timestamp: expect.any(Number),
              sessionID: session.id,
              messageID: second.update?.messageID,
              text: second.update?.text
            })

            const after = yield* stored(session.id)
            expect(after.baseline).toBe(before.baseline)
            expect(after.applied).not.toEqual(before.applied)
            const discovered = after.applied.sources.find((source) => source.key === InstructionDiscovery.key)
            expect(JSON.stringify(discovered?.value)).toContain("App: two-space indents.")
          }).pipe(Effect.provide(w.core()))
        })
    )

    it.scoped("when the projection fails, neither the event nor the Applied change is committed", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const session = yield* createSession(w)
          asPrepared(yield* boundary(session.id, w.location))
          const before = yield* stored(session.id)

          // A real failure inside the append's transaction: the Applied write is refused.
          // (Trigger syntax is the one place the dialects differ here.)
          yield* sql.onDialectOrElse({
            pg: () =>
              Effect.zipRight(
                sql`CREATE FUNCTION refuse_applied() RETURNS trigger LANGUAGE plpgsql
                    AS $$ BEGIN RAISE EXCEPTION 'applied refused'; END $$`,
                sql`CREATE TRIGGER refuse_applied BEFORE UPDATE ON instruction_checkpoint
                    FOR EACH ROW EXECUTE FUNCTION refuse_applied()`
              ),
            orElse: () => sql`CREATE TRIGGER refuse_applied BEFORE UPDATE ON instruction_checkpoint
                              BEGIN SELECT RAISE(ABORT, 'applied refused'); END`
          })
          yield* write(files(w).app, "App: two-space indents.\n")
          const failed = yield* Effect.exit(boundary(session.id, w.location))
          expect(Exit.isFailure(failed) && Cause.isDie(failed.cause)).toBe(true)
          expect(yield* eventTypes(session.id)).toEqual([])
          expect(yield* lastSeq(session.id)).toBe(0)
          expect(yield* stored(session.id)).toEqual(before)

          yield* sql.onDialectOrElse({
            pg: () => sql`DROP TRIGGER refuse_applied ON instruction_checkpoint`,
            orElse: () => sql`DROP TRIGGER refuse_applied`
          })
          const retried = asPrepared(yield* boundary(session.id, w.location))
          expect(retried.update?.seq).toBe(1)
          expect(yield* contextUpdates(session.id)).toHaveLength(1)
        }).pipe(Effect.provide(w.core()))
      })
    )

    it.scoped("an update whose text is empty advances Applied silently", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        yield* Effect.gen(function* () {
          const session = yield* createSession(w)
          asPrepared(yield* boundary(session.id, w.location))
          // A newly composed MCP source with no servers renders nothing, yet it is now applied.
          const quiet = asPrepared(yield* boundary(session.id, w.location, { mcp: Effect.succeed([]) }))
          expect(quiet.update).toBeUndefined()
          expect(yield* eventTypes(session.id)).toEqual([])
          expect((yield* stored(session.id)).applied.sources.map((source) => source.key)).toContain(McpGuidance.key)
        }).pipe(Effect.provide(w.core()))
      })
    )
  })

  describe("An Instruction Update persists the exact combined rendered text sent to the model through session.instructions.updated.", () => {
    // The reference contract names the event session.next.context.updated; it is the same durable message.
    it.scoped("the event carries exactly the reconciled text, byte for byte", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        yield* Effect.gen(function* () {
          const session = yield* createSession(w)
          asPrepared(yield* boundary(session.id, w.location))
          const applied = (yield* stored(session.id)).applied
          yield* write(files(w).app, "App: ünïcode   \r\n  and trailing blanks  \n\n")
          yield* (yield* InstructionEntries.Service).put(session.id, "ticket", { id: 42 })

          const expected = (yield* Instructions.reconcile(
            yield* SessionInstructions.forSession(session.id, w.location),
            applied
          )) as Instructions.Updated
          const admitted = asPrepared(yield* boundary(session.id, w.location))
          expect(admitted.update?.text).toBe(expected.text)
          const [event] = yield* contextUpdates(session.id)
          expect(Buffer.from(event!.data.text).equals(Buffer.from(expected.text))).toBe(true)
          expect(event!.data.messageID).toBe(admitted.update?.messageID)
          expect((yield* stored(session.id)).applied).toEqual(expected.applied)
        }).pipe(Effect.provide(w.core()))
      })
    )
  })

  describe("Applied Instructions advances atomically with the corresponding durable Instruction Update: two Safe Step Boundaries racing on one session admit one update, not two.", () => {
    it.scoped("two concurrent prepares in one process", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        yield* Effect.gen(function* () {
          const session = yield* createSession(w)
          const open = yield* Deferred.make<void>()
          yield* Deferred.succeed(open, undefined)
          asPrepared(yield* boundary(session.id, w.location, {}, gated(yield* Deferred.make<void>(), open)))

          yield* write(files(w).app, "App: two-space indents.\n")
          const entered = yield* Deferred.make<void>()
          const gate = yield* Deferred.make<void>()
          const racers = yield* Effect.forEach(
            [1, 2],
            () => Effect.fork(boundary(session.id, w.location, {}, gated(entered, gate))),
            { concurrency: "unbounded" }
          )
          yield* Deferred.await(entered)
          yield* Deferred.succeed(gate, undefined)
          const results = (yield* Effect.forEach(racers, Fiber.join)).map(asPrepared)

          expect(results.filter((result) => result.update !== undefined)).toHaveLength(1)
          expect(yield* contextUpdates(session.id)).toHaveLength(1)
          expect(yield* lastSeq(session.id)).toBe(1)
        }).pipe(Effect.provide(w.core()))
      })
    )

    it.scoped(
      "two hosts on one database file: the late writer's compare-and-set fails, it starts over and finds nothing new",
      () =>
        Effect.gen(function* () {
          const w = yield* world
          yield* furnish(w)
          const scope = yield* Effect.scope
          const hostA = yield* Layer.buildWithScope(w.core(), scope)
          const hostB = yield* Layer.buildWithScope(w.core(), scope)
          const inA = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.provide(effect, hostA) as Effect.Effect<A, E>
          const inB = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.provide(effect, hostB) as Effect.Effect<A, E>

          const session = yield* inA(createSession(w))
          const open = yield* Deferred.make<void>()
          yield* Deferred.succeed(open, undefined)
          asPrepared(yield* inA(boundary(session.id, w.location, {}, gated(yield* Deferred.make<void>(), open))))

          yield* write(files(w).app, "App: two-space indents.\n")
          const entered = yield* Deferred.make<void>()
          const gate = yield* Deferred.make<void>()
          // A reads the checkpoint, then waits in a load; B admits the update meanwhile.
          const late = yield* Effect.fork(inA(boundary(session.id, w.location, {}, gated(entered, gate))))
          yield* Deferred.await(entered)
          const early = asPrepared(
            yield* inB(boundary(session.id, w.location, {}, gated(yield* Deferred.make<void>(), open)))
          )
          expect(early.update?.seq).toBe(1)
          yield* Deferred.succeed(gate, undefined)
          const lateResult = asPrepared(yield* Fiber.join(late))

          expect(lateResult.update).toBeUndefined()
          expect(yield* inA(contextUpdates(session.id))).toHaveLength(1)
          expect(yield* inA(lastSeq(session.id))).toBe(1)
          expect(Context.get(hostA, InstructionCheckpoint.Service)).not.toBe(
            Context.get(hostB, InstructionCheckpoint.Service)
          )
        })
    )
  })

  describe("Changes from multiple Instruction Sources admitted at one safe boundary combine into one Instruction Update.", () => {
    it.scoped("an AGENTS.md edit and a new entry become one context.updated", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        yield* Effect.gen(function* () {
          const session = yield* createSession(w)
          asPrepared(yield* boundary(session.id, w.location))
          yield* write(files(w).root, "Root: use pnpm 12.\n")
          yield* (yield* InstructionEntries.Service).put(session.id, "ticket", { id: 42 })
          const next = asPrepared(yield* boundary(session.id, w.location))
          expect(next.update?.text).toContain("Root: use pnpm 12.")
          expect(next.update?.text).toContain(`<context name="ticket">`)
          expect(next.update!.text.indexOf("Root: use pnpm 12.")).toBeLessThan(next.update!.text.indexOf("<context"))
          expect(yield* contextUpdates(session.id)).toHaveLength(1)
        }).pipe(Effect.provide(w.core()))
      })
    )
  })

  describe("Completed compaction rebaselines the InstructionCheckpoint from current Instructions and removes earlier Instruction Updates from active projected model history while preserving durable audit history.", () => {
    it.scoped(
      "a compaction recorded in its own event's transaction makes the next prepare fold the updates into a new baseline",
      () =>
        Effect.gen(function* () {
          const w = yield* world
          yield* furnish(w)
          yield* Effect.gen(function* () {
            const log = yield* EventLog.Service
            const session = yield* createSession(w)
            const first = asPrepared(yield* boundary(session.id, w.location))
            yield* write(files(w).app, "App: two-space indents.\n")
            const updated = asPrepared(yield* boundary(session.id, w.location))
            expect(updated.update?.seq).toBe(1)
            yield* write(files(w).app, "App: four-space indents.\n")

            // Stand-in for the compaction issue's completed-compaction event, recording in its projection.
            const [compacted] = yield* log.append(
              session.id,
              [{ type: "test.compacted", version: 1, data: {} }],
              (events) => InstructionCheckpoint.markCompacted(session.id, events[0]!.durable.seq)
            )
            expect(compacted?.durable.seq).toBe(2)

            const rebased = asPrepared(yield* boundary(session.id, w.location))
            expect(rebased.update).toBeUndefined()
            expect(rebased.baselineSeq).toBe(2)
            expect(rebased.baseline).not.toBe(first.baseline)
            expect(rebased.baseline).toContain("App: four-space indents.")
            expect(rebased.baseline).not.toContain("two-space")
            // The baseline restates the current set as a baseline, not as a superseding update.
            expect(rebased.baseline).not.toContain("replace all instruction files")
            // Durable audit history keeps the earlier update; the runner cuts history at baselineSeq.
            expect(yield* eventTypes(session.id)).toEqual([ContextUpdated.type, "test.compacted"])
            expect(yield* stored(session.id)).toMatchObject({
              baseline: rebased.baseline,
              baselineSeq: 2,
              compactionSeq: 2
            })

            // Rebaselined once: the next boundary keeps the new baseline and says nothing.
            expect(yield* boundary(session.id, w.location)).toEqual(rebased)
          }).pipe(Effect.provide(w.core()))
        })
    )

    it.scoped("compacted: the compaction message and the new baseline commit in ONE transaction, or neither does", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        yield* Effect.gen(function* () {
          const checkpoint = yield* InstructionCheckpoint.Service
          const session = yield* createSession(w)
          const first = asPrepared(yield* boundary(session.id, w.location))
          yield* write(files(w).app, "App: two-space indents.\n")
          expect(asPrepared(yield* boundary(session.id, w.location)).update).toBeDefined()
          yield* write(files(w).app, "App: four-space indents.\n")
          const composed = yield* SessionInstructions.forSession(session.id, w.location)
          const ended = (messageID: string) =>
            SessionEvents.draft("session.next.compaction.ended", {
              timestamp: 1,
              sessionID: session.id as never,
              messageID: messageID as never,
              reason: "manual",
              text: "the summary",
              recent: ""
            })

          // A completion the log rejects (its message exists already) rolls the baseline back too.
          const updateMessage = (yield* contextUpdates(session.id))[0]!.data.messageID
          const rejected = yield* Effect.exit(checkpoint.compacted(session.id, composed, [ended(updateMessage)]))
          expect(Exit.isFailure(rejected)).toBe(true)
          expect(yield* stored(session.id)).toMatchObject({ baseline: first.baseline, baselineSeq: 0 })

          const done = yield* checkpoint.compacted(session.id, composed, [ended("msg_compaction")])
          expect(done).toEqual({ seq: 2, rebaselined: true })
          const now = yield* stored(session.id)
          expect(now).toMatchObject({ baselineSeq: 2, compactionSeq: 2 })
          expect(now.baseline).toContain("App: four-space indents.")
          // The next boundary keeps it: nothing to rebaseline, nothing to update.
          expect(asPrepared(yield* boundary(session.id, w.location))).toEqual({
            _tag: "Prepared",
            baseline: now.baseline,
            baselineSeq: 2
          })
        }).pipe(Effect.provide(w.core()))
      })
    )

    it.scoped(
      "recordCompaction records standalone; an older seq or a session without checkpoint changes nothing; a seq past the log is a defect",
      () =>
        Effect.gen(function* () {
          const w = yield* world
          yield* furnish(w)
          yield* Effect.gen(function* () {
            const checkpoint = yield* InstructionCheckpoint.Service
            const log = yield* EventLog.Service
            const session = yield* createSession(w)
            // seq 1, the session's first event (its session.created origin is seq 0, never compacted).
            yield* log.append(session.id, [{ type: "test.noted", version: 1, data: {} }])
            // No checkpoint yet: nothing to mark, and the first prepare initializes anyway.
            yield* checkpoint.recordCompaction(session.id, 1)
            expect(yield* checkpoint.get(session.id)).toEqual(Option.none())

            const first = asPrepared(yield* boundary(session.id, w.location))
            // A compaction at or before the baseline is already reflected in it.
            yield* checkpoint.recordCompaction(session.id, 1)
            yield* write(files(w).app, "App: two-space indents.\n")
            expect(asPrepared(yield* boundary(session.id, w.location)).update).toBeDefined()

            yield* write(files(w).app, "App: four-space indents.\n")
            yield* log.append(session.id, [{ type: "test.compacted", version: 1, data: {} }])
            yield* checkpoint.recordCompaction(session.id, 3)
            yield* checkpoint.recordCompaction(session.id, 2)
            expect((yield* stored(session.id)).compactionSeq).toBe(3)
            const rebased = asPrepared(yield* boundary(session.id, w.location))
            expect(rebased.update).toBeUndefined()
            expect(rebased.baseline).toContain("App: four-space indents.")
            expect(rebased.baseline).not.toBe(first.baseline)

            const beyond = yield* Effect.exit(checkpoint.recordCompaction(session.id, 99))
            expect(Exit.isFailure(beyond) && Cause.isDie(beyond.cause)).toBe(true)
          }).pipe(Effect.provide(w.core()))
        })
    )
  })

  describe("Moving a Session resets its InstructionCheckpoint, so the destination must initialize a complete baseline before another prompt can promote. Committed revert also resets the checkpoint.", () => {
    it.scoped("reset forces a fresh baseline (no update); it is idempotent", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        yield* Effect.gen(function* () {
          const checkpoint = yield* InstructionCheckpoint.Service
          const session = yield* createSession(w)
          asPrepared(yield* boundary(session.id, w.location))
          yield* write(files(w).app, "App: two-space indents.\n")

          yield* checkpoint.reset(session.id)
          yield* checkpoint.reset(session.id)
          expect(yield* checkpoint.get(session.id)).toEqual(Option.none())

          const fresh = asPrepared(yield* boundary(session.id, w.location))
          expect(fresh.update).toBeUndefined()
          expect(fresh.baseline).toContain("App: two-space indents.")
          expect(fresh.baselineSeq).toBe(0)
          expect(yield* eventTypes(session.id)).toEqual([])
        }).pipe(Effect.provide(w.core()))
      })
    )

    it.scoped(
      "Location-scoped instruction producers naturally re-resolve when a moved Session next runs in its destination Location.",
      () =>
        Effect.gen(function* () {
          const w = yield* world
          yield* furnish(w)
          const elsewhere = path.join(w.dir, "other")
          yield* write(path.join(elsewhere, "AGENTS.md"), "Other: run make.\n")
          const destination = { directory: elsewhere, project: { id: "prj_other", directory: elsewhere } }
          yield* Effect.gen(function* () {
            const session = yield* createSession(w)
            asPrepared(yield* boundary(session.id, w.location))
            yield* (yield* InstructionCheckpoint.Service).reset(session.id)
            const moved = asPrepared(yield* boundary(session.id, destination))
            expect(moved.update).toBeUndefined()
            expect(moved.baseline).toContain("Other: run make.")
            expect(moved.baseline).not.toContain("App: tabs")
            expect(moved.baseline).toContain("Global: be brief.")
          }).pipe(Effect.provide(w.core()))
        })
    )

    it.scoped("clear deletes the checkpoint inside the caller's transaction and rolls back with it", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        yield* Effect.gen(function* () {
          const log = yield* EventLog.Service
          const checkpoint = yield* InstructionCheckpoint.Service
          const session = yield* createSession(w)
          asPrepared(yield* boundary(session.id, w.location))
          const refused = yield* Effect.exit(
            log.append(session.id, [{ type: "test.moved", version: 1, data: {} }], () =>
              Effect.zipRight(InstructionCheckpoint.clear(session.id), Effect.fail("refused" as const))
            )
          )
          expect(refused).toEqual(Exit.fail("refused"))
          expect(Option.isSome(yield* checkpoint.get(session.id))).toBe(true)
          yield* log.append(session.id, [{ type: "test.moved", version: 1, data: {} }], () =>
            InstructionCheckpoint.clear(session.id)
          )
          expect(yield* checkpoint.get(session.id)).toEqual(Option.none())
        }).pipe(Effect.provide(w.core()))
      })
    )
  })

  describe("An Instruction Baseline is stored durably and reused verbatim across process restarts until rebaseline or reset.", () => {
    it.scoped("reopening the database file returns the same baseline bytes, even after the sources changed", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        // Bytes that a careless round trip would change: CRLF, trailing blanks, non-ASCII, an astral emoji.
        yield* write(files(w).app, "App: façade naïve — 🚀\r\nkeep   \r\n\r\n")
        const [sessionID, first] = yield* Effect.gen(function* () {
          const session = yield* createSession(w)
          const prepared = asPrepared(yield* boundary(session.id, w.location))
          return [session.id, prepared] as const
        }).pipe(Effect.provide(w.core()))

        yield* write(files(w).app, "App: rewritten while the process was down.\n")
        yield* Effect.gen(function* () {
          const again = asPrepared(yield* boundary(sessionID, w.location))
          expect(Buffer.from(again.baseline, "utf8").equals(Buffer.from(first.baseline, "utf8"))).toBe(true)
          expect(again.baselineSeq).toBe(first.baselineSeq)
          expect(again.update?.text).toContain("App: rewritten while the process was down.")
          expect(yield* rawBaseline(sessionID)).toBe(first.baseline)
        }).pipe(Effect.provide(w.core()))

        yield* Effect.gen(function* () {
          expect((yield* stored(sessionID)).baseline).toBe(first.baseline)
          expect(yield* boundary(sessionID, w.location)).toEqual(first)
        }).pipe(Effect.provide(w.core()))
      })
    )
  })

  describe("An Instruction Baseline durably preserves the exact joined text used for its part of the active provider-cache prefix.", () => {
    it.scoped("the stored text is exactly the joined baseline rendering that prepare hands to the request", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        yield* Effect.gen(function* () {
          const session = yield* createSession(w)
          yield* (yield* InstructionEntries.Service).put(session.id, "style", "Be terse.")
          const composed = yield* SessionInstructions.forSession(session.id, w.location)
          const expected = (yield* Instructions.initialize(composed)) as Instructions.Complete
          const first = asPrepared(yield* boundary(session.id, w.location))
          expect(first.baseline).toBe(expected.text)
          expect(yield* rawBaseline(session.id)).toBe(expected.text)
          // The joins are part of the prefix: the renderings separated by Instructions.separator.
          expect(expected.text.split(Instructions.separator).length).toBeGreaterThan(3)
        }).pipe(Effect.provide(w.core()))
      })
    )
  })

  describe("Once admitted, an Instruction Update remains durable even if the following Physical Attempt fails and is replayed unchanged on retry.", () => {
    it.scoped("after the update, a retried boundary admits nothing new and the update stays in the log unchanged", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        yield* Effect.gen(function* () {
          const session = yield* createSession(w)
          asPrepared(yield* boundary(session.id, w.location))
          yield* write(files(w).app, "App: two-space indents.\n")
          const admitted = asPrepared(yield* boundary(session.id, w.location))
          // …the provider attempt fails here; the retry prepares again before replaying history.
          const retry = asPrepared(yield* boundary(session.id, w.location))
          expect(retry.update).toBeUndefined()
          expect(retry.baseline).toBe(admitted.baseline)
          const updates = yield* contextUpdates(session.id)
          expect(updates.map((update) => update.data)).toEqual([
            {
              timestamp: expect.any(Number),
              sessionID: session.id,
              messageID: admitted.update?.messageID,
              text: admitted.update?.text
            }
          ])
        }).pipe(Effect.provide(w.core()))
      })
    )
  })

  describe("Instruction source changes never wake idle Sessions; the next naturally scheduled Safe Step Boundary loads and compares current values lazily.", () => {
    it.scoped("edits and entry changes publish nothing and load nothing until prepare is called", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        yield* Effect.gen(function* () {
          const log = yield* EventLog.Service
          const session = yield* createSession(w)
          let loads = 0
          const counted = Instructions.make({
            key: "test/counted",
            codec: Schema.Number,
            load: Effect.sync(() => ++loads && 7),
            baseline: (n) => `counted ${n}`,
            update: (n) => `counted now ${n}`
          })
          asPrepared(yield* boundary(session.id, w.location, {}, counted))
          expect(loads).toBe(1)
          const live = yield* log.subscribe
          const before = yield* stored(session.id)

          // prepare is only ever called explicitly (by the runner at a boundary); nothing watches sources.
          yield* write(files(w).app, "App: two-space indents.\n")
          yield* (yield* InstructionEntries.Service).put(session.id, "ticket", "ABC-1")
          yield* Effect.yieldNow()
          expect(yield* Queue.size(live)).toBe(0)
          expect(loads).toBe(1)
          expect(yield* stored(session.id)).toEqual(before)
          expect(yield* eventTypes(session.id)).toEqual([])

          const next = asPrepared(yield* boundary(session.id, w.location, {}, counted))
          expect(loads).toBe(2)
          expect(next.update?.text).toContain("App: two-space indents.")
          expect(next.update?.text).toContain("ABC-1")
          expect(yield* Queue.size(live)).toBe(1)
        }).pipe(Effect.provide(w.core()))
      })
    )
  })

  describe("Unavailable Instruction Source uses stale-while-revalidate semantics and is distinct from a successfully loaded absence, which may emit removal text.", () => {
    it.scoped(
      "an unreadable AGENTS.md keeps the prior belief silently; deleting the files says they no longer apply",
      () =>
        Effect.gen(function* () {
          const w = yield* world
          yield* write(files(w).app, "App: tabs, not spaces.\n")
          yield* Effect.gen(function* () {
            const session = yield* createSession(w)
            asPrepared(yield* boundary(session.id, w.location))
            const before = yield* stored(session.id)

            const readable = yield* unreadable(files(w).app)
            expect(asPrepared(yield* boundary(session.id, w.location)).update).toBeUndefined()
            expect(yield* stored(session.id)).toEqual(before)

            yield* readable
            const gone = asPrepared(yield* boundary(session.id, w.location))
            expect(gone.update?.text).toContain("no longer apply")
            expect(yield* contextUpdates(session.id)).toHaveLength(1)
          }).pipe(Effect.provide(w.core()))
        })
    )
  })

  describe("A newly composed Instruction Source absent from Applied Instructions emits its baseline rendering once at the next Safe Step Boundary.", () => {
    it.scoped("MCP guidance composed after the baseline is told once", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* furnish(w)
        yield* Effect.gen(function* () {
          const session = yield* createSession(w)
          asPrepared(yield* boundary(session.id, w.location))
          const producers = { mcp: Effect.succeed([{ name: "docs", instructions: "Search the docs first." }]) }
          const told = asPrepared(yield* boundary(session.id, w.location, producers))
          expect(told.update?.text).toBe(
            McpGuidance.baseline([{ name: "docs", instructions: "Search the docs first." }])
          )
          expect(asPrepared(yield* boundary(session.id, w.location, producers)).update).toBeUndefined()
          expect(yield* contextUpdates(session.id)).toHaveLength(1)
        }).pipe(Effect.provide(w.core()))
      })
    )
  })

  it.scoped("an unknown session is SessionNotFoundError for prepare, reset, recordCompaction and get", () =>
    Effect.gen(function* () {
      const w = yield* world
      yield* Effect.gen(function* () {
        const checkpoint = yield* InstructionCheckpoint.Service
        const missing = Identifier.SessionID.make("ses_missing")
        const expected = Exit.fail(Errors.SessionNotFoundError.of(missing))
        expect(yield* Effect.exit(checkpoint.prepare(missing, Instructions.empty))).toEqual(expected)
        expect(yield* Effect.exit(checkpoint.reset(missing))).toEqual(expected)
        expect(yield* Effect.exit(checkpoint.recordCompaction(missing, 1))).toEqual(expected)
        expect(yield* Effect.exit(checkpoint.get(missing))).toEqual(expected)
      }).pipe(Effect.provide(w.core()))
    })
  )
})
