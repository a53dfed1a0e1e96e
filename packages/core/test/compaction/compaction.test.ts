import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { CompactionPrompt, InstructionCheckpoint, LiveBus, SessionHistory, Sessions } from "@opencode-ai/core"
import { ChatRequest, ContextLimitedModel, LLMScript } from "@opencode-ai/core/testing"
import { Effect, Fiber, Option, Stream } from "effect"
import { world } from "../runner/world.js"

const { reply, text, toolCall, usage, finish, hold, gate, overflow } = LLMScript

/** A compaction model's answer: the summary, in the template's sections. */
const summary = (objective: string) =>
  reply(
    text(
      `## Objective\n- ${objective}\n\n## Important Details\n- (none)\n\n## Work State\n### Completed\n- (none)\n\n### Active\n- (none)\n\n### Blocked\n- (none)\n\n## Next Move\n1. (none)\n\n## Relevant Files\n- (none)`
    ),
    finish("stop")
  )

const lastOf = <A>(items: ReadonlyArray<A>, predicate: (item: A) => boolean): A | undefined =>
  [...items].reverse().find(predicate)

/**
 * A model with a 4,000-token context and a 500-token output: usable = 4000 − 500 − 400 reserved (a
 * tenth) = 3100 tokens. The task tool (its description lists the subagents) is not offered, so the
 * fixed part of the request stays small.
 */
const smallWorld = world({ limit: { context: 4000, output: 500 }, agent: { build: { permission: { task: "deny" } } } })

/** A session whose prompt "first" was answered "one". */
const afterOnePrompt = Effect.gen(function* () {
  const w = yield* world()
  yield* w.server.enqueue(reply(text("one"), finish("stop")))
  yield* w.prompt("first")
  yield* w.wait
  return w
})

/** An automatic compaction with its continuation, then the Step it made room for, answering with text. */
const compactedThenAnswered = [
  "compaction.started",
  "compaction.ended",
  "synthetic",
  "step.started",
  "text.started",
  "text.ended",
  "step.ended"
]

/** The request body's messages as one string, for looking for texts whatever the part layout. */
const wire = (request: { readonly body: any }) => JSON.stringify(request.body.messages)
const systemOf = ChatRequest.system

