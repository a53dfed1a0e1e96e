export * as StepRunner from "./step-runner.js"

import { Identifier, type Model } from "@opencode-ai/schema"
import { type Chunk, Clock, Context, Data, Effect, Fiber, Layer } from "effect"
import type { AgentCatalog } from "../config/agent-catalog.js"
import type { Catalog } from "../config/catalog.js"
import { LiveBus } from "../event/live-bus.js"
import { LLMClient } from "../llm/llm-client.js"
import type { LLMError } from "../llm/llm-error.js"
import type { LLMEvent } from "../llm/llm-event.js"
import type { LLMRequest } from "../llm/llm-request.js"
import { Retry } from "../llm/retry.js"
import { RuntimeMetrics } from "../observability/runtime-metrics.js"
import { Traced } from "../observability/traced.js"
import { SessionEvents } from "../session/session-events.js"
import { StepCost } from "../session/step-cost.js"
import { Snapshots } from "../snapshot/snapshots.js"
import { StepSnapshots } from "../snapshot/step-snapshots.js"
import type { StructuredOutput } from "../structured/structured-output.js"
import type { ToolRegistry } from "../tool/tool-registry.js"
import { ProviderEvents } from "./provider-events.js"
import { StepEvent } from "./step-event.js"
import { ToolSettlement } from "./tool-settlement.js"

export interface Input {
  readonly sessionID: Identifier.SessionID
  /** The session's Location directory, for tools. */
  readonly directory: string
  readonly agent: AgentCatalog.Agent
  readonly model: Model.ModelRef
  /** The model's catalog pricing: `step.ended` carries the Step's cost from it (see StepCost); none costs 0. */
  readonly pricing?: Catalog.Cost | undefined
  /** The Step's Model Context, as one provider request (see ModelContext). */
  readonly request: LLMRequest.Request
  /** The tools the model may call in this Step, by name. */
  readonly tools: ToolRegistry.Materialized
  /**
   * The caller recovers from a context overflow (a compaction, then a second Physical Attempt of
   * the same Step): an overflow before anything was recorded then records nothing and resolves as
   * `Overflow({recorded: false})`. Default false: an overflow fails the Step like any failure.
   */
  readonly recoverOverflow?: boolean
  /**
   * The Step was asked for a Structured Output: its `StructuredOutput` tool is added to `tools`, and
   * once the provider finished and the calls settled its verdict decides the Step: `Captured` ends
   * it as `Stop` (the run stops), `Missing` fails it with the StructuredOutputError.
   */
  readonly structured?: StructuredOutput.Attempt | undefined
  /**
   * The worktree's snapshot this Step starts from, when the caller has one taken moments before: the
   * end snapshot of the Step it continues (`Continue.snapshot`). Without it, the Step takes its own
   * before its provider request (see StepSnapshots).
   */
  readonly snapshot?: string | undefined
}

/**
 * How a Step settled (its durable record, if any, is already committed when this is returned):
 * - `Continue`: the provider finished and the Step's `toolCalls` (> 0) calls settled
 *   (`step.ended("tool-calls")`): the conversation continues with another Step. `snapshot` is the
 *   worktree's snapshot taken once they settled (recorded on `step.ended`), when one was taken;
 * - `Stop`: the provider finished without calling tools (`step.ended(finish)`): the next Safe Step
 *   Boundary decides whether anything continues;
 * - `Failed`: the provider failed the Step after its retries (`step.failed`);
 * - `Overflow`: the provider answered that the request exceeds the model's context, before any
 *   output. With `recoverOverflow` and nothing recorded yet, nothing is recorded (`recorded: false`):
 *   the Step has no record until a second Physical Attempt produces output. Otherwise the Step is
 *   failed (`step.failed`, `recorded: true`).
 *
 * An interruption is not an outcome: the interrupted Step settles durably (see {@link Interface.run})
 * and the interruption goes on.
 */
export type Outcome = Data.TaggedEnum<{
  Continue: { readonly toolCalls: number; readonly snapshot?: string | undefined }
  Stop: { readonly finish: string }
  Failed: { readonly message: string }
  Overflow: { readonly message: string; readonly recorded: boolean }
}>

export const Outcome = Data.taggedEnum<Outcome>()

