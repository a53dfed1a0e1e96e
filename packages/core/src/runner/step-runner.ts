export * as StepRunner from "./step-runner.js"

import { type Event, Identifier, type Model } from "@opencode-ai/schema"
import { Cause, type Chunk, Clock, Effect, Exit, Fiber, Option, Ref, Stream } from "effect"
import type { AgentCatalog } from "../config/agent-catalog.js"
import type { EventLog } from "../event/event-log.js"
import { LiveBus } from "../event/live-bus.js"
import { LLMClient } from "../llm/llm-client.js"
import type { LLMError } from "../llm/llm-error.js"
import type { LLMEvent } from "../llm/llm-event.js"
import type { LLMRequest } from "../llm/llm-request.js"
import { Retry } from "../llm/retry.js"
import { PermissionRequests } from "../permission/permission-requests.js"
import { SessionEvents } from "../session/session-events.js"
import { ModelToolOutput } from "../tool/model-tool-output.js"
import type { ToolRegistry } from "../tool/tool-registry.js"

export interface Input {
  readonly sessionID: string
  /** The session's Location directory, for tools. */
  readonly directory: string
  readonly agent: AgentCatalog.Agent
  readonly model: Model.ModelRef
  readonly request: LLMRequest.Request
  /** The tools the model may call in this Step, by name. */
  readonly tools: ToolRegistry.Materialized
  readonly retry?: Retry.Policy
}

/**
 * How a Step settled:
 * - `Ended`: the provider finished; `toolCalls` calls were made and settled (continue when > 0);
 * - `Failed`: the provider or the runtime failed the Step (`step.failed` is recorded);
 * - `Overflow`: the context was too large before any output. The Step is failed for now; this is the
 *   place where one compaction-recovery Physical Attempt plugs in.
 */
export type Outcome =
  | { readonly _tag: "Ended"; readonly finish: string; readonly toolCalls: number }
  | { readonly _tag: "Failed"; readonly message: string }
  | { readonly _tag: "Overflow"; readonly message: string }

type DurableType = Event.SessionDurableEvent["type"]
type DataOf<T extends DurableType> = Omit<
  Extract<Event.SessionDurableEvent, { type: T }>["data"],
  "timestamp" | "sessionID"
>

const errorMessage = (error: LLMError.Any): string => error.message

/** What running a Step needs from the environment. */
export type Requirements =
  | SessionEvents.Service
  | LiveBus.Service
  | LLMClient.Service
  | ModelToolOutput.Service
  | PermissionRequests.Service

/**
 * Records a Step that could not reach the provider (e.g. no usable model): `step.started` and
 * `step.failed` with the reason, so the failure is visible in history instead of silent.
 */
export const failBeforeOutput = Effect.fn("StepRunner.failBeforeOutput")(function* (input: {
  readonly sessionID: string
  readonly agent: AgentCatalog.Agent
  readonly model: Model.ModelRef
  readonly message: string
}) {
  const events = yield* SessionEvents.Service
  const timestamp = yield* Clock.currentTimeMillis
  const assistantMessageID = Identifier.newMessageID() as typeof Identifier.SessionMessageID.Type
  const at = { timestamp, sessionID: input.sessionID as Identifier.SessionID, assistantMessageID }
  yield* events
    .append(input.sessionID, [
      SessionEvents.draft("session.next.step.started", { ...at, agent: input.agent.name, model: input.model }),
      SessionEvents.draft("session.next.step.failed", { ...at, error: { type: "unknown", message: input.message } })
    ])
    .pipe(Effect.orDie)
})

