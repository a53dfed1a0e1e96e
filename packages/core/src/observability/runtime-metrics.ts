export * as RuntimeMetrics from "./runtime-metrics.js"

/**
 * Runtime Metrics: the process's operational counters, gauges and histograms, as Effect `Metric`s in
 * Effect's process-wide registry (`Metric.snapshot` reads them all; the server renders them at
 * `GET /metrics` in the Prometheus text format). This module defines every metric of the runtime and
 * the small recorders the call sites use, so each site adds one line.
 *
 * | metric                                        | type      | labels                     | recorded at                         |
 * |-----------------------------------------------|-----------|----------------------------|-------------------------------------|
 * | `opencode_steps_total`                        | counter   | outcome, provider, model   | a Step settles (StepRunner)         |
 * | `opencode_tokens_total`                       | counter   | kind, provider, model      | a Step's `step.ended` (its usage)   |
 * | `opencode_cost_usd_total`                     | counter   | provider, model            | a Step's `step.ended` (its cost)    |
 * | `opencode_provider_request_duration_seconds`  | histogram | provider, model, outcome   | each provider HTTP request ends     |
 * | `opencode_provider_errors_total`              | counter   | provider, model, error     | a provider request fails            |
 * | `opencode_tool_duration_seconds`              | histogram | tool, outcome              | a tool call settles (ToolSettlement)|
 * | `opencode_sessions_active`                    | gauge     |                            | an Execution starts / ends          |
 * | `opencode_sse_subscribers`                    | gauge     | stream                     | an SSE response starts / ends       |
 * | `opencode_db_commit_duration_seconds`         | histogram |                            | each durable transition's commit    |
 * | `opencode_db_statements_cancelled_total`      | counter   |                            | PostgresPool cancels a statement    |
 *
 * Outcomes: a Step is `continue` (its tool calls settled and the run goes on), `stop`, `failed`,
 * `overflow` or `interrupted`; a provider request `ok`, `error` or `interrupted`; a tool call
 * `success`, `failed` or `interrupted`. Token kinds are `input`, `output`, `reasoning`, `cache_read`
 * and `cache_write`, in the runtime's disjoint convention (see `LLMEvent.Usage`).
 *
 * The registry is global: several Cores in one process (embedded hosts, tests) add to the same
 * series, and the gauges move by increments so that they stay right when they do. Recording is an
 * in-memory update; nothing is exported unless something reads the snapshot.
 */

import type { Session } from "@opencode-ai/schema"
import { Cause, Clock, Effect, Exit, Metric, MetricBoundaries, MetricLabel, type Scope } from "effect"

/** Seconds: 5 ms … ~82 s, doubling (15 buckets, then +Inf). */
const latencyBoundaries = MetricBoundaries.exponential({ start: 0.005, factor: 2, count: 15 })
/** Seconds: 0.25 ms … ~4 s, doubling (15 buckets, then +Inf): a commit is short. */
const commitBoundaries = MetricBoundaries.exponential({ start: 0.00025, factor: 2, count: 15 })

export const steps = Metric.counter("opencode_steps_total", {
  description: "Steps settled, by outcome (continue, stop, failed, overflow, interrupted), provider and model.",
  incremental: true
})

export const tokens = Metric.counter("opencode_tokens_total", {
  description:
    "Tokens of settled Steps, by kind (input, output, reasoning, cache_read, cache_write), provider and model.",
  incremental: true
})

export const cost = Metric.counter("opencode_cost_usd_total", {
  description: "Cost in USD of settled Steps from the model catalog's pricing, by provider and model.",
  incremental: true
})

export const providerRequestDuration = Metric.histogram(
  "opencode_provider_request_duration_seconds",
  latencyBoundaries,
  "Duration of each provider request, from sending it to the end of its stream, by provider, model and outcome."
)

export const providerErrors = Metric.counter("opencode_provider_errors_total", {
  description: "Failed provider requests, by provider, model and error (the LLM error's tag).",
  incremental: true
})

export const toolDuration = Metric.histogram(
  "opencode_tool_duration_seconds",
  latencyBoundaries,
  "Duration of each tool call, from its start to its settlement, by tool and outcome (success, failed, interrupted)."
)

export const activeSessions = Metric.gauge("opencode_sessions_active", {
  description: "Sessions whose Execution is running (a drain is in progress) in this process."
})

export const sseSubscribers = Metric.gauge("opencode_sse_subscribers", {
  description: "Open server-sent event streams, by stream (instance, session)."
})

