import { describe, expect, it } from "@effect/vitest"
import { Config, LiveBus, LLMRequest, SessionHistory, StepRunner, ToolRegistry } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import type { Identifier } from "@opencode-ai/schema"
import { Chunk, Deferred, Effect, Fiber, Option, Stream } from "effect"
import { world } from "./world.js"

/**
 * The Step runner on its own: one Step run directly (no drain, no boundary) against a real database
 * and the scripted provider, checking the Outcome it returns and the durable and live events it
 * records.
 */

const { reply, text, toolCall, usage, finish, hold, gate, httpError, overflow } = LLMScript

const echo = (block?: Deferred.Deferred<void>) => ({
  name: "echo",
  description: "Echo the input back",
  inputSchema: { type: "object", properties: { say: { type: "string" } }, required: ["say"] },
  execute: (input: Readonly<Record<string, unknown>>) =>
    Effect.gen(function* () {
      if (block) yield* Deferred.await(block)
      return { content: [{ type: "text" as const, text: `echo: ${String(input.say)}` }] }
    })
})

/** A world plus `step`: runs one Step of its session with the build agent, scripted model and every registered tool. */
const stepWorldWith = (options: Parameters<typeof world>[0] = {}) =>
  Effect.gen(function* () {
    const w = yield* world(options)
    const step = w.run(
      Effect.gen(function* () {
        const config = yield* Config.Service
        const registry = yield* ToolRegistry.Service
        const runner = yield* StepRunner.Service
        const agent = Option.getOrThrow(config.agent("build"))
        const tools = yield* registry.materialize((names) => names)
        return runner.run({
          sessionID: w.session.id,
          directory: w.directory,
          agent,
          model: { id: "m", providerID: "scripted" },
          request: {
            model: { providerID: "scripted", modelID: "m" },
            system: "You are a test.",
            messages: [LLMRequest.user("hi")],
            tools: tools.definitions.map((tool) => ({ ...tool, inputSchema: { ...tool.inputSchema } })),
            generation: {},
            headers: {}
          },
          tools
        })
      })
    )
    /** The types of everything the live bus carries (durable commits and live deltas) while `effect` runs. */
    const observed = <A, E>(effect: Effect.Effect<A, E>) =>
      Effect.gen(function* () {
        const bus = yield* w.run(LiveBus.Service)
        const stream = yield* bus.subscribe()
        const seen = yield* Effect.fork(
          stream.pipe(
            Stream.map((event) => event.type.replace("session.next.", "")),
            Stream.takeUntil((type) => type === "step.ended" || type === "step.failed"),
            Stream.runCollect
          )
        )
        const result = yield* effect
        return { result, live: Chunk.toReadonlyArray(yield* Fiber.join(seen)) }
      })
    const stepTypes = Effect.map(w.types, (types) => types.slice(types.indexOf("step.started")))
    return { ...w, step: Effect.flatten(step), observed, stepTypes }
  })
const stepWorld = stepWorldWith()

