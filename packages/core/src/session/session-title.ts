export * as SessionTitle from "./session-title.js"

/**
 * Session Title: after a session's first Step, the hidden `title` agent names the session once.
 *
 * ```
 *   Step settles ─► considered (once per session per process; cheap checks, in the caller's fiber)
 *                     └─► forked: one request, no tools ─► title cleaned ─► [usage.recorded,
 *                         title.updated] + title claimed ── ONE transaction
 *                     └─► failure / timeout / interruption: the first prompt's line stays
 * ```
 *
 * Who is named: a session with no parent (child sessions keep the title their task gave them, as
 * upstream), whose title is still the `default` one (the creation default, then the first prompt's
 * line; see `Sessions.TitleSource`), while the `title` agent is enabled (`agent.title.disable: true`
 * turns titles off). The request goes to the title agent's model, else `small_model`, else the
 * Step's model, with the title agent's prompt ({@link TitlePrompt.system}, or `agent.title.prompt`)
 * and the session's first prompt as its only user turn, and no tools.
 *
 * The write is one transaction: the request's usage (`session.next.usage.recorded`, agent `title`:
 * the session's totals include it), `session.next.title.updated` (the projection sets the title) and
 * a compare-and-set of the title's source (`Sessions.claimTitle`), so a title is written at most
 * once whatever races: a title given at creation or written by another host rolls the append back
 * (the usage is then recorded alone). A restart does not retitle a titled session; a session whose
 * title request failed is considered again by the next process that runs a Step of it.
 *
 * It never fails or delays the session: the request runs in a fiber of this service's scope (closed
 * with the Core, which interrupts it), bounded by a timeout; a provider error, an unusable answer or
 * a timeout is logged (WARN) and leaves the title as it was, with the usage recorded if the provider
 * reported any. Interruption writes nothing (a commit already started completes).
 */

import { SqlClient } from "@effect/sql"
import type { Identifier, Model, Session } from "@opencode-ai/schema"
import { Clock, Context, Duration, Effect, FiberSet, Layer, Option } from "effect"
import type { Catalog } from "../config/catalog.js"
import { Config } from "../config/config.js"
import { LLMClient } from "../llm/llm-client.js"
import { LLMRequest } from "../llm/llm-request.js"
import type { Retry } from "../llm/retry.js"
import { TextAnswer } from "../llm/text-answer.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { TitlePrompt } from "../prompt/title-prompt.js"
import { StepEvent } from "../runner/step-event.js"
import { SessionEvents } from "./session-events.js"
import { SessionHistory } from "./session-history.js"
import { Sessions } from "./sessions.js"
import { StepCost } from "./step-cost.js"

export interface ConsiderInput {
  readonly sessionID: Identifier.SessionID
  /** The model of the Step that just settled: the fallback when neither the agent nor `small_model` names one. */
  readonly step: { readonly provider: Catalog.Provider; readonly model: Catalog.Model }
}

export interface Interface {
  /**
   * Called after each Step that settled with a record. The first call for a session (per process)
   * checks whether it should be named (see the module doc) and, if so, forks the title request and
   * returns at once; later calls return at once. Never fails.
   */
  readonly consider: (input: ConsiderInput) => Effect.Effect<void>
  /** Resolves once no title request of this service is in flight (tests, orderly shutdown). */
  readonly settled: Effect.Effect<void>
}

/** `yield* SessionTitle.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionTitle")<Service, Interface>() {}

export interface Options {
  /** The provider retry policy; default `Retry.defaultPolicy`. */
  readonly retry?: Retry.Policy | undefined
  /** How long the title request may take, retries included; default 60 seconds. */
  readonly timeout?: Duration.DurationInput | undefined
}

/** The title request's outcome: the answer's text and the usage the provider reported, if any. */
export const layer = (
  options: Options = {}
): Layer.Layer<
  Service,
  never,
  | Config.Service
  | LLMClient.Service
  | SessionEvents.Service
  | SessionHistory.Service
  | Sessions.Service
  | SqlClient.SqlClient
