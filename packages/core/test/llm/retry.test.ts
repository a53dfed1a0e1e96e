import { it } from "@effect/vitest"
import { Effect, Fiber, Option, Stream, TestClock } from "effect"
import { describe, expect } from "vitest"
import { LLMError } from "../../src/llm/llm-error.js"
import type { LLMEvent } from "../../src/llm/llm-event.js"
import { Retry } from "../../src/llm/retry.js"
import { LLMScript as S } from "../../src/testing/llm-script.js"
import { baseRequest, setup } from "./harness.js"

const providerID = "p"
const retryable = (extra: Partial<{ retryAfterMs: number }> = {}) =>
  new LLMError.ProviderError({ providerID, message: "busy", status: 503, retryable: true, ...extra })

describe("policy math", () => {
  it("retryable errors: retryable ProviderError and TransportError only", () => {
    expect(Retry.isRetryable(retryable())).toBe(true)
    expect(Retry.isRetryable(new LLMError.TransportError({ providerID, message: "reset", retryable: true }))).toBe(true)
    expect(Retry.isRetryable(new LLMError.TransportError({ providerID, message: "bad url", retryable: false }))).toBe(
      false
    )
    expect(
      Retry.isRetryable(new LLMError.ProviderError({ providerID, message: "bad", status: 400, retryable: false }))
    ).toBe(false)
    expect(Retry.isRetryable(new LLMError.ContextOverflowError({ providerID, message: "too long" }))).toBe(false)
    expect(Retry.isRetryable(new LLMError.ProviderAuthError({ providerID, message: "no" }))).toBe(false)
    expect(Retry.isRetryable(new LLMError.ProviderNotFoundError({ providerID, message: "?" }))).toBe(false)
  })

  it("exponential backoff, capped, with bounded jitter", () => {
    const policy = Retry.defaultPolicy
    expect([1, 2, 3, 4, 5, 6].map((n) => Retry.backoff(n, 0, policy))).toEqual([2000, 4000, 8000, 16000, 30000, 30000])
    // Jitter only ever shortens the delay, by at most `jitter` of it.
    for (const random of [0, 0.3, 0.999]) {
      const delay = Retry.backoff(3, random, policy)
      expect(delay).toBeLessThanOrEqual(8000)
      expect(delay).toBeGreaterThanOrEqual(8000 * (1 - policy.jitter))
    }
    expect(Retry.backoff(2, 0.5, { ...policy, jitter: 0.5 })).toBe(3000)
  })

  it("next: bounded attempts, Retry-After honoured, too-long Retry-After gives up", () => {
    expect(Retry.next(1, retryable(), { random: 0 })).toEqual(Option.some(2000))
    expect(Retry.next(3, retryable(), { random: 0 })).toEqual(Option.some(8000))
    expect(Retry.next(4, retryable())).toEqual(Option.none())
    expect(Retry.next(1, retryable({ retryAfterMs: 1234 }), { random: 0.9 })).toEqual(Option.some(1234))
    expect(Retry.next(1, retryable({ retryAfterMs: 0 }))).toEqual(Option.some(0))
    expect(Retry.next(1, retryable({ retryAfterMs: 10 * 60_000 }))).toEqual(Option.none())
    expect(Retry.next(1, new LLMError.ContextOverflowError({ providerID, message: "x" }))).toEqual(Option.none())
    expect(Retry.next(1, retryable(), { policy: { ...Retry.defaultPolicy, maxAttempts: 1 } })).toEqual(Option.none())
  })
})

/** Waits (in real time: HTTP is real) until the retrying fiber sleeps on the TestClock. */
const untilAsleep = Effect.gen(function* () {
  while ((yield* TestClock.sleeps()).length === 0)
    yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
})

/** Advances the TestClock once the retrying fiber is asleep (so the wake-up time is exact). */
const advanceWhenAsleep = (ms: number) => Effect.zipRight(untilAsleep, TestClock.adjust(ms))

type Attempt = (n: number) => Stream.Stream<LLMEvent.Event, LLMError.Any>
interface Options {
  readonly policy?: Retry.Policy
  readonly onRetry?: (retried: Retry.Retried) => Effect.Effect<void>
}

/**
 * The two ways to run attempts with the policy: `Retry.stream` drained, and `Retry.forEachChunk`
 * with each attempt's stream consumed by the handle it is given. Each event goes to `onEvent`.
 */
const consumers: Record<
  string,
  (attempt: Attempt, options: Options, onEvent: (event: LLMEvent.Event) => void) => Effect.Effect<void, LLMError.Any>