export const dbCommitDuration = Metric.histogram(
  "opencode_db_commit_duration_seconds",
  commitBoundaries,
  "Duration of each durable transition's SQL transaction (BEGIN to COMMIT), waiting for the writer excluded."
)

export const dbStatementsCancelled = Metric.counter("opencode_db_statements_cancelled_total", {
  description:
    "PostgreSQL statements interrupted while they ran, so cancelled on the server and their connection retired (PostgresPool).",
  incremental: true
})

/** How a Step settled, for {@link steps}. */
export type StepOutcome = "continue" | "stop" | "failed" | "overflow" | "interrupted"

/** The model a metric is about. */
export interface ModelLabels {
  readonly providerID: string
  readonly modelID: string
}

const modelLabels = (model: ModelLabels, ...more: ReadonlyArray<readonly [string, string]>) => [
  MetricLabel.make("provider", model.providerID),
  MetricLabel.make("model", model.modelID),
  ...more.map(([key, value]) => MetricLabel.make(key, value))
]

/** Counts one settled Step. */
export const stepSettled = (model: ModelLabels, outcome: StepOutcome): Effect.Effect<void> =>
  Metric.increment(Metric.taggedWithLabels(steps, modelLabels(model, ["outcome", outcome])))

/** Adds a settled Step's usage and cost (zero amounts add nothing). */
export const usage = (model: ModelLabels, used: Session.Tokens, usd: number): Effect.Effect<void> =>
  Effect.all(
    [
      ["input", used.input],
      ["output", used.output],
      ["reasoning", used.reasoning],
      ["cache_read", used.cache.read],
      ["cache_write", used.cache.write]
    ]
      .filter(([, amount]) => (amount as number) > 0)
      .map(([kind, amount]) =>
        Metric.incrementBy(
          Metric.taggedWithLabels(tokens, modelLabels(model, ["kind", kind as string])),
          amount as number
        )
      )
      .concat(usd > 0 ? [Metric.incrementBy(Metric.taggedWithLabels(cost, modelLabels(model)), usd)] : []),
    { discard: true }
  )

/** Seconds elapsed since `start` (from `Clock.currentTimeNanos`). */
const secondsSince = (start: bigint) => Effect.map(Clock.currentTimeNanos, (now) => Number(now - start) / 1_000_000_000)

/**
 * Times one provider request, `open`ed in the scope of its stream: from the moment it is opened to
 * the scope's close (the stream's end, failure or interruption). A failure also counts in
 * {@link providerErrors} under the error's `_tag`.
 */
export const providerRequest = <A, E, R>(
  model: ModelLabels,
  open: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R | Scope.Scope> =>
  Effect.gen(function* () {
    const start = yield* Clock.currentTimeNanos
    yield* Effect.addFinalizer((exit) =>
      Effect.flatMap(secondsSince(start), (seconds) => {
        const outcome = Exit.isSuccess(exit) ? "ok" : Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "error"
        const timed = Metric.update(
          Metric.taggedWithLabels(providerRequestDuration, modelLabels(model, ["outcome", outcome])),
          seconds
        )
        if (outcome !== "error" || Exit.isSuccess(exit)) return timed
        const failure = Cause.failureOption(exit.cause)
        const error =
          failure._tag === "Some" &&
          typeof failure.value === "object" &&
          failure.value !== null &&
          "_tag" in failure.value
            ? String(failure.value._tag)
            : "defect"
        return Effect.zipRight(
          timed,
          Metric.increment(Metric.taggedWithLabels(providerErrors, modelLabels(model, ["error", error])))
        )
      })
    )
    return yield* open
  })

/** Records one tool call's duration since `start` (from `Clock.currentTimeNanos`). */
export const toolSettled = (
  tool: string,
  outcome: "success" | "failed" | "interrupted",
  start: bigint
): Effect.Effect<void> =>
  Effect.flatMap(secondsSince(start), (seconds) =>
    Metric.update(toolDuration.pipe(Metric.tagged("tool", tool), Metric.tagged("outcome", outcome)), seconds)
  )

/** Times `effect` (a transaction) into {@link dbCommitDuration}, whatever its exit. */
export const commit = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Clock.currentTimeNanos, (start) =>
    effect.pipe(
      Effect.ensuring(Effect.flatMap(secondsSince(start), (seconds) => Metric.update(dbCommitDuration, seconds)))
    )
  )

/** Holds one unit of `gauge` while `effect` runs (added at its start, removed however it ends). */
export const holding =
  (gauge: Metric.Metric.Gauge<number>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.acquireUseRelease(
      Metric.incrementBy(gauge, 1),
      () => effect,
      () => Metric.incrementBy(gauge, -1)
    )
