export * as Retry from "./retry.js"

/**
 * The retry policy for Physical Attempts: which failures are retried, how long to wait, and how many
 * attempts a Step gets.
 *
 * - Retryable: a `ProviderError` or `TransportError` with `retryable: true` (429, 408, 425, 5xx, 529,
 *   overloaded / rate-limit / server error events, broken connections, premature ends). Never:
 *   context overflow (the answer is compaction), auth, unknown provider, other 4xx.
 * - Delay before retry `n` (n = 1 for the first retry): when the provider said how long to wait
 *   (`retryAfterMs`), exactly that, unless it exceeds `maxRetryAfterMs`, in which case we give up
 *   rather than hold the session for that long. Otherwise exponential backoff with jitter:
 *   `base = min(maxDelayMs, initialDelayMs * factor^(n-1))`, delay = `base * (1 - jitter * r)` for a
 *   uniform `r` in [0, 1). The delay never exceeds `maxDelayMs`.
 * - At most `maxAttempts` attempts in total (the first one included).
 *
 * The runner publishes one durable retried event per retry from the {@link Retried} value it gets
 * (through `onRetry` of {@link stream}, or by calling {@link next} itself).
 */

import { type Chunk, Effect, Option, Random, Stream } from "effect"
import { Traced } from "../observability/traced.js"
import type { Any as LLMError } from "./llm-error.js"
import type * as LLMEvent from "./llm-event.js"

export interface Policy {
  /** Attempts in total, the first included (so `maxAttempts - 1` retries). */
  readonly maxAttempts: number
  readonly initialDelayMs: number
  readonly factor: number
  readonly maxDelayMs: number
  /** The fraction of the backoff delay that is randomised away, in [0, 1]. */
  readonly jitter: number
  /** A provider-requested wait longer than this is not waited for: the failure is final. */
  readonly maxRetryAfterMs: number
}

export const defaultPolicy: Policy = {
  maxAttempts: 4,
  initialDelayMs: 2_000,
  factor: 2,
  maxDelayMs: 30_000,
  jitter: 0.25,
  maxRetryAfterMs: 120_000
}

/** Whether the failure may succeed when the same request is sent again. */
export const isRetryable = (error: LLMError): boolean =>
  (error._tag === "ProviderError" || error._tag === "TransportError") && error.retryable

/** The backoff delay before retry `retry` (1-based) for a uniform `random` in [0, 1). */
export const backoff = (retry: number, random: number, policy: Policy = defaultPolicy): number => {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** Math.max(0, retry - 1))
  const jitter = Math.min(1, Math.max(0, policy.jitter)) * Math.min(1, Math.max(0, random))
  return Math.round(base * (1 - jitter))
}

/**
 * Whether to retry after `attempt` attempts (1-based: pass 1 after the first attempt failed) ended with
 * `error`, and if so after how many milliseconds. Pure: `random` is the jitter draw in [0, 1).
 */
export const next = (
  attempt: number,
  error: LLMError,
  options: { readonly policy?: Policy; readonly random?: number } = {}
): Option.Option<number> => {
  const policy = options.policy ?? defaultPolicy
  if (attempt >= policy.maxAttempts || !isRetryable(error)) return Option.none()
  const retryAfterMs = error._tag === "ProviderError" ? error.retryAfterMs : undefined
  if (retryAfterMs !== undefined) {
    return retryAfterMs > policy.maxRetryAfterMs ? Option.none() : Option.some(Math.max(0, retryAfterMs))
  }
  return Option.some(backoff(attempt, options.random ?? 0, policy))
}

/** {@link next} with the jitter drawn from the Effect `Random` service (deterministic under a seed). */
export const nextDelay = Traced.fn("Retry.nextDelay")(function* (attempt: number, error: LLMError, policy?: Policy) {
  const random = yield* Random.next
  return next(attempt, error, { ...(policy === undefined ? {} : { policy }), random })
})

