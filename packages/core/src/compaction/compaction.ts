export * as Compaction from "./compaction.js"

import { type Errors, Identifier, type Location, type Session, type SessionMessages } from "@opencode-ai/schema"
import { Clock, Context, Data, Effect, Layer, Option, Stream } from "effect"
import type { AgentCatalog } from "../config/agent-catalog.js"
import type { Catalog } from "../config/catalog.js"
import { Config } from "../config/config.js"
import { LiveBus } from "../event/live-bus.js"
import { InstructionCheckpoint } from "../instructions/instruction-checkpoint.js"
import { LLMClient } from "../llm/llm-client.js"
import { LLMRequest } from "../llm/llm-request.js"
import { Retry } from "../llm/retry.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { CompactionPrompt } from "../prompt/compaction-prompt.js"
import { SafeStepBoundary } from "../runner/safe-step-boundary.js"
import { StepEvent } from "../runner/step-event.js"
import type { StepSelection } from "../runner/step-selection.js"
import { SessionEvents } from "../session/session-events.js"
import { SessionHistory } from "../session/session-history.js"
import { StepCost } from "../session/step-cost.js"
import { ContextBudget } from "./context-budget.js"
import { ConversationTranscript } from "./conversation-transcript.js"

/**
 * Compaction: replaces a session's active history with a summary once it outgrows the model's
 * context (automatically, or when a client asks), so the session can go on.
 *
 * ```
 *   compaction.started (own transaction; makes no message)
 *     └─► the compaction model streams the summary ── compaction.delta (live only) ──►
 *           └─► compaction.ended {summary, recent} [+ synthetic continuation]
 *               + the InstructionCheckpoint rebaselined ── ONE transaction
 * ```
 *
 * What it summarizes: the active Session History (from the latest compaction on), split at the
 * cut: the newest messages that fit in a fifth of the usable context (the latest prompt and what
 * followed it in up to half) are kept word for word (`recent`), the rest is summarized together with the prior compaction's summary and kept part
 * (see {@link ConversationTranscript}). The request goes to the hidden `compaction` agent (its
 * prompt: {@link CompactionPrompt.system}, or `agent.compaction.prompt`; its model: the agent's
 * configured model, else the Step's), with no tools, and is retried like a Step's while nothing was
 * streamed.
 *
 * Completion commits the compaction message, the request's usage and cost
 * (`session.next.usage.recorded`, agent `compaction`, priced by the compaction model's catalog cost:
 * the session's totals include it), the rebaselined InstructionCheckpoint (see
 * InstructionCheckpoint.compacted) and, when the drain continues with a Step, a synthetic
 * continuation message, all in one transaction. A failed compaction whose provider still reported
 * usage records that usage alone. From then on Session History is the compaction
 * message (summary, then the kept part) and what follows it; earlier messages and Instruction
 * Updates stay in the durable log and the transcript.
 *
 * Interruption, a failed request or an empty summary leave the session as it was before: the
 * `compaction.started` event stays in the log, but no message, history or checkpoint changed. A
 * process killed mid-compaction leaves the same; the transaction makes completion all or nothing.
 */

/**
 * How a compaction ended:
 * - `Compacted`: the compaction message `messageID` is committed (`rebaselined`: its baseline was
 *   replaced in the same transaction);
 * - `Skipped`: nothing to compact (no user, shell or assistant message since the latest compaction;
 *   `reason` says so);
 *   nothing written;
 * - `Failed`: the summary could not be produced (`message` says why); the session is untouched.
 */
export type Result = Data.TaggedEnum<{
  Compacted: { readonly messageID: Identifier.MessageID; readonly rebaselined: boolean }
  Skipped: { readonly reason: string }
  Failed: { readonly message: string }
}>

export const Result = Data.taggedEnum<Result>()

export interface RunInput {
  readonly sessionID: Identifier.SessionID
  /** The session's resolved Location: the rebaselined Instructions are observed there. */
  readonly location: Location.LocationInfo
  /** The session's current agent: its guidance is part of the rebaselined Instructions. */
  readonly agent: Option.Option<AgentCatalog.Agent>
  /** The Step's selection: its model decides the budgets, and runs the compaction by default. */
  readonly selection: StepSelection.Selected
  readonly reason: "auto" | "manual"
  /** The drain goes on with a Step after it: a synthetic continuation is appended with the completion. */
  readonly continuation: boolean
}

