import { it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Stream } from "effect"
import { describe, expect } from "vitest"
import { LLMClient } from "../../src/llm/llm-client.js"
import { LLMError } from "../../src/llm/llm-error.js"
import { LLMScript as S } from "../../src/testing/llm-script.js"
import { TestLLM } from "../../src/testing/test-llm.js"
import { baseRequest, collect, failure, types } from "./harness.js"

const withTestLLM = <A, E>(body: Effect.Effect<A, E, LLMClient.Service | TestLLM.Service>) =>
  Effect.provide(body, TestLLM.layer)

describe("TestLLM", () => {
  it.effect("plays scripted replies as ordered events and records requests", () =>
    withTestLLM(
      Effect.gen(function* () {
        const llm = yield* LLMClient.Service
        const test = yield* TestLLM.Service
        yield* test.enqueue(
          S.reply(
            S.reasoning("think", { signature: "sig" }),
            S.text("Hi ", "there"),
            S.toolCall("c1", "read", { path: "a" }, { signature: "call-sig" }),
            S.toolCall("c2", "read", "{oops"),
            S.usage({ input: 3, output: 4, cacheRead: 5 })
          )
        )
        const events = yield* collect(llm.stream(baseRequest({ headers: { "x-session-id": "ses_1" } })))
        expect(types(events)).toEqual([
          "reasoning-start",
          "reasoning-delta",
          "reasoning-end",
          "text-start",
          "text-delta",
          "text-delta",
          "text-end",
          "tool-input-start",
          "tool-input-delta",
          "tool-input-delta",
          "tool-input-delta",
          "tool-input-end",
          "tool-call",
          "tool-input-start",
          "tool-input-delta",
          "tool-input-delta",
          "tool-input-delta",
          "tool-input-end",
          "tool-call",
          "usage",
          "finish"
        ])
        expect(events[2]).toEqual({
          type: "reasoning-end",
          id: "reasoning-0",
          text: "think",
          metadata: { anthropic: { signature: "sig" } }
        })
        // A call signature is Gemini's, so it is in the google namespace.
        expect(events[12]).toMatchObject({
          type: "tool-call",
          input: { path: "a" },
          metadata: { google: { thoughtSignature: "call-sig" } }
        })
        expect(events[18]).not.toHaveProperty("metadata")
        expect(events[18]).toMatchObject({ type: "tool-call", input: {}, inputText: "{oops" })
        expect(events.at(-1)).toEqual({ type: "finish", reason: "tool-calls" })
        const [call] = yield* test.calls
        expect(call?.request.headers).toEqual({ "x-session-id": "ses_1" })
        expect(yield* call!.outcome).toBe("completed")
      })
    )
  )

  it.effect("HTTP errors, overflow, exact failures and exact events", () =>
    withTestLLM(
      Effect.gen(function* () {
        const llm = yield* LLMClient.Service
        const test = yield* TestLLM.Service
        const exact = new LLMError.TransportError({ providerID: "x", message: "reset", retryable: true })
        yield* test.enqueue(
          S.httpError(429, { retryAfter: "2" }),
          S.overflow(),
          S.reply(S.text("partial"), S.streamError("overloaded")),
          TestLLM.fail(exact),
          TestLLM.events({ type: "finish", reason: "length" })
        )
        expect(yield* failure(llm.stream(baseRequest()))).toMatchObject({
          _tag: "ProviderError",
          retryable: true,
          retryAfterMs: 2000
        })
        expect(yield* failure(llm.stream(baseRequest()))).toMatchObject({ _tag: "ContextOverflowError" })
        expect(yield* failure(llm.stream(baseRequest()))).toMatchObject({ _tag: "ProviderError", retryable: true })
        expect(yield* failure(llm.stream(baseRequest()))).toBe(exact)
        expect(yield* collect(llm.stream(baseRequest()))).toEqual([{ type: "finish", reason: "length" }])
        expect((yield* test.requests).length).toBe(5)
        expect(yield* (yield* test.awaitCall(3)).outcome).toBe("failed")
      })
    )
  )

  it.effect("a gate holds the stream: release it, or interrupt and see it aborted", () =>
    withTestLLM(
      Effect.gen(function* () {
        const llm = yield* LLMClient.Service
        const test = yield* TestLLM.Service
        const first = S.gate()
        const second = S.gate()
        yield* test.enqueue(
          S.reply(S.text("a"), S.hold(first), S.text("b")),
          S.reply(S.text("partial"), S.hold(second), S.text("never"))
        )
        const released = yield* Effect.fork(collect(llm.stream(baseRequest())))
        yield* first.reached
        yield* first.release
        expect(
          (yield* Fiber.join(released)).filter((e) => e.type === "text-end").map((e) => e.type === "text-end" && e.text)
        ).toEqual(["a", "b"])

        const seen: Array<string> = []
        const interrupted = yield* Effect.fork(
          llm.stream(baseRequest()).pipe(Stream.runForEach((e) => Effect.sync(() => seen.push(e.type))))
        )
        yield* second.reached
        expect(seen).toEqual(["text-start", "text-delta", "text-end"])
        yield* Fiber.interrupt(interrupted)
        yield* second.aborted
        expect(yield* (yield* test.awaitCall(2)).outcome).toBe("interrupted")
      })
    )
  )

  it.effect("awaitCall resolves when the stream is run; no turn left is a defect", () =>
    withTestLLM(
      Effect.gen(function* () {
        const llm = yield* LLMClient.Service
        const test = yield* TestLLM.Service
        const waiting = yield* Effect.fork(test.awaitCall(1))
        const exit = yield* Effect.exit(collect(llm.stream(baseRequest({ system: "S" }))))
        expect((yield* Fiber.join(waiting)).request.system).toBe("S")
        expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
        expect(yield* test.remaining).toBe(0)
      })
    )
  )
})