/**
 * Runs one Step: one provider stream (with retries before any output) and the settlement of every
 * tool call it makes, publishing each transition as its own durable event and the deltas on the live
 * bus. Durable events that the provider delivered together (in one SSE event, such as a finished
 * call's `tool.input.ended` and `tool.called`) commit in one transaction; each is still its own event.
 *
 * ```
 * step.started ─► text / reasoning / tool input blocks ─► tool.called ─► tool.success | tool.failed
 *             └─► step.ended (finish, tokens)  |  step.failed (error)
 * ```
 *
 * Resolves once the Step is settled. On interruption: open text and reasoning blocks are ended with
 * their partial value, running tools are failed as interrupted, and the Step settles as
 * `step.ended("tool-calls")` when tools had been called, else `step.failed` — all before the
 * interruption completes.
 */
export const run = Effect.fn("StepRunner.run")(function* (input: Input) {
  const events = yield* SessionEvents.Service
  const live = yield* LiveBus.Service
  const llm = yield* LLMClient.Service
  const permissions = yield* PermissionRequests.Service
  const output = yield* ModelToolOutput.Service
  const { sessionID } = input
  const assistantMessageID = Identifier.newMessageID() as typeof Identifier.SessionMessageID.Type

  // The session exists for the whole Step (sessions are never deleted under a running drain).
  const emit = <T extends DurableType>(type: T, data: DataOf<T>) =>
    Effect.flatMap(Clock.currentTimeMillis, (timestamp) =>
      events.append(sessionID, [
        SessionEvents.draft(type, { timestamp, sessionID, ...data } as unknown as SessionEvents.DataOf<T>)
      ])
    ).pipe(Effect.asVoid, Effect.orDie)

  const publish = (type: string, data: Record<string, unknown>) =>
    Effect.flatMap(Clock.currentTimeMillis, (timestamp) =>
      live.publish({ id: Identifier.newEventID(), type, data: { timestamp, sessionID, assistantMessageID, ...data } })
    )

  // Blocks streamed but not yet ended, in start order: their partial value is kept on interruption.
  const open = new Map<string, { readonly kind: "text" | "reasoning"; text: string }>()
  const tools: Array<Fiber.RuntimeFiber<void>> = []
  const usage = yield* Ref.make(Option.none<LLMEvent.Usage["tokens"]>())
  const finish = yield* Ref.make("other")

  const closeOpenBlocks = Effect.suspend(() =>
    Effect.forEach([...open], ([id, block]) =>
      (block.kind === "text"
        ? emit("session.next.text.ended", { assistantMessageID, textID: id, text: block.text })
        : emit("session.next.reasoning.ended", { assistantMessageID, reasoningID: id, text: block.text })
      ).pipe(Effect.ensuring(Effect.sync(() => open.delete(id))))
    )
  )

  /**
   * Runs one durable call: its settlement is published exactly once, even when interrupted. A success
   * is published as its bounded Model Tool Output (see ModelToolOutput).
   */
  const settle = (call: LLMEvent.ToolCall) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.gen(function* () {
        const provider = { executed: false }
        const outcome = yield* input.tools
          .settle(call, {
            sessionID,
            callID: call.id,
            messageID: assistantMessageID,
            agent: input.agent.name,
            directory: input.directory,
            // The Step's agent, captured now: a later agent switch does not change this call's policy.
            ask: PermissionRequests.forCall(permissions, {
              sessionID,
              agent: input.agent,
              messageID: assistantMessageID,
              callID: call.id
            }),
            progress: (report) => {
              // Progress is replaced by the settlement: an oversized report is clipped, never kept.
              const update = ModelToolOutput.clip(report, output.limits)
              return emit("session.next.tool.progress", {
                assistantMessageID,
                callID: call.id,
                structured: { ...update.structured },
                content: update.content
              })
            }
          })
          .pipe(
            Effect.mapError((failure) => failure.message),
            restore,
            Effect.exit
          )
        if (Exit.isSuccess(outcome)) {
          // Still inside the mask: bounding (and keeping the complete text) and publishing the one
          // settlement cannot be interrupted halfway, and raw oversized output is never published.
          const bounded: ToolRegistry.Result = yield* output.bound(outcome.value).pipe(
            Effect.catchAllCause((cause) =>
              Effect.as(Effect.logError("tool output bounding crashed; the output is dropped", cause), {
                content: [
                  {
                    type: "text" as const,
                    text: "[The tool succeeded, but its output could not be processed and was dropped.]"
                  }
                ],
                ...(outcome.value.structured !== undefined ? { structured: outcome.value.structured } : {})
              })
            ),
            Effect.annotateLogs({ sessionID, tool: call.name, callID: call.id })
          )
          yield* emit("session.next.tool.success", {
            assistantMessageID,
            callID: call.id,
            structured: { ...bounded.structured },
            content: bounded.content,
            ...(bounded.outputPaths !== undefined ? { outputPaths: bounded.outputPaths } : {}),
            provider
          })
          return
        }
        const message = Cause.isInterruptedOnly(outcome.cause)
          ? "interrupted"
          : Option.getOrElse(Cause.failureOption(outcome.cause), () => Cause.pretty(outcome.cause))
        if (!Cause.isInterruptedOnly(outcome.cause) && Option.isNone(Cause.failureOption(outcome.cause))) {
          yield* Effect.logError("tool crashed", outcome.cause).pipe(
            Effect.annotateLogs({ sessionID, tool: call.name })
          )
        }
        yield* emit("session.next.tool.failed", {
          assistantMessageID,
          callID: call.id,
          error: { type: "unknown", message },
          provider
        })
      })
    )

  /** A durable event to append for a provider event, with what must run once it has committed. */
  interface Durable {
    readonly _tag: "Durable"
    readonly draft: (timestamp: number) => EventLog.Draft
    readonly committed?: Effect.Effect<void>
  }
  /** A provider event that is not durable: a live delta, or bookkeeping. */
  interface Immediate {
    readonly _tag: "Immediate"
    readonly run: Effect.Effect<void>
  }
  const durable = <T extends DurableType>(type: T, data: DataOf<T>, committed?: Effect.Effect<void>): Durable => ({
    _tag: "Durable",
    draft: (timestamp) =>
      SessionEvents.draft(type, { timestamp, sessionID, ...data } as unknown as SessionEvents.DataOf<T>),
    ...(committed === undefined ? {} : { committed })
  })
  const immediate = (run: Effect.Effect<void>): Immediate => ({ _tag: "Immediate", run })

  /** What one provider event becomes (the open-block bookkeeping happens here, in stream order). */
  const classify = (event: LLMEvent.Event): Durable | Immediate => {
    switch (event.type) {
      case "text-start":
        open.set(event.id, { kind: "text", text: "" })
        return durable("session.next.text.started", { assistantMessageID, textID: event.id })
      case "text-delta": {
        const block = open.get(event.id)
        if (block) block.text += event.delta
        return immediate(publish("session.next.text.delta", { textID: event.id, delta: event.delta }))
      }
      case "text-end":
        open.delete(event.id)
        return durable("session.next.text.ended", { assistantMessageID, textID: event.id, text: event.text })
      case "reasoning-start":
        open.set(event.id, { kind: "reasoning", text: "" })
        return durable("session.next.reasoning.started", { assistantMessageID, reasoningID: event.id })
      case "reasoning-delta": {
        const block = open.get(event.id)
        if (block) block.text += event.delta
        return immediate(publish("session.next.reasoning.delta", { reasoningID: event.id, delta: event.delta }))
      }
      case "reasoning-end":
        open.delete(event.id)
        return durable("session.next.reasoning.ended", {
          assistantMessageID,
          reasoningID: event.id,
          text: event.text,
          ...(event.metadata !== undefined ? { providerMetadata: event.metadata as never } : {})
        })
      case "tool-input-start":
        return durable("session.next.tool.input.started", { assistantMessageID, callID: event.id, name: event.name })
      case "tool-input-delta":
        return immediate(publish("session.next.tool.input.delta", { callID: event.id, delta: event.delta }))
      case "tool-input-end":
        return durable("session.next.tool.input.ended", { assistantMessageID, callID: event.id, text: event.text })
      case "tool-call":
        // Durable before execution: after a crash, a call with no settlement is known to be stranded.
        return durable(
          "session.next.tool.called",
          { assistantMessageID, callID: event.id, tool: event.name, input: event.input, provider: { executed: false } },
          Effect.map(Effect.forkDaemon(settle(event)), (fiber) => void tools.push(fiber))
        )
      case "usage":
        return immediate(Ref.set(usage, Option.some(event.tokens)))
      case "finish":
        return immediate(Ref.set(finish, event.reason))
    }
  }

  /**
   * Handles the events of one chunk (those of one provider SSE event arrive together) in order.
   * Consecutive durable events are appended as one transaction (a finished tool call's
   * `tool.input.ended` and `tool.called` commit together); anything else runs only after what came
   * before it has committed, and a call's execution starts only once its `tool.called` has.
   */
  const handleChunk = (chunk: Chunk.Chunk<LLMEvent.Event>): Effect.Effect<void> =>
    Effect.gen(function* () {
      let batch: Array<Durable> = []
      const flush = Effect.suspend(() => {
        if (batch.length === 0) return Effect.void
        const pending = batch
        batch = []
        return Effect.flatMap(Clock.currentTimeMillis, (timestamp) =>
          events.append(
            sessionID,
            pending.map((item) => item.draft(timestamp))
          )
        ).pipe(
          Effect.orDie,
          Effect.zipRight(Effect.forEach(pending, (item) => item.committed ?? Effect.void, { discard: true }))
        )
      })
      for (const event of chunk) {
        const action = classify(event)
        if (action._tag === "Durable") {
          batch.push(action)
        } else {
          yield* flush
          yield* action.run
        }
      }
      yield* flush
    })

  const stream = Retry.stream(() => llm.stream(input.request), {
    ...(input.retry !== undefined ? { policy: input.retry } : {}),
    onRetry: ({ attempt, delayMs, error }) =>
      emit("session.next.retried", {
        attempt,
        error: {
          message: errorMessage(error),
          isRetryable: true,
          ...("status" in error && error.status !== undefined ? { statusCode: error.status } : {}),
          metadata: { delayMs: String(delayMs) }
        }
      })
  })

  const tokens = Effect.map(
    Ref.get(usage),
    Option.getOrElse(() => ({ input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } }))
  )

  const ended = (reason: string) =>
    Effect.flatMap(tokens, (usage) =>
      emit("session.next.step.ended", { assistantMessageID, finish: reason, cost: 0, tokens: usage })
    )

  const failed = (message: string) =>
    emit("session.next.step.failed", { assistantMessageID, error: { type: "unknown", message } })

  yield* emit("session.next.step.started", { assistantMessageID, agent: input.agent.name, model: input.model })

  return yield* Effect.gen(function* () {
    const streamed = yield* stream.pipe(Stream.runForEachChunk(handleChunk), Effect.either)
    if (streamed._tag === "Left") {
      const error = streamed.left
      yield* closeOpenBlocks
      yield* Effect.forEach(tools, Fiber.interrupt)
      yield* failed(errorMessage(error))
      return error._tag === "ContextOverflowError"
        ? ({ _tag: "Overflow", message: error.message } as const)
        : ({ _tag: "Failed", message: error.message } as const)
    }
    yield* Effect.forEach(tools, Fiber.join)
    const reason = tools.length > 0 ? "tool-calls" : yield* Ref.get(finish)
    yield* ended(reason)
    return { _tag: "Ended", finish: reason, toolCalls: tools.length } as const
  }).pipe(
    Effect.onInterrupt(() =>
      Effect.gen(function* () {
        yield* closeOpenBlocks
        yield* Effect.forEach(tools, Fiber.interrupt)
        yield* tools.length > 0 ? ended("tool-calls") : failed("interrupted")
      })
    )
  )
})
