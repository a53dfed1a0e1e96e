export * as ToolSettlement from "./tool-settlement.js"

import { type Identifier, Quote } from "@opencode-ai/schema"
import { Cause, Clock, Context, Effect, Exit, Layer, Option } from "effect"
import type { AgentCatalog } from "../config/agent-catalog.js"
import type { LLMEvent } from "../llm/llm-event.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { RuntimeMetrics } from "../observability/runtime-metrics.js"
import { Traced } from "../observability/traced.js"
import { PermissionRequests } from "../permission/permission-requests.js"
import { SessionEvents } from "../session/session-events.js"
import { ModelToolOutput } from "../tool/model-tool-output.js"
import type { ToolRegistry } from "../tool/tool-registry.js"
import { StepEvent } from "./step-event.js"

/** One tool call of a running Step, with what the Step knows about it. */
export interface Input {
  readonly sessionID: Identifier.SessionID
  /** The assistant message (the Step) that issued the call. */
  readonly assistantMessageID: typeof Identifier.SessionMessageID.Type
  /** The Step's agent, sampled at the Step's start: a later agent switch does not change this call's policy. */
  readonly agent: AgentCatalog.Agent
  /** The session's Location directory, for the tool. */
  readonly directory: string
  /** The Step's tools: how the call runs. */
  readonly tools: ToolRegistry.Materialized
  /** The call, already durable as `session.next.tool.called`. */
  readonly call: LLMEvent.ToolCall
}

export interface Interface {
  /**
   * Runs one durable tool call to its settlement and publishes that settlement exactly once:
   *
   * ```
   * tool.called ─► (tool.progress)* ─► tool.success (bounded Model Tool Output) | tool.failed
   * ```
   *
   * Each `tool.progress` report is its own transaction, clipped to the output limits (it is replaced
   * by the settlement and never kept). A success is bounded by ModelToolOutput (the complete text may
   * move to a Managed Tool Output File) and published as one `tool.success`; bounding and publishing
   * happen inside one uninterruptible region, so raw oversized output is never published and an
   * interruption cannot land between the two. A tool failure, a denied or rejected permission, a
   * crash (logged) or an interruption is published as one `tool.failed` ({@link interruptedMessage}
   * for an interruption). An expected failure (a ToolFailure: invalid input, an unknown tool, a
   * denied permission, the tool's own failure) also carries `result` ({@link errorResult}); an
   * interruption or a crash does not. A success always carries `outputPaths` (possibly empty). The tool itself is interruptible: interrupting this effect interrupts the tool,
   * and this resolves once the settlement has committed. Never fails.
   */
  readonly settle: (input: Input) => Effect.Effect<void>
}

/** The error message of a call interrupted while it ran (upstream's wording, which clients match). */
export const interruptedMessage = "Tool execution interrupted"

/**
 * The `result` of a `tool.failed` for an expected failure: the error value the model receives, as
 * upstream records it (`{type: "error", value}`).
 */
export const errorResult = (message: string) => ({ type: "error" as const, value: message })

/** `yield* ToolSettlement.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/ToolSettlement")<Service, Interface>() {}

export const layer: Layer.Layer<
  Service,
  never,
  SessionEvents.Service | PermissionRequests.Service | ModelToolOutput.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const events = yield* SessionEvents.Service
    const permissions = yield* PermissionRequests.Service
    const output = yield* ModelToolOutput.Service

    const settle = (input: Input) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          const { sessionID, assistantMessageID, call } = input
          const emit = <T extends SessionEvents.Type>(type: T, data: StepEvent.Data<T>) =>
            StepEvent.append(events, sessionID, [StepEvent.make(type, data)])
          const provider = { executed: false }
          const start = yield* Clock.currentTimeNanos
          /** The call's one `tool ran` line (INFO): how it settled and how long it took, permission waits included. */
          const ran = (outcome: "success" | "failed" | "interrupted" | "crashed", error?: string) =>
            Effect.flatMap(Clock.currentTimeNanos, (now) =>
              Effect.logInfo("tool ran", {
                tool: call.name,
                callID: call.id,
                outcome,
                durationMs: Number((now - start) / 1_000_000n),
                ...(error === undefined ? {} : { error: Quote.clip(error) })
              })
            )
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
          yield* RuntimeMetrics.toolSettled(
            call.name,
            Exit.isSuccess(outcome) ? "success" : Cause.isInterruptedOnly(outcome.cause) ? "interrupted" : "failed",
            start
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
            yield* ran("success")
            yield* emit("session.next.tool.success", {
              assistantMessageID,
              callID: call.id,
              structured: { ...bounded.structured },
              content: bounded.content,
              // Always present (empty when the output was kept nowhere), as upstream clients expect.
              outputPaths: bounded.outputPaths ?? [],
              provider
            })
            return
          }
          if (Cause.isInterruptedOnly(outcome.cause)) {
            yield* ran("interrupted")
            yield* emit("session.next.tool.failed", {
              assistantMessageID,
              callID: call.id,
              error: { type: "unknown", message: interruptedMessage },
              provider
            })
            return
          }
          const failure = Cause.failureOption(outcome.cause)
          if (Option.isNone(failure)) {
            yield* Effect.logError("tool crashed", outcome.cause).pipe(
              Effect.annotateLogs({ sessionID, tool: call.name })
            )
          }
          yield* ran(Option.isSome(failure) ? "failed" : "crashed", Option.getOrUndefined(failure))
          yield* emit("session.next.tool.failed", {
            assistantMessageID,
            callID: call.id,
            error: { type: "unknown", message: Option.getOrElse(failure, () => Cause.pretty(outcome.cause)) },
            // An expected failure (invalid input, an unknown tool, the tool's own ToolFailure) carries
            // the tool's result as upstream does: the error value the model was given.
            ...(Option.isSome(failure) ? { result: errorResult(failure.value) } : {}),
            provider
          })
        })
      ).pipe(
        // The tool call's span: a child of the provider call that asked for it (see StepRunner).
        Traced.withSpan("ToolSettlement.settle", {
          attributes: {
            sessionID: input.sessionID,
            stepID: input.assistantMessageID,
            tool: input.call.name,
            callID: input.call.id,
            "gen_ai.tool.name": input.call.name,
            "gen_ai.tool.call.id": input.call.id
          }
        }),
        (effect) => LogAnnotation.session(effect, input.sessionID)
      )

    return Service.of({ settle })
  })
)