describe("StepRunner", () => {
  it.scopedLive("a text step settles as Stop with the finish reason; deltas go live between started and ended", () =>
    Effect.gen(function* () {
      const w = yield* stepWorld
      yield* w.server.enqueue(reply(text("Hel", "lo"), usage({ input: 7, output: 2 }), finish("stop")))
      const { result, live } = yield* w.observed(w.step)
      expect(result).toEqual(StepRunner.Outcome.Stop({ finish: "stop" }))
      expect(yield* w.stepTypes).toEqual(["step.started", "text.started", "text.ended", "step.ended"])
      expect(live).toEqual(["step.started", "text.started", "text.delta", "text.delta", "text.ended", "step.ended"])
      const ended: any = (yield* w.events).find((e) => e.type === "session.next.step.ended")!.data
      expect(ended).toMatchObject({ finish: "stop", tokens: { input: 7, output: 2 } })
    })
  )

  it.scopedLive("a tool-calls step settles as Continue once every call has settled", () =>
    Effect.gen(function* () {
      const w = yield* stepWorld
      yield* w.register(echo())
      yield* w.server.enqueue(
        reply(
          toolCall("call_a", "echo", { say: "one" }),
          toolCall("call_b", "echo", { say: "two" }),
          finish("tool-calls")
        )
      )
      const outcome = yield* w.step
      const types = yield* w.stepTypes
      expect(types.filter((t) => t === "tool.called")).toHaveLength(2)
      expect(types.filter((t) => t === "tool.success")).toHaveLength(2)
      expect(types.at(-1)).toBe("step.ended")
      const all = yield* w.events
      expect((all.at(-1)!.data as any).finish).toBe("tool-calls")
      // It carries the end snapshot `step.ended` recorded, for the Step that continues it.
      expect(outcome).toEqual(
        StepRunner.Outcome.Continue({ toolCalls: 2, snapshot: (all.at(-1)!.data as any).snapshot })
      )
      expect(outcome).toMatchObject({ snapshot: expect.stringMatching(/^[0-9a-f]{40}$/) })
      for (const id of ["call_a", "call_b"]) {
        const called = all.findIndex((e) => e.type === "session.next.tool.called" && (e.data as any).callID === id)
        const settled = all.findIndex((e) => e.type === "session.next.tool.success" && (e.data as any).callID === id)
        expect(settled).toBeGreaterThan(called)
        expect(called).toBeGreaterThan(0)
      }
    })
  )

  it.scopedLive("a provider failure settles as Failed, recorded as step.failed with the provider's message", () =>
    Effect.gen(function* () {
      const w = yield* stepWorld
      yield* w.server.enqueue(httpError(400))
      const outcome = yield* w.step
      expect(outcome._tag).toBe("Failed")
      expect(yield* w.stepTypes).toEqual(["step.started", "step.failed"])
      const failed: any = (yield* w.events).at(-1)!.data
      expect(failed.error.message).toBe((outcome as StepRunner.Outcome & { _tag: "Failed" }).message)
      expect(yield* w.server.remaining).toBe(0)
    })
  )

  it.scopedLive("a context overflow before any output settles as Overflow, with one request on the wire", () =>
    Effect.gen(function* () {
      const w = yield* stepWorld
      yield* w.server.enqueue(overflow())
      const outcome = yield* w.step
      expect(outcome._tag).toBe("Overflow")
      expect(yield* w.stepTypes).toEqual(["step.started", "step.failed"])
      expect(yield* w.server.requests).toHaveLength(1)
    })
  )

  /** The assistant message of the session's last Step, as the projection holds it. */
  const lastAssistant = (w: Effect.Effect.Success<typeof stepWorld>, id: Identifier.SessionID) =>
    w.run(
      Effect.map(
        Effect.flatMap(SessionHistory.Service, (history) => history.context(id)),
        (messages) => [...messages].reverse().find((message) => message.type === "assistant") as any
      )
    )

  it.scopedLive(
    "an interrupted text step keeps its partial text and fails with upstream's 'Provider turn interrupted'; its finish is error",
    () =>
      Effect.gen(function* () {
        const w = yield* stepWorld
        const held = gate()
        yield* w.server.enqueue(reply(text("partial"), hold(held), text(" rest"), finish("stop")))
        const fiber = yield* Effect.fork(w.step)
        yield* held.reached
        // The text block is open once its start has committed.
        while (!(yield* w.types).includes("text.started")) yield* Effect.sleep(5)
        yield* Fiber.interrupt(fiber)
        expect(yield* w.stepTypes).toEqual(["step.started", "text.started", "text.ended", "step.failed"])
        const all = yield* w.events
        expect((all.at(-2)!.data as any).text).toBe("partial")
        expect((all.at(-1)!.data as any).error).toEqual({ type: "unknown", message: "Provider turn interrupted" })
        const message = yield* lastAssistant(w, w.session.id)
        expect(message.finish).toBe("error")
        expect(message.error.message).toBe("Provider turn interrupted")
      })
  )

  it.scopedLive(
    "a tool interrupted mid-call while the provider stream is open: tool.failed 'Tool execution interrupted', step.failed 'Provider turn interrupted'",
    () =>
      Effect.gen(function* () {
        // Anthropic's stream completes a call at its block's end, before the message's end.
        const w = yield* stepWorldWith({ protocol: "anthropic" })
        const block = yield* Deferred.make<void>()
        const held = gate()
        yield* w.register(echo(block))
        // The call is complete and running, but the provider's stream stays open at the gate.
        yield* w.server.enqueue(reply(toolCall("call_1", "echo", { say: "x" }), hold(held), finish("tool-calls")))
        const fiber = yield* Effect.fork(w.step)
        yield* held.reached
        while (!(yield* w.types).includes("tool.called")) yield* Effect.sleep(5)
        yield* Fiber.interrupt(fiber)
        expect((yield* w.stepTypes).slice(-2)).toEqual(["tool.failed", "step.failed"])
        const all = yield* w.events
        const failed = all.at(-2)!.data as any
        expect(failed.error).toEqual({ type: "unknown", message: "Tool execution interrupted" })
        // An interruption is not an expected failure: there is no tool result to carry.
        expect(failed.result).toBeUndefined()
        expect((all.at(-1)!.data as any).error.message).toBe(StepRunner.providerInterruptedMessage)
        const message = yield* lastAssistant(w, w.session.id)
        expect(message.finish).toBe("error")
        const call = message.content.find((part: any) => part.type === "tool")
        expect(call.state).toMatchObject({ status: "error", error: { message: "Tool execution interrupted" } })
        yield* held.aborted
      })
  )

  it.scopedLive("failBeforeOutput records step.started and step.failed with the reason, and calls nothing", () =>
    Effect.gen(function* () {
      const w = yield* stepWorld
      yield* w.run(
        Effect.gen(function* () {
          const agent = Option.getOrThrow((yield* Config.Service).agent("build"))
          yield* (yield* StepRunner.Service).failBeforeOutput({
            sessionID: w.session.id,
            agent,
            model: { id: "gone", providerID: "scripted" },
            message: "Unknown model scripted/gone"
          })
        })
      )
      const all = yield* w.events
      expect(all.slice(-2).map((e) => e.type)).toEqual(["session.next.step.started", "session.next.step.failed"])
      // Appended together, stamped with one time.
      expect((all.at(-1)!.data as any).timestamp).toBe((all.at(-2)!.data as any).timestamp)
      expect((all.at(-1)!.data as any).error.message).toBe("Unknown model scripted/gone")
      expect(yield* w.server.requests).toHaveLength(0)
    })
  )
})