export interface Interface {
  /**
   * Runs one Step: one Physical Attempt (a provider stream, retried by the retry policy while the
   * provider has sent no output, each retry recorded as `session.next.retried`) and the settlement of
   * every tool call it makes (see ToolSettlement). The Step's record begins with its first output:
   * `step.started` commits in the transaction of the Step's first durable event (or with its
   * `step.ended` / `step.failed` when there is none), so pre-flight and an overflow the caller
   * recovers from leave no record. Reads nothing but its input: the Model Context was
   * assembled before. Each transition is its own durable event (see ProviderEvents for the mapping);
   * the durable events of one provider chunk batch (what one read of the response held: one SSE
   * event, such as a finished call's `tool.input.ended` and `tool.called`, or a whole short answer)
   * commit in one transaction, each still its own event, and the batch's deltas go to the live bus
   * in their places among those events once it has committed. In a Step that calls no tool, the
   * batches from the one that carries the provider's finish on (the stream's end) are held and
   * commit with the Step's settlement, ahead of it, in its transaction: a short text Step is thus one
   * commit, `step.started` to `step.ended`. A call starts running only once its `tool.called` has
   * committed; calls run concurrently.
   *
   * ```
   * step.started ─► text / reasoning / tool input blocks ─► tool.called ─► tool.success | tool.failed
   *             └─► step.ended (finish, tokens, cost)  |  step.failed (error)
   * ```
   *
   * `step.ended` (after every call settled) and `step.failed` (after open blocks are ended with their
   * partial value and running calls are interrupted and settled) are their own transactions, but for
   * what was held. Resolves once the Step is settled, with its {@link Outcome}.
   *
   * On interruption: open text and reasoning blocks are ended with their partial value (one
   * transaction each), running tools are interrupted and settle as failed
   * (`ToolSettlement.interruptedMessage`), then the Step settles, all before the interruption
   * completes: while the provider was still streaming, as
   * `step.failed({@link providerInterruptedMessage})` (the message's `finish` becomes `"error"`);
   * once the provider had finished its turn (tools were running), as `step.ended` with its finish
   * (`"tool-calls"` when tools had been called), as upstream does.
   */
  readonly run: (input: Input) => Effect.Effect<Outcome>
  /**
   * Records a Step that could not reach the provider (e.g. no usable model): `step.started` and
   * `step.failed` with the reason, in one transaction, so the failure is visible in history instead
   * of silent.
   */
  readonly failBeforeOutput: (input: {
    readonly sessionID: Identifier.SessionID
    readonly agent: AgentCatalog.Agent
    readonly model: Model.ModelRef
    readonly message: string
  }) => Effect.Effect<void>
}

/** The error of a Step interrupted while its provider stream ran (upstream's wording, which clients match). */
export const providerInterruptedMessage = "Provider turn interrupted"

/** `yield* StepRunner.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/StepRunner")<Service, Interface>() {}

export interface Options {
  /** The provider retry policy; default `Retry.defaultPolicy`. */
  readonly retry?: Retry.Policy | undefined
}

const errorMessage = (error: LLMError.Any): string => error.message

/** Durable events with their deltas, each delta at its place: published after the first `index` events. */
interface Held {
  readonly list: ReadonlyArray<StepEvent.StepEvent>
  readonly live: ReadonlyArray<readonly [number, LiveBus.Envelope]> | undefined
}

/** `durable` and its `deltas` after what is `held`, if anything: the deltas' places move by the held events. */
const withHeld = (
  held: Held | undefined,
  durable: ReadonlyArray<StepEvent.StepEvent>,
  deltas: ReadonlyArray<readonly [number, LiveBus.Envelope]> | undefined
): Held => {
  if (held === undefined) return { list: durable, live: deltas }
  const shift = held.list.length
  const live = [...(held.live ?? []), ...(deltas ?? []).map(([index, envelope]) => [index + shift, envelope] as const)]
  return { list: [...held.list, ...durable], live: live.length === 0 ? undefined : live }
}

const stepOutcomes: Record<Outcome["_tag"], RuntimeMetrics.StepOutcome> = {
  Continue: "continue",
  Stop: "stop",
  Failed: "failed",
  Overflow: "overflow"
}