/** One retry about to happen: what a durable retried event records. */
export interface Retried {
  /** How many attempts have failed so far (1 before the first retry, i.e. the second attempt). */
  readonly attempt: number
  readonly delayMs: number
  readonly error: LLMError
}

interface RetryOptions<R2> {
  readonly policy?: Policy
  readonly onRetry?: (retried: Retried) => Effect.Effect<void, never, R2>
}

/**
 * After attempt `n` failed with `error` before emitting anything: `again` once `onRetry` has run and
 * the delay has been slept, when the policy allows another attempt; else the failure, unchanged.
 */
const retryOrFail = <A, E, R, R2>(
  n: number,
  error: LLMError,
  options: RetryOptions<R2>,
  again: Effect.Effect<A, E, R>
): Effect.Effect<A, E | LLMError, R | R2> =>
  Effect.flatMap(nextDelay(n, error, options.policy), (delay): Effect.Effect<A, E | LLMError, R | R2> => {
    if (Option.isNone(delay)) return Effect.fail(error)
    const retried =
      options.onRetry === undefined ? Effect.void : options.onRetry({ attempt: n, delayMs: delay.value, error })
    return Effect.zipRight(Effect.zipRight(retried, Effect.sleep(delay.value)), again)
  })

/**
 * Runs attempts of a provider stream with the policy: `attempt(n)` makes the n-th attempt (1-based).
 * An attempt that fails with a retryable error *before emitting any event* is retried: `onRetry` runs
 * first (publish the durable retried event there), then the delay is slept (`Effect.sleep`, so a
 * TestClock controls it). A failure after output was emitted is not retried here, since the consumer
 * has already seen (and maybe persisted) part of that attempt; the runner decides what to do with it.
 * The last failure propagates unchanged. Interrupting the consumer interrupts the wait as well.
 */
export const stream = <R, R2 = never>(
  attempt: (n: number) => Stream.Stream<LLMEvent.Event, LLMError, R>,
  options: RetryOptions<R2> = {}
): Stream.Stream<LLMEvent.Event, LLMError, R | R2> => {
  const run = (n: number): Stream.Stream<LLMEvent.Event, LLMError, R | R2> =>
    Stream.suspend(() => {
      let emitted = false
      return attempt(n).pipe(
        Stream.mapChunks((chunk) => {
          if (chunk.length > 0) emitted = true
          return chunk
        }),
        Stream.catchAll((error) =>
          emitted ? Stream.fail(error) : Stream.unwrap(retryOrFail(n, error, options, Effect.succeed(run(n + 1))))
        )
      )
    })
  return run(1)
}

/**
 * {@link stream} consumed: the same attempts, retries and failures, with every chunk of events
 * handled by `handle` as it arrives, without a stream around the attempts. `attempt(n, handle)` runs
 * the n-th attempt (1-based) and hands each of its chunks to the `handle` it is given, which counts
 * what was emitted and then calls the `handle` given here; it may wrap the attempt (to log or time it).
 */
export const forEachChunk = <R, R2 = never, R3 = never>(
  attempt: (
    n: number,
    handle: (chunk: Chunk.Chunk<LLMEvent.Event>) => Effect.Effect<void, never, R3>
  ) => Effect.Effect<void, LLMError, R>,
  handle: (chunk: Chunk.Chunk<LLMEvent.Event>) => Effect.Effect<void, never, R3>,
  options: RetryOptions<R2> = {}
): Effect.Effect<void, LLMError, R | R2 | R3> => {
  const run = (n: number): Effect.Effect<void, LLMError, R | R2 | R3> =>
    Effect.suspend(() => {
      let emitted = false
      return Effect.catchAll(
        attempt(n, (chunk) => {
          if (chunk.length > 0) emitted = true
          return handle(chunk)
        }),
        (error) => (emitted ? Effect.fail(error) : retryOrFail(n, error, options, run(n + 1)))
      )
    })
  return run(1)
}