describe("Compaction", () => {
  it.scopedLive(
    "Completed compaction rebaselines the InstructionCheckpoint from current Instructions and removes earlier Instruction Updates from active projected model history while preserving durable audit history.",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        fs.writeFileSync(path.join(w.directory, "AGENTS.md"), "Rule one.")
        fs.mkdirSync(path.join(w.directory, "sub"))
        fs.writeFileSync(path.join(w.directory, "sub", "AGENTS.md"), "Nested rule.")
        fs.writeFileSync(path.join(w.directory, "sub", "notes.txt"), "some notes")
        yield* w.server.enqueue(
          reply(toolCall("call_1", "read", { path: path.join(w.directory, "sub", "notes.txt") })),
          reply(text("read it"), finish("stop"))
        )
        yield* w.prompt("first")
        yield* w.wait
        // The root AGENTS.md changes: the next Step gets an Instruction Update, not a new baseline.
        fs.writeFileSync(path.join(w.directory, "AGENTS.md"), "Rule two.")
        yield* w.server.enqueue(reply(text("second answer"), finish("stop")))
        yield* w.prompt("second")
        yield* w.wait
        const before = yield* w.server.requests
        expect(systemOf(before[2]!)).toContain("Rule one.")
        expect(wire(before[2]!)).toContain("Rule two.")

        // A manual compaction of the idle session.
        const bus = yield* w.run(LiveBus.Service)
        const live = yield* bus.subscribe()
        const deltas = yield* live.pipe(
          Stream.filter((event) => event.type === "session.next.compaction.delta"),
          Stream.take(1),
          Stream.runCollect,
          Effect.fork
        )
        yield* w.server.enqueue(summary("Answer two prompts"))
        yield* w.compact
        yield* w.wait
        const [delta] = [...(yield* Fiber.join(deltas))]
        expect(delta?.data).toMatchObject({ sessionID: w.session.id, text: expect.any(String) })

        const compaction = (yield* w.server.requests)[3]!
        expect(systemOf(compaction)).toBe(CompactionPrompt.system)
        expect(compaction.body.tools).toBeUndefined()
        expect(wire(compaction)).toContain("<conversation>")
        // The first turn is summarized; the latest prompt and its answer are kept word for word.
        expect(wire(compaction)).toContain("User: first")
        expect(wire(compaction)).not.toContain("second answer")

        const events = yield* w.events
        const types = events.map((event) => event.type)
        const ended = events.find((event) => event.type === "session.next.compaction.ended")!
        expect(types.slice(-2)).toEqual(["session.next.compaction.started", "session.next.compaction.ended"])
        expect(ended.data).toMatchObject({
          reason: "manual",
          text: expect.stringContaining("Answer two prompts"),
          recent: "User: second\n\nAssistant: second answer"
        })
        // Idle: no continuation was written.
        expect(types).not.toContain("session.next.synthetic")

        // Rebaselined in the completion's own transaction: the baseline follows the compaction event.
        const checkpoint = Option.getOrThrow(
          yield* w.run(Effect.flatMap(InstructionCheckpoint.Service, (c) => c.get(w.session.id)))
        )
        expect(checkpoint.baselineSeq).toBe(ended.durable.seq)
        expect(checkpoint.compactionSeq).toBe(ended.durable.seq)
        expect(checkpoint.baseline).toContain("Rule two.")
        expect(checkpoint.baseline).not.toContain("Rule one.")
        // The nested AGENTS.md that was active folds into the new baseline.
        expect(checkpoint.baseline).toContain("Nested rule.")

        // The next request: the new baseline, the summary, none of the earlier updates or messages.
        yield* w.server.enqueue(reply(text("third answer"), finish("stop")))
        yield* w.prompt("third")
        yield* w.wait
        const next = (yield* w.server.requests)[4]!
        expect(systemOf(next)).toContain("Rule two.")
        expect(systemOf(next)).toContain("Nested rule.")
        expect(wire(next)).toContain("Answer two prompts")
        expect(wire(next)).toContain("third")
        expect(wire(next)).toContain("Assistant: second answer")
        expect(wire(next)).not.toContain("instruction-update")
        expect(wire(next)).not.toContain("read it")
        expect(wire(next)).not.toContain("some notes")

        // The durable record and the transcript keep everything.
        const all = yield* w.types
        expect(all.filter((type) => type === "context.updated").length).toBeGreaterThanOrEqual(2)
        const transcript = yield* w.run(
          Effect.flatMap(SessionHistory.Service, (h) => h.messages(w.session.id, { order: "asc", limit: 200 }))
        )
        const kinds = transcript.data.map((message) => message.type)
        expect(kinds).toContain("system")
        expect(kinds.filter((kind) => kind === "user")).toHaveLength(3)
        expect(kinds).toContain("compaction")
      })
  )

  it.scopedLive(
    "Instruction Baseline: The exact joined instruction text stored by InstructionCheckpoint and sent as immutable provider-cache prefix state until completed compaction rebaselines it",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        fs.writeFileSync(path.join(w.directory, "AGENTS.md"), "Use tabs.")
        yield* w.server.enqueue(reply(text("a"), finish("stop")), reply(text("b"), finish("stop")))
        yield* w.prompt("one")
        yield* w.wait
        fs.writeFileSync(path.join(w.directory, "AGENTS.md"), "Use spaces.")
        yield* w.prompt("two")
        yield* w.wait
        yield* w.server.enqueue(summary("Two prompts"), reply(text("c"), finish("stop")))
        yield* w.compact
        yield* w.wait
        yield* w.prompt("three")
        yield* w.wait
        const [first, second, , third] = yield* w.server.requests
        // Byte for byte the same prefix while the file changed (the change went out as an update)...
        expect(systemOf(second!)).toBe(systemOf(first!))
        expect(systemOf(second!)).toContain("Use tabs.")
        // ...until the completed compaction rendered it afresh.
        expect(systemOf(third!)).not.toBe(systemOf(first!))
        expect(systemOf(third!)).toContain("Use spaces.")
        expect(systemOf(third!)).not.toContain("Use tabs.")
      })
  )

  it.scopedLive(
    "Physical Attempt: One actual provider request on the wire in service of a Step; most Steps have one Physical Attempt, while overflow-triggered compaction recovery may give one Step two.",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        yield* w.server.enqueue(reply(text("one"), usage({ input: 10, output: 1 }), finish("stop")))
        yield* w.prompt("first")
        yield* w.wait
        yield* w.server.enqueue(overflow(), summary("Recover from an overflow"), reply(text("two"), finish("stop")))
        yield* w.prompt("second")
        yield* w.wait
        const requests = yield* w.server.requests
        expect(requests).toHaveLength(4)
        // The second attempt is the same Step's request, after the summary.
        expect(wire(requests[3]!)).toContain("Recover from an overflow")
        expect(wire(requests[3]!)).toContain("second")
        const types = yield* w.types
        const afterPrompt = types.slice(types.lastIndexOf("prompted"))
        expect(afterPrompt).toEqual(["prompted", ...compactedThenAnswered])
        const ended = (yield* w.events).find((event) => event.type === "session.next.compaction.ended")!
        expect(ended.data).toMatchObject({ reason: "auto" })
      })
  )

  it.scopedLive(
    "A Step record covers only the model-visible span from first assistant output through tool settlement; pre-flight leaves no record, and one Step settles at most one record. (a second overflow fails the Step after exactly one compaction)",
    () =>
      Effect.gen(function* () {
        const w = yield* afterOnePrompt
        yield* w.server.enqueue(overflow(), summary("Still too large"), overflow())
        yield* w.prompt("second")
        yield* w.wait
        expect(yield* w.server.requests).toHaveLength(4)
        const types = yield* w.types
        expect(types.filter((type) => type === "compaction.started")).toHaveLength(1)
        expect(types.slice(-2)).toEqual(["step.started", "step.failed"])
        const failed = lastOf(yield* w.events, (event) => event.type === "session.next.step.failed")!
        expect((failed.data as any).error.message).toMatch(/context|too long|maximum/i)
        expect(yield* w.server.remaining).toBe(0)
      })
  )

  it.scopedLive(
    "the compaction request's usage and cost join the session's totals, recorded with the compaction's completion",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ cost: { input: 2, output: 4 } })
        yield* w.server.enqueue(reply(text("one"), usage({ input: 1_000, output: 100 }), finish("stop")))
        yield* w.prompt("first")
        yield* w.wait
        yield* w.server.enqueue(
          reply(text("## Objective\n- First prompt answered"), usage({ input: 5_000, output: 500 }), finish("stop"))
        )
        yield* w.compact
        yield* w.wait
        const events = yield* w.events
        const ended = events.findIndex((event) => event.type === "session.next.compaction.ended")
        const recorded = events[ended + 1]!
        expect(recorded.type).toBe("session.next.usage.recorded")
        expect(recorded.data).toMatchObject({
          agent: "compaction",
          model: { providerID: "scripted", id: "m" },
          cost: 0.012
        })
        // One transaction: the same commit time as the completion.
        expect((recorded.data as any).timestamp).toBe((events[ended]!.data as any).timestamp)
        // Step: 1,000 × 2 + 100 × 4 = 2,400 µ$; compaction: 5,000 × 2 + 500 × 4 = 12,000 µ$.
        const session = yield* w.run(Effect.flatMap(Sessions.Service, (sessions) => sessions.get(w.session.id)))
        expect(session.cost).toBe(0.0144)
        expect(session.tokens).toEqual({ input: 6_000, output: 600, reasoning: 0, cache: { read: 0, write: 0 } })
      })
  )

  it.scopedLive("compaction.auto false: no compaction ahead of time, and an overflow fails the Step at once", () =>
    Effect.gen(function* () {
      const w = yield* world({ limit: { context: 2000, output: 200 }, compaction: { auto: false } })
      yield* w.server.enqueue(reply(text("one"), usage({ input: 1900, output: 10 }), finish("stop")))
      yield* w.prompt("first")
      yield* w.wait
      yield* w.server.enqueue(overflow())
      yield* w.prompt("x".repeat(4000))
      yield* w.wait
      expect(yield* w.server.requests).toHaveLength(2)
      const types = yield* w.types
      expect(types).not.toContain("compaction.started")
      expect(types.slice(-2)).toEqual(["step.started", "step.failed"])
    })
  )

  it.scopedLive(
    "Step: One logical LLM call spanning pre-flight instruction checkpoint preparation, input promotion, request build, and compaction check; the provider stream; and tool settlement. (a request projected past the usable context, from last usage + estimate, is compacted before it is sent)",
    () =>
      Effect.gen(function* () {
        const w = yield* smallWorld
        yield* w.server.enqueue(reply(text("noted"), usage({ input: 2600, output: 10 }), finish("stop")))
        yield* w.prompt("a".repeat(400))
        yield* w.wait
        // 2610 counted + about 600 estimated for the new prompt > 3100: compact first.
        yield* w.server.enqueue(summary("Keep going after the cut"), reply(text("answered"), finish("stop")))
        yield* w.prompt(`new question ${"b".repeat(2400)}`)
        yield* w.wait
        const requests = yield* w.server.requests
        expect(requests).toHaveLength(3)
        expect(wire(requests[1]!)).toContain("<conversation>")
        const sent = requests[2]!
        expect(wire(sent)).toContain("Keep going after the cut")
        // The latest prompt is kept word for word after the summary, then the continuation.
        expect(wire(sent)).toContain("new question")
        expect(wire(sent)).toContain(CompactionPrompt.continuation)
        const types = yield* w.types
        expect(types.slice(types.lastIndexOf("prompted"))).toEqual(["prompted", ...compactedThenAnswered])
      })
  )

  it.scopedLive(
    "automatic compaction in the middle of work: between two Steps of one prompt the drain compacts and continues by itself",
    () =>
      Effect.gen(function* () {
        // usable = 3100; only `read` is offered so the fixed part of the request stays small, and
        // pruning is off (it would clear the large output instead).
        const w = yield* world({
          limit: { context: 4000, output: 500 },
          compaction: { prune: false },
          agent: { build: { permission: { "*": "deny", read: "allow" } } }
        })
        fs.writeFileSync(path.join(w.directory, "big.txt"), `${"0123456789".repeat(9)}\n`.repeat(90))
        yield* w.server.enqueue(
          reply(toolCall("call_1", "read", { path: "big.txt" }), usage({ input: 1200, output: 10 })),
          summary("Read big.txt and report"),
          reply(text("reported"), finish("stop"))
        )
        yield* w.prompt("read big.txt and report")
        yield* w.wait
        const types = yield* w.types
        expect(types.slice(types.indexOf("step.ended"))).toEqual(["step.ended", ...compactedThenAnswered])
        const sent = (yield* w.server.requests)[2]!
        expect(wire(sent)).toContain("Read big.txt and report")
        expect(wire(sent)).toContain(CompactionPrompt.continuation)
        expect(wire(sent)).not.toContain("0123456789".repeat(9))
      })
  )

  it.scopedLive(
    "pruning replaces older tool outputs in the request; the durable record keeps them; prune false keeps all",
    () =>
      Effect.gen(function* () {
        for (const prune of [true, false]) {
          // usable 35,000 → a window of 17,500 tokens: only the newest 10,000-token output fits.
          const w = yield* world({ limit: { context: 40_000, output: 1000 }, compaction: { auto: false, prune } })
          for (const name of ["a", "b", "c"]) {
            fs.writeFileSync(path.join(w.directory, `${name}.txt`), `${name.repeat(99)}\n`.repeat(400))
          }
          yield* w.server.enqueue(
            reply(toolCall("call_a", "read", { path: "a.txt" })),
            reply(toolCall("call_b", "read", { path: "b.txt" })),
            reply(toolCall("call_c", "read", { path: "c.txt" })),
            reply(text("read all three"), finish("stop"))
          )
          yield* w.prompt("read the three files")
          yield* w.wait
          const last = (yield* w.server.requests)[3]!
          const markers = wire(last).split(CompactionPrompt.prunedOutput).length - 1
          expect(markers).toBe(prune ? 2 : 0)
          expect(wire(last)).toContain("c".repeat(99))
          expect(wire(last).includes("a".repeat(99))).toBe(!prune)
          const transcript = yield* w.run(
            Effect.flatMap(SessionHistory.Service, (h) => h.messages(w.session.id, { order: "asc" }))
          )
          expect(JSON.stringify(transcript.data)).toContain("a".repeat(99))
          expect(JSON.stringify(transcript.data)).not.toContain(CompactionPrompt.prunedOutput)
        }
      })
  )

  it.scopedLive(
    "without usage reported the whole request is estimated; under the usable context nothing is compacted",
    () =>
      Effect.gen(function* () {
        const w = yield* smallWorld
        yield* w.server.enqueue(reply(text("a"), finish("stop")), reply(text("b"), finish("stop")))
        yield* w.prompt("short")
        yield* w.wait
        yield* w.prompt("also short")
        yield* w.wait
        expect(yield* w.server.requests).toHaveLength(2)
        expect(yield* w.types).not.toContain("compaction.started")
      })
  )

  it.scopedLive(
    "Session History: The projected chronological conversation selected for a Step after applying the active compaction and InstructionCheckpoint baseline cutoffs. (an interrupted compaction is not active: the session is as it was before it started)",
    () =>
      Effect.gen(function* () {
        const w = yield* afterOnePrompt
        const history = yield* w.run(Effect.flatMap(SessionHistory.Service, (h) => h.context(w.session.id)))
        const checkpoint = yield* w.run(Effect.flatMap(InstructionCheckpoint.Service, (c) => c.get(w.session.id)))
        const held = gate()
        yield* w.server.enqueue(reply(text("## Objective"), hold(held), text("\n- never finished"), finish("stop")))
        yield* w.compact
        yield* held.reached
        yield* w.interrupt
        expect(yield* w.run(Effect.flatMap(SessionHistory.Service, (h) => h.context(w.session.id)))).toEqual(history)
        expect(yield* w.run(Effect.flatMap(InstructionCheckpoint.Service, (c) => c.get(w.session.id)))).toEqual(
          checkpoint
        )
        const types = yield* w.types
        expect(types).toContain("compaction.started")
        expect(types).not.toContain("compaction.ended")
        // The session goes on as before: the next request has the old history and no summary.
        yield* w.server.enqueue(reply(text("two"), finish("stop")))
        yield* w.prompt("second")
        yield* w.wait
        const last = (yield* w.server.requests).at(-1)!
        expect(wire(last)).toContain("first")
        expect(wire(last)).not.toContain("never finished")
      })
  )

  it.scopedLive(
    "manual compaction is idempotent while one is waiting or running: one compaction for three requests",
    () =>
      Effect.gen(function* () {
        const w = yield* afterOnePrompt
        const held = gate()
        yield* w.server.enqueue(reply(hold(held), text("## Objective\n- once"), finish("stop")))
        yield* w.compact
        yield* w.compact
        yield* held.reached
        yield* w.compact
        yield* held.release
        yield* w.wait
        const types = yield* w.types
        expect(types.filter((type) => type === "compaction.started")).toHaveLength(1)
        expect(types.filter((type) => type === "compaction.ended")).toHaveLength(1)
        expect(yield* w.server.requests).toHaveLength(2)
        // Nothing new to compact: a further request is served without a model call.
        yield* w.compact
        yield* w.wait
        expect(yield* w.server.requests).toHaveLength(2)
      })
  )

  it.scopedLive(
    "a manual compaction requested mid-run runs at the next Safe Step Boundary, then the drain continues with a synthetic continuation",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        fs.writeFileSync(path.join(w.directory, "a.txt"), "alpha")
        const held = gate()
        yield* w.server.enqueue(
          reply(hold(held), toolCall("call_1", "read", { path: path.join(w.directory, "a.txt") })),
          summary("Read a file, then answer"),
          reply(text("finished"), finish("stop"))
        )
        yield* w.prompt("read a.txt")
        yield* held.reached
        yield* w.compact
        yield* held.release
        yield* w.wait
        const types = yield* w.types
        expect(types.slice(types.indexOf("step.ended"))).toEqual(["step.ended", ...compactedThenAnswered])
        const sent = (yield* w.server.requests)[2]!
        expect(wire(sent)).toContain("Read a file, then answer")
        expect(wire(sent)).toContain(CompactionPrompt.continuation)
      })
  )

  it.scopedLive(
    "a failed compaction (the provider refuses it) leaves the session untouched; an automatic one fails the Step",
    () =>
      Effect.gen(function* () {
        const w = yield* afterOnePrompt
        yield* w.server.enqueue(LLMScript.httpError(400))
        yield* w.compact
        yield* w.wait
        expect(yield* w.types).not.toContain("compaction.ended")
        yield* w.server.enqueue(overflow(), LLMScript.httpError(400))
        yield* w.prompt("second")
        yield* w.wait
        const failed = lastOf(yield* w.events, (event) => event.type === "session.next.step.failed")!
        expect((failed.data as any).error.message).toMatch(/^Compaction failed/)
      })
  )

  it.scopedLive(
    "a long session past a small limit.context compacts automatically and keeps working for 50 more prompts",
    () =>
      Effect.gen(function* () {
        const model = ContextLimitedModel.make({
          context: 4000,
          tool: "read",
          input: () => ({ path: "notes.txt" })
        })
        // Only `read` is offered, so the fixed part of each request (system text, one tool) stays small.
        const w = yield* world({
          limit: { context: 4000, output: 400 },
          respond: model.respond,
          agent: { build: { permission: { "*": "deny", read: "allow" } } }
        })
        fs.writeFileSync(path.join(w.directory, "notes.txt"), "a line of notes\n".repeat(60))
        let firstCompaction: number | undefined
        for (let n = 1; n <= 90; n++) {
          yield* w.prompt(`prompt number ${n}: ${"please look at the notes again. ".repeat(6)}`)
          yield* w.wait
          if (firstCompaction === undefined && (yield* w.types).includes("compaction.ended")) firstCompaction = n
          if (firstCompaction !== undefined && n >= firstCompaction + 50) break
        }
        expect(firstCompaction).toBeDefined()
        const stats = model.stats()
        const types = yield* w.types
        expect(types.filter((type) => type === "step.failed")).toHaveLength(0)
        expect(stats.compactions).toBeGreaterThanOrEqual(2)
        expect(types.filter((type) => type === "compaction.ended")).toHaveLength(stats.compactions)
        // Every prompt was answered after its tool call.
        const prompts = types.filter((type) => type === "prompted").length
        expect(prompts).toBeGreaterThanOrEqual(firstCompaction! + 50)
        expect(stats.answers).toBe(prompts)
        expect(stats.largest).toBeLessThanOrEqual(4000)
      }),
    120_000
  )
})