export const layer = (
  options: Options = {}
): Layer.Layer<Service, never, SessionEvents.Service | LiveBus.Service | LLMClient.Service | ToolSettlement.Service> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const events = yield* SessionEvents.Service
      const bus = yield* LiveBus.Service
      const llm = yield* LLMClient.Service
      const settlement = yield* ToolSettlement.Service
      // Optional: with it, each Step records file snapshots around itself (see StepSnapshots).
      const snapshots = yield* Effect.serviceOption(Snapshots.Service)

      const failBeforeOutput = Traced.fn("StepRunner.failBeforeOutput")(function* (input: {
        readonly sessionID: Identifier.SessionID
        readonly agent: AgentCatalog.Agent
        readonly model: Model.ModelRef
        readonly message: string
      }) {
        const assistantMessageID = Identifier.newMessageID() as typeof Identifier.SessionMessageID.Type
        yield* Effect.logWarning("step failed before the provider call", { error: input.message }).pipe(
          Effect.annotateLogs({ sessionID: input.sessionID })
        )
        yield* StepEvent.append(events, input.sessionID, [
          StepEvent.make("session.next.step.started", {
            assistantMessageID,
            agent: input.agent.name,
            model: input.model
          }),
          StepEvent.make("session.next.step.failed", {
            assistantMessageID,
            error: { type: "unknown", message: input.message }
          })
        ])
        yield* RuntimeMetrics.stepSettled({ providerID: input.model.providerID, modelID: input.model.id }, "failed")
      })

      const run = Traced.fn("StepRunner.run")(function* (input: Input) {
        const { sessionID } = input
        const assistantMessageID = Identifier.newMessageID() as typeof Identifier.SessionMessageID.Type
        const model = input.request.model
        // The Step's span (this function's): its children are the provider call, and under it the tool calls.
        yield* Effect.annotateCurrentSpan({
          sessionID,
          stepID: assistantMessageID,
          agent: input.agent.name,
          providerID: model.providerID,
          modelID: model.modelID
        })
        const mapping = ProviderEvents.mapper(assistantMessageID)
        const offered = input.structured?.offer(input.tools) ?? input.tools
        const tools: Array<Fiber.RuntimeFiber<void>> = []
        // What the provider reported so far: its usage and its finish reason.
        let usage: LLMEvent.Usage["tokens"] | undefined
        let finish = "other"
        // Whether the provider's finish has arrived (it comes at the stream's end).
        let finishSeen = false

        const emit = <T extends SessionEvents.Type>(type: T, data: StepEvent.Data<T>) =>
          StepEvent.append(events, sessionID, [StepEvent.make(type, data)])

        // The worktree's snapshot before the Step (recorded on `step.started`), and the end one to come.
        const around = yield* StepSnapshots.begin(snapshots, input.directory, input.snapshot)
        // The Step's record starts with its first durable event: `step.started` joins that transaction.
        let started = false
        // The durable events (and deltas) of the chunks after the provider's finish in a Step that
        // calls no tool: held, and committed at the head of the Step's next record, its settlement.
        let held: Held | undefined
        const record = (
          durable: ReadonlyArray<StepEvent.StepEvent>,
          deltas?: ReadonlyArray<readonly [number, LiveBus.Envelope]>
        ) =>
          Effect.suspend(() => {
            const { list, live } = withHeld(held, durable, deltas)
            held = undefined
            if (started) return StepEvent.append(events, sessionID, list, live)
            started = true
            return StepEvent.append(
              events,
              sessionID,
              [
                StepEvent.make("session.next.step.started", {
                  assistantMessageID,
                  agent: input.agent.name,
                  model: input.model,
                  ...around.started
                }),
                ...list
              ],
              // `step.started` comes first: the deltas' places move by one.
              live?.map(([index, envelope]) => [index + 1, envelope] as const)
            )
          })

        /** A live-only envelope (a delta) of this Step. */
        const liveEnvelope = (type: string, data: Readonly<Record<string, unknown>>, timestamp: number) => ({
          id: Identifier.newEventID(timestamp),
          type,
          data: { timestamp, sessionID, assistantMessageID, ...data }
        })

        // Each open block is ended in its own transaction, and forgotten even if that is interrupted.
        const closeOpenBlocks = Effect.suspend(() =>
          Effect.forEach(mapping.open(), (block) =>
            record([block.ended]).pipe(Effect.ensuring(Effect.sync(() => mapping.closed(block.id))))
          )
        )

        /**
         * Handles the events of one chunk (those of one provider SSE event, or of several that arrived
         * together): its durable events commit as ONE transaction, each still its own event, and its
         * deltas go to the live bus in their places among them once that has committed (see
         * EventLog.AppendOptions.live), so live readers see the chunk in stream order. A call's
         * settlement starts (in its own fiber) only once its `tool.called` has committed.
         */
        const handleChunk = (chunk: Chunk.Chunk<LLMEvent.Event>): Effect.Effect<void> =>
          Effect.flatMap(Clock.currentTimeMillis, (timestamp) => {
            const durable: Array<StepEvent.StepEvent> = []
            const calls: Array<LLMEvent.ToolCall> = []
            let live: Array<readonly [number, LiveBus.Envelope]> | undefined
            for (const event of chunk) {
              const mapped = mapping.map(event)
              switch (mapped._tag) {
                case "Durable":
                  durable.push(mapped.event)
                  if (mapped.call !== undefined) calls.push(mapped.call)
                  break
                case "Live":
                  live ??= []
                  live.push([durable.length, liveEnvelope(mapped.type, mapped.data, timestamp)])
                  break
                case "Usage":
                  usage = mapped.tokens
                  break
                case "Finish":
                  finish = mapped.reason
                  finishSeen = true
                  break
              }
            }
            if (durable.length === 0 && held === undefined) {
              return live === undefined ? Effect.void : bus.publishAll(live.map(([, envelope]) => envelope))
            }
            if (finishSeen && calls.length === 0 && tools.length === 0) {
              held = withHeld(held, durable, live)
              return Effect.void
            }
            const committed = record(durable, live)
            if (calls.length === 0) return committed
            return Effect.zipRight(
              committed,
              Effect.forEach(
                calls,
                (call) =>
                  Effect.map(
                    Effect.forkDaemon(
                      settlement.settle({
                        sessionID,
                        assistantMessageID,
                        agent: input.agent,
                        directory: input.directory,
                        tools: offered,
                        call
                      })
                    ),
                    (fiber) => void tools.push(fiber)
                  ),
                { discard: true }
              )
            )
          })

        /**
         * The provider call: its Physical Attempts (the request on the wire, retried while nothing
         * was streamed), every chunk handled as it arrives. Fails with the provider's final error.
         */
        const attempt = (request: LLMRequest.Request) =>
          Retry.forEachChunk((n, handle) => providerCall(request, n, handle), handleChunk, {
            ...(options.retry !== undefined ? { policy: options.retry } : {}),
            onRetry: ({ attempt, delayMs, error }) =>
              emit("session.next.retried", {
                attempt,
                error: {
                  message: errorMessage(error),
                  isRetryable: true,
                  ...("status" in error && error.status !== undefined ? { statusCode: error.status } : {}),
                  metadata: { delayMs: String(delayMs) }
                }
              }).pipe(Effect.zipLeft(Effect.logInfo("retrying the provider call", { attempt: attempt + 1, delayMs })))
          }).pipe(
            // The provider call (retries included). Tool calls start inside it, so their spans are its
            // children; one span per Physical Attempt, none per streamed event.
            Traced.withSpan("StepRunner.attempt", {
              attributes: {
                sessionID,
                stepID: assistantMessageID,
                providerID: model.providerID,
                modelID: model.modelID,
                "gen_ai.provider.name": model.providerID,
                "gen_ai.request.model": model.modelID
              }
            })
          )

        /**
         * One Physical Attempt, its chunks handed to `handle`, logged once it ends: `provider call`
         * (INFO) with its finish and tokens, or `provider call failed` (WARN) with the HTTP status (or
         * the failure's tag) and message.
         */
        const providerCall = (
          request: LLMRequest.Request,
          n: number,
          handle: (chunk: Chunk.Chunk<LLMEvent.Event>) => Effect.Effect<void>
        ) =>
          Effect.flatMap(Clock.currentTimeMillis, (start) => {
            let tokens: LLMEvent.Usage["tokens"] | undefined
            let reason: string | undefined
            const fields = Effect.map(Clock.currentTimeMillis, (now) => ({
              provider: input.model.providerID,
              model: input.model.id,
              attempt: n,
              latencyMs: now - start
            }))
            return llm
              .forEachChunk(request, (chunk) => {
                for (const event of chunk) {
                  if (event.type === "usage") tokens = event.tokens
                  else if (event.type === "finish") reason = event.reason
                }
                return handle(chunk)
              })
              .pipe(
                Effect.tapError((error) =>
                  Effect.flatMap(fields, (f) =>
                    Effect.logWarning("provider call failed", {
                      ...f,
                      status: "status" in error && error.status !== undefined ? error.status : error._tag,
                      error: error.message
                    })
                  )
                ),
                Effect.zipLeft(
                  Effect.flatMap(fields, (f) =>
                    Effect.logInfo("provider call", {
                      ...f,
                      status: "ok",
                      finish: reason,
                      inputTokens: tokens?.input,
                      outputTokens: tokens?.output,
                      ...(tokens !== undefined && tokens.reasoning > 0 ? { reasoningTokens: tokens.reasoning } : {}),
                      ...(tokens !== undefined && tokens.cache.read > 0 ? { cacheReadTokens: tokens.cache.read } : {})
                    })
                  )
                )
              )
          })

        const tokens = Effect.sync(() => usage ?? { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } })

        // The snapshot `step.ended` records, once it is taken.
        let endSnapshot: string | undefined
        const ended = (reason: string) =>
          Effect.flatMap(Effect.zip(tokens, around.end(tools.length > 0)), ([usage, snapshot]) => {
            endSnapshot = snapshot.snapshot
            const cost = StepCost.of(input.pricing, usage)
            return record([
              StepEvent.make("session.next.step.ended", {
                assistantMessageID,
                finish: reason,
                cost,
                tokens: usage,
                ...snapshot
              })
            ]).pipe(Effect.zipRight(RuntimeMetrics.usage(model, usage, cost)))
          })

        const failed = (message: string, options?: { readonly logged: boolean }) =>
          Effect.zipRight(
            options?.logged === true ? Effect.void : Effect.logWarning("step failed", { error: message }),
            record([
              StepEvent.make("session.next.step.failed", { assistantMessageID, error: { type: "unknown", message } })
            ])
          )

        // Whether the provider finished its turn (its stream ended): an interruption after that ends
        // the Step with the provider's finish, one before it fails the Step.
        let finished = false
        return yield* Effect.gen(function* () {
          const streamed = yield* Effect.either(attempt(input.request))
          if (streamed._tag === "Right") finished = true
          if (streamed._tag === "Left") {
            const error = streamed.left
            yield* closeOpenBlocks
            yield* Effect.forEach(tools, Fiber.interrupt)
            if (
              error._tag === "ContextOverflowError" &&
              input.recoverOverflow === true &&
              !started &&
              held === undefined
            ) {
              return Outcome.Overflow({ message: error.message, recorded: false })
            }
            yield* failed(errorMessage(error))
            return error._tag === "ContextOverflowError"
              ? Outcome.Overflow({ message: error.message, recorded: true })
              : Outcome.Failed({ message: error.message })
          }
          yield* Effect.forEach(tools, Fiber.join)
          const verdict = input.structured === undefined ? undefined : yield* input.structured.verdict(tools.length)
          if (verdict?._tag === "Missing") {
            yield* record([StepEvent.make("session.next.step.failed", { assistantMessageID, error: verdict.error })])
            return Outcome.Failed({ message: verdict.error.data.message })
          }
          if (tools.length > 0) {
            yield* ended("tool-calls")
            // A captured Structured Output is the run's final answer: nothing continues it.
            return verdict?._tag === "Captured"
              ? Outcome.Stop({ finish: "tool-calls" })
              : Outcome.Continue({ toolCalls: tools.length, snapshot: endSnapshot })
          }
          const reason = finish
          yield* ended(reason)
          return Outcome.Stop({ finish: reason })
        }).pipe(
          Effect.tap((outcome) => RuntimeMetrics.stepSettled(model, stepOutcomes[outcome._tag])),
          Effect.onInterrupt(() =>
            Effect.gen(function* () {
              yield* Effect.logInfo("step interrupted", {
                during: finished ? "tools" : "provider stream",
                toolCalls: tools.length
              })
              yield* closeOpenBlocks
              yield* Effect.forEach(tools, Fiber.interrupt)
              yield* RuntimeMetrics.stepSettled(model, "interrupted")
              if (!finished) return yield* failed(providerInterruptedMessage, { logged: true })
              yield* tools.length > 0 ? ended("tool-calls") : Effect.suspend(() => ended(finish))
            })
          )
        )
      })

      return Service.of({ run, failBeforeOutput })
    })
  )
