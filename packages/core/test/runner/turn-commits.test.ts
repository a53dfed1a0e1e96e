import { describe, expect, it } from "@effect/vitest"
import { LiveBus, RuntimeMetrics } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { Chunk, Effect, Fiber, Metric, Stream } from "effect"
import { world } from "./world.js"

/**
 * How many durable commits a turn costs (issue 18): counted, not timed. Every durable transition
 * commits through EventLog.append, whose transaction `opencode_db_commit_duration_seconds` observes
 * once; its count before and after a turn is the turn's commits. The scripted provider writes each
 * reply as one socket write (`coalesce`), so the runtime reads it as one provider chunk batch.
 */

const { reply, text, toolCall, usage, finish } = LLMScript

/** The durable commits made so far in this process (the registry is global: take differences). */
const commits = Effect.map(Metric.value(RuntimeMetrics.dbCommitDuration), (state) => state.count)

describe("durable commits per turn", () => {
  it.scopedLive(
    "a short text turn is three commits: admission, promotion, and the Step: its output, with step.started, and its settlement",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ coalesce: true })
        yield* w.server.enqueue(reply(text("Hel", "lo"), usage({ input: 5, output: 2 }), finish("stop")))
        const bus = yield* w.run(LiveBus.Service)
        const live = yield* bus.subscribe()
        const seen = yield* Effect.fork(
          live.pipe(
            Stream.map((event) => event.type.replace("session.next.", "")),
            Stream.takeUntil((type) => type === "step.ended"),
            Stream.runCollect
          )
        )
        const before = yield* commits
        yield* w.prompt("hi")
        yield* w.wait
        expect((yield* commits) - before).toBe(3)

        // The chunk batch that carries the provider's finish commits with the settlement: one
        // transaction, each still its own event, stamped alike.
        const events = yield* w.events
        const types = events.map((event) => event.type.replace("session.next.", ""))
        expect(types).toEqual([
          "prompt.admitted",
          "prompted",
          "step.started",
          "text.started",
          "text.ended",
          "step.ended"
        ])
        const time = (type: string) => events.find((event) => event.type === `session.next.${type}`)!.data as any
        expect(time("step.started").timestamp).toBe(time("text.ended").timestamp)
        expect(time("step.ended").timestamp).toBe(time("text.ended").timestamp)
        expect((time("text.ended") as { text: string }).text).toBe("Hello")
        // Live readers still see the batch in stream order: the deltas between started and ended.
        expect(Chunk.toReadonlyArray(yield* Fiber.join(seen)).filter((type) => type !== "session.updated")).toEqual([
          "prompt.admitted",
          "prompted",
          "step.started",
          "text.started",
          "text.delta",
          "text.delta",
          "text.ended",
          "step.ended"
        ])
      })
  )

  it.scopedLive(
    "a tool step's chunk batch (input, call) is one commit; its call's and its own settlement are their own",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ coalesce: true })
        yield* w.register({
          name: "echo",
          description: "Echo the input back",
          inputSchema: { type: "object", properties: { say: { type: "string" } }, required: ["say"] },
          execute: (input: Readonly<Record<string, unknown>>) =>
            Effect.succeed({ content: [{ type: "text" as const, text: `echo: ${String(input.say)}` }] })
        })
        yield* w.server.enqueue(
          reply(toolCall("call_a", "echo", { say: "one" }), finish("tool-calls")),
          reply(text("done"), finish("stop"))
        )
        const before = yield* commits
        yield* w.prompt("go")
        yield* w.wait
        const types = (yield* w.types).filter((type) => !type.startsWith("prompt"))
        expect(types).toEqual([
          "step.started",
          "tool.input.started",
          "tool.input.ended",
          "tool.called",
          "tool.success",
          "step.ended",
          "step.started",
          "text.started",
          "text.ended",
          "step.ended"
        ])
        // admission, promotion; step 1: chunk batch, tool.success, step.ended; step 2: its batch with step.ended.
        expect((yield* commits) - before).toBe(6)
      })
  )
})