> =>
  Layer.scoped(
    Service,
    Effect.gen(function* () {
      const config = yield* Config.Service
      const llm = yield* LLMClient.Service
      const events = yield* SessionEvents.Service
      const history = yield* SessionHistory.Service
      const sessions = yield* Sessions.Service
      const sql = yield* SqlClient.SqlClient
      const fibers = yield* FiberSet.make<void>()
      // Sessions considered by this process: each is considered once.
      const considered = new Set<string>()
      const timeout = options.timeout ?? Duration.seconds(60)

      /** The title agent's model, else `small_model`, else the Step's. */
      const modelFor = (step: ConsiderInput["step"]) => {
        const agent = config.agent("title")
        const own = Option.flatMap(agent, (found) => Option.flatMap(Option.fromNullable(found.model), config.findModel))
        const small = Option.flatMap(config.smallModel, config.findModel)
        return Option.getOrElse(
          Option.orElse(own, () => small),
          () => step
        )
      }

      /** The text and usage of one title request (retried while nothing was streamed). */
      const ask = (request: LLMRequest.Request) =>
        TextAnswer.ask(llm, request, options.retry !== undefined ? { retry: options.retry } : {})

      const generate = Traced.fn("SessionTitle.generate")(
        function* (sessionID: Identifier.SessionID, step: ConsiderInput["step"], prompt: string) {
          const { provider, model } = modelFor(step)
          const system = Option.getOrUndefined(
            Option.flatMap(config.agent("title"), (agent) => Option.fromNullable(agent.prompt))
          )
          const request: LLMRequest.Request = {
            model: { providerID: provider.id, modelID: model.apiID },
            system: system ?? TitlePrompt.system,
            messages: [LLMRequest.user(TitlePrompt.request(prompt))],
            generation: model.limit.output > 0 ? { maxOutputTokens: model.limit.output } : {},
            headers: { "x-session-id": sessionID, "x-session-affinity": sessionID }
          }
          const ref: Model.ModelRef = { providerID: provider.id, id: model.id }
          const usage = (tokens: Session.Tokens | undefined) =>
            tokens === undefined
              ? []
              : [
                  StepEvent.make("session.next.usage.recorded", {
                    agent: "title",
                    model: ref,
                    cost: StepCost.of(model.cost, tokens),
                    tokens
                  })
                ]

          const answered = yield* ask(request).pipe(
            Effect.timeoutFail({
              duration: timeout,
              onTimeout: () => ({ error: { message: "timed out" }, tokens: undefined })
            }),
            Effect.either
          )
          if (answered._tag === "Left") {
            yield* Effect.logWarning("the session title was not written: the title request failed", {
              error: answered.left.error.message
            })
            return yield* StepEvent.append(events, sessionID, usage(answered.left.tokens))
          }
          const title = TitlePrompt.clean(answered.right.text)
          if (title === undefined) {
            yield* Effect.logWarning("the session title was not written: the model's answer held no title")
            return yield* StepEvent.append(events, sessionID, usage(answered.right.tokens))
          }
          const timestamp = yield* Clock.currentTimeMillis
          const drafts = [...usage(answered.right.tokens), StepEvent.make("session.next.title.updated", { title })].map(
            (event) => StepEvent.draft(sessionID, event, timestamp)
          )
          yield* events
            .append(sessionID, drafts, () => Sessions.claimTitle(sessionID))
            .pipe(
              Effect.catchTag("Core/TitleAlreadySet", () =>
                Effect.logDebug("the session was titled meanwhile; its title stays").pipe(
                  Effect.zipRight(StepEvent.append(events, sessionID, usage(answered.right.tokens)))
                )
              ),
              Effect.orDie
            )
          yield* Effect.logDebug("the session is titled", { title })
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      /** The session's first prompt, when it should be named now. */
      const eligible = (sessionID: Identifier.SessionID) =>
        Effect.gen(function* () {
          if (Option.isNone(config.agent("title"))) return undefined
          const session = yield* sessions.get(sessionID)
          if (session.parentID !== undefined) return undefined
          const source = yield* Sessions.titleSource(sessionID).pipe(Effect.provideService(SqlClient.SqlClient, sql))
          if (source !== "default") return undefined
          const first = (yield* history.context(sessionID)).find((message) => message.type === "user")
          return first?.type === "user" && first.text.trim().length > 0 ? first.text : undefined
        })

      const consider = Traced.fn("SessionTitle.consider")(
        function* (input: ConsiderInput) {
          if (considered.has(input.sessionID)) return
          considered.add(input.sessionID)
          const prompt = yield* eligible(input.sessionID)
          if (prompt === undefined) return
          yield* FiberSet.run(fibers, generate(input.sessionID, input.step, prompt))
        },
        (effect, input) =>
          effect.pipe(
            Effect.catchAllCause((cause) => Effect.logWarning("the session title was not considered", cause)),
            Effect.annotateLogs({ sessionID: input.sessionID })
          )
      )

      return Service.of({ consider, settled: FiberSet.awaitEmpty(fibers) })
    })
  )