> = {
  "Retry.stream": (attempt, options, onEvent) =>
    Retry.stream(attempt, options).pipe(Stream.runForEach((event) => Effect.sync(() => onEvent(event)))),
  "Retry.forEachChunk": (attempt, options, onEvent) =>
    Retry.forEachChunk(
      (n, handle) => Stream.runForEachChunk(attempt(n), handle),
      (chunk) =>
        Effect.sync(() => {
          for (const event of chunk) onEvent(event)
        }),
      options
    )
}

for (const [name, consume] of Object.entries(consumers)) {
  /** The events of the attempts, or the last failure. */
  const run = (attempt: Attempt, options: Options = {}) =>
    Effect.suspend(() => {
      const events: Array<LLMEvent.Event> = []
      return Effect.as(
        consume(attempt, options, (event) => events.push(event)),
        events
      )
    })

  describe(`${name} over the scripted server`, () => {
    it.scoped("503, then 429 with Retry-After, then success: two retried notifications, exact waits", () =>
      Effect.gen(function* () {
        const { server, client } = yield* setup("openai-compatible")
        yield* server.enqueue(S.httpError(503), S.httpError(429, { retryAfter: "3" }), S.reply(S.text("finally")))
        const retried: Array<Retry.Retried> = []
        const fiber = yield* run(() => client.stream(baseRequest()), {
          policy: { ...Retry.defaultPolicy, jitter: 0 },
          onRetry: (info) => Effect.sync(() => void retried.push(info))
        }).pipe(Effect.fork)

        yield* server.awaitRequest(1)
        yield* advanceWhenAsleep(2000)
        yield* server.awaitRequest(2)
        yield* advanceWhenAsleep(3000)
        const events = yield* Fiber.join(fiber)

        expect(events.at(-1)).toMatchObject({ type: "finish", reason: "stop" })
        expect(
          retried.map(({ attempt, delayMs, error }) => ({
            attempt,
            delayMs,
            tag: error._tag,
            status: "status" in error ? error.status : undefined
          }))
        ).toEqual([
          { attempt: 1, delayMs: 2000, tag: "ProviderError", status: 503 },
          { attempt: 2, delayMs: 3000, tag: "ProviderError", status: 429 }
        ])
        expect((yield* server.requests).length).toBe(3)
      })
    )

    it.scoped("gives up after maxAttempts with the last error; no retry for overflow", () =>
      Effect.gen(function* () {
        const { server, client } = yield* setup("openai-compatible")
        yield* server.enqueue(S.httpError(500), S.httpError(502), S.overflow())
        const retried: Array<number> = []
        const fiber = yield* run(() => client.stream(baseRequest()), {
          policy: { ...Retry.defaultPolicy, maxAttempts: 2, jitter: 0 },
          onRetry: (info) => Effect.sync(() => void retried.push(info.delayMs))
        }).pipe(Effect.flip, Effect.fork)
        yield* advanceWhenAsleep(2000)
        expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "ProviderError", status: 502 })
        expect(retried).toEqual([2000])

        const overflow = yield* run(() => client.stream(baseRequest())).pipe(Effect.flip)
        expect(overflow._tag).toBe("ContextOverflowError")
        expect(yield* server.remaining).toBe(0)
      })
    )

    it.scoped("a failure after output is not retried", () =>
      Effect.gen(function* () {
        const { server, client } = yield* setup("openai-compatible")
        yield* server.enqueue(S.reply(S.text("partial"), S.streamError("overloaded")), S.reply(S.text("unused")))
        const seen: Array<string> = []
        const error = yield* consume(
          () => client.stream(baseRequest()),
          {},
          (event) => seen.push(event.type)
        ).pipe(Effect.flip)
        expect(error).toMatchObject({ _tag: "ProviderError", retryable: true })
        expect(seen).toEqual(["text-start", "text-delta"])
        expect(yield* server.remaining).toBe(1)
      })
    )

    it.scoped("interrupting during the wait stops retrying", () =>
      Effect.gen(function* () {
        const { server, client } = yield* setup("openai-compatible")
        yield* server.enqueue(S.httpError(503), S.reply(S.text("unused")))
        const fiber = yield* run(() => client.stream(baseRequest())).pipe(Effect.fork)
        yield* untilAsleep
        yield* Fiber.interrupt(fiber)
        yield* TestClock.adjust(60_000)
        expect((yield* server.requests).length).toBe(1)
      })
    )
  })
}