export interface Interface {
  /** Compacts the session now (see the module doc). Unknown session → SessionNotFoundError. */
  readonly run: (input: RunInput) => Effect.Effect<Result, Errors.SessionNotFoundError>
  /**
   * Records a client's request to compact the session; the session's drain runs it at its next Safe
   * Step Boundary (see SessionDrain). Idempotent until that compaction has ended: requests made
   * before then, also while it runs, are the same request. Process-local: a restart forgets it.
   */
  readonly request: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  /** Whether a requested compaction of the session is waiting or running. */
  readonly requested: (sessionID: Identifier.SessionID) => Effect.Effect<boolean>
  /** The requested compaction of the session has ended (however it ended); a later request is new. */
  readonly served: (sessionID: Identifier.SessionID) => Effect.Effect<void>
}

/** `yield* Compaction.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/Compaction")<Service, Interface>() {}

export interface Options {
  /** The provider retry policy; default `Retry.defaultPolicy`. */
  readonly retry?: Retry.Policy | undefined
}

/**
 * How much of the newest history is kept word for word: a fifth of the usable context (8,000 tokens
 * when it is unknown), or up to half of it to keep the latest prompt and what followed it.
 */
const recentBudget = (usable: number | undefined) => ({
  recentTokens: usable === undefined ? 8_000 : Math.floor(usable / 5),
  promptTokens: usable === undefined ? 20_000 : Math.floor(usable / 2)
})

export const layer = (
  options: Options = {}
): Layer.Layer<
  Service,
  never,
  | Config.Service
  | SessionHistory.Service
  | SessionEvents.Service
  | LiveBus.Service
  | LLMClient.Service
  | InstructionCheckpoint.Service
  | SafeStepBoundary.Service
> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const config = yield* Config.Service
      const history = yield* SessionHistory.Service
      const events = yield* SessionEvents.Service
      const live = yield* LiveBus.Service
      const llm = yield* LLMClient.Service
      const checkpoint = yield* InstructionCheckpoint.Service
      const boundary = yield* SafeStepBoundary.Service
      const requests = new Set<string>()

      /** The compaction agent's prompt and model (its own, else the Step's). */
      const compactionModel = (
        selection: StepSelection.Selected
      ): { readonly system: string; readonly provider: Catalog.Provider; readonly model: Catalog.Model } => {
        const agent = config.agent("compaction")
        const own = Option.flatMap(agent, (found) => Option.flatMap(Option.fromNullable(found.model), config.findModel))
        const system = Option.getOrUndefined(Option.flatMap(agent, (found) => Option.fromNullable(found.prompt)))
        return {
          system: system ?? CompactionPrompt.system,
          ...Option.getOrElse(own, () => ({ provider: selection.provider, model: selection.model }))
        }
      }

      /**
       * Streams the summary, publishing each delta live; fails with the provider's final error.
       * `usage` receives the request's token usage as soon as the provider reports it (so an empty
       * summary's usage is still known).
       */
      const summarize = (
        sessionID: Identifier.SessionID,
        messageID: Identifier.MessageID,
        request: LLMRequest.Request,
        usage: { tokens?: Session.Tokens }
      ) =>
        Effect.gen(function* () {
          const texts: Array<string> = []
          let streamed = ""
          yield* Retry.stream(
            () => llm.stream(request),
            options.retry !== undefined ? { policy: options.retry } : {}
          ).pipe(
            Stream.runForEach((event) => {
              if (event.type === "text-delta") {
                streamed += event.delta
                return Effect.flatMap(Clock.currentTimeMillis, (timestamp) =>
                  live.publish({
                    id: Identifier.newEventID(),
                    type: "session.next.compaction.delta",
                    data: { timestamp, sessionID, messageID, text: event.delta }
                  })
                )
              }
              if (event.type === "text-end") texts.push(event.text)
              if (event.type === "usage") usage.tokens = event.tokens
              return Effect.void
            })
          )
          return (texts.length > 0 ? texts.join("") : streamed).trim()
        })

      const run = Traced.fn("Compaction.run")(
        function* (input: RunInput) {
          const { sessionID, selection } = input
          const active = yield* history.context(sessionID)
          const prior =
            active[0]?.type === "compaction" ? (active[0] as SessionMessages.SessionMessageCompaction) : undefined
          const conversation = prior === undefined ? active : active.slice(1)
          // Runtime-written text alone (a continuation) is not new conversation: compacting again
          // could not make the history smaller.
          if (!conversation.some(ConversationTranscript.conversational)) {
            return Result.Skipped({ reason: "no conversation since the latest compaction" })
          }

          const usable = ContextBudget.usable(selection.model, config.compaction)
          const { head, tail } = ConversationTranscript.split(conversation, recentBudget(usable))
          const compactor = compactionModel(selection)
          // What the compaction request may spend on the conversation: its model's usable context less
          // the fixed parts of the request.
          const fixed = ContextBudget.estimate(
            compactor.system + CompactionPrompt.build({ conversation: "", previousSummary: prior?.summary })
          )
          const compactorUsable = ContextBudget.usable(compactor.model, config.compaction)
          const transcript = [
            ...(prior !== undefined && prior.recent.length > 0 ? [prior.recent] : []),
            ConversationTranscript.bounded(head, compactorUsable === undefined ? undefined : compactorUsable - fixed)
          ]
            .filter((part) => part.length > 0)
            .join("\n\n")

          const messageID = Identifier.newMessageID(yield* Clock.currentTimeMillis)
          yield* StepEvent.append(events, sessionID, [
            StepEvent.make("session.next.compaction.started", { messageID, reason: input.reason })
          ])
          yield* Effect.logInfo("compaction started", {
            reason: input.reason,
            messages: head.length,
            kept: tail.length
          })

          const request: LLMRequest.Request = {
            model: { providerID: compactor.provider.id, modelID: compactor.model.apiID },
            system: compactor.system,
            messages: [
              LLMRequest.user(CompactionPrompt.build({ conversation: transcript, previousSummary: prior?.summary }))
            ],
            generation: compactor.model.limit.output > 0 ? { maxOutputTokens: compactor.model.limit.output } : {},
            headers: { "x-session-id": sessionID, "x-session-affinity": sessionID }
          }
          const usage: { tokens?: Session.Tokens } = {}
          const summary = yield* Effect.either(summarize(sessionID, messageID, request, usage))
          // What the request cost, as its own event (the contract's compaction.ended has no usage).
          const spent =
            usage.tokens === undefined
              ? []
              : [
                  StepEvent.make("session.next.usage.recorded", {
                    agent: "compaction",
                    model: { providerID: compactor.provider.id, id: compactor.model.id },
                    cost: StepCost.of(compactor.model.cost, usage.tokens),
                    tokens: usage.tokens
                  })
                ]
          if (summary._tag === "Left" || summary.right.length === 0) {
            const message = summary._tag === "Left" ? summary.left.message : "the model wrote no summary"
            yield* Effect.logWarning("compaction failed", { error: message })
            // A failed compaction's usage still counts (the session itself is untouched).
            if (spent.length > 0) yield* StepEvent.append(events, sessionID, spent)
            return Result.Failed({ message: `Compaction failed: ${message}` })
          }

          const timestamp = yield* Clock.currentTimeMillis
          const drafts = [
            StepEvent.make("session.next.compaction.ended", {
              messageID,
              reason: input.reason,
              text: summary.right,
              recent: ConversationTranscript.render(tail)
            }),
            ...spent,
            ...(input.continuation
              ? [
                  StepEvent.make("session.next.synthetic", {
                    messageID: Identifier.newMessageID(timestamp),
                    text: CompactionPrompt.continuation
                  })
                ]
              : [])
          ].map((event) => StepEvent.draft(sessionID, event, timestamp))
          const instructions = yield* boundary.instructions({
            sessionID,
            location: input.location,
            agent: input.agent
          })
          const committed = yield* checkpoint.compacted(sessionID, instructions, drafts)
          yield* Effect.logInfo("compaction ended", { seq: committed.seq, rebaselined: committed.rebaselined })
          return Result.Compacted({ messageID, rebaselined: committed.rebaselined })
        },
        (effect, input) => LogAnnotation.session(effect, input.sessionID)
      )

      return Service.of({
        run,
        request: (sessionID) => Effect.sync(() => void requests.add(sessionID)),
        requested: (sessionID) => Effect.sync(() => requests.has(sessionID)),
        served: (sessionID) => Effect.sync(() => void requests.delete(sessionID))
      })
    })
  )
