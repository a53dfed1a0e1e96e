export * as SessionSelection from "./session-selection.js"

/**
 * SessionSelection: switching the agent or model a session runs with. A switch is one durable event
 * (`session.next.agent.switched` / `session.next.model.switched`) appended through SessionEvents, so
 * its marker message and the session record (`agent` / `model`) change in the same transaction. The
 * runner samples the selection when a Step starts, so a switch applies from the next Step and never
 * restarts the current one; the InstructionCheckpoint and the conversation are left as they are.
 * A session's creation is checked by the same rules (`check`), so no session starts with an agent
 * or model that its Steps could not use.
 */

import { Errors, Identifier, type Model, Quote } from "@opencode-ai/schema"
import { Clock, Context, Effect, Either, Layer, Option } from "effect"
import * as Config from "../config/config.js"
import * as RequestOptions from "../config/request-options.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import * as SessionEvents from "./session-events.js"
import * as Sessions from "./sessions.js"

export interface Interface {
  /**
   * Checks a selection a session is about to be created with, by the same rules as the switches
   * below: `agent` must name an enabled agent offered for selection, `model` a configured model (and
   * variant). Either may be absent. Reads only the config; InvalidRequestError (field `agent` or
   * `model`) for the first one that fails, so no session starts with a name nothing can run.
   */
  readonly check: (selection: {
    readonly agent?: string | undefined
    readonly model?: Model.ModelRef | undefined
  }) => Effect.Effect<void, Errors.InvalidRequestError>
  /**
   * Selects `agent` for the session's next Steps. It must name an enabled agent that is offered for
   * selection (not hidden), else InvalidRequestError (field `agent`): an unknown name is never
   * accepted silently. Selecting the agent the session already has appends nothing. Unknown
   * session → SessionNotFoundError (checked first).
   */
  readonly switchAgent: (
    sessionID: Identifier.SessionID,
    agent: string
  ) => Effect.Effect<void, Errors.SessionNotFoundError | Errors.InvalidRequestError>
  /**
   * Selects `model` for the session's next Steps. Its provider and model must be configured, and its
   * `variant`, when given, must be one of the model's variants that is not disabled, else
   * InvalidRequestError (field `model`). Selecting the model the session already has (same provider,
   * model and variant) appends nothing. Unknown session → SessionNotFoundError (checked first).
   */
  readonly switchModel: (
    sessionID: Identifier.SessionID,
    model: Model.ModelRef
  ) => Effect.Effect<void, Errors.SessionNotFoundError | Errors.InvalidRequestError>
}

/** Agent and model switching; `yield* SessionSelection.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionSelection")<Service, Interface>() {}

const invalid = (field: string, message: string) =>
  new Errors.InvalidRequestError({ kind: "selection", field, message })

export const layer: Layer.Layer<Service, never, Sessions.Service | SessionEvents.Service | Config.Service> =
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const events = yield* SessionEvents.Service
      const config = yield* Config.Service

      const checkAgent = (agent: string): Effect.Effect<void, Errors.InvalidRequestError> => {
        const found = config.agent(agent)
        if (Option.isSome(found) && !found.value.hidden) return Effect.void
        const offered = config.agents.filter((candidate) => !candidate.hidden).map((candidate) => candidate.name)
        return Effect.fail(invalid("agent", `Unknown agent ${Quote.input(agent)}; available: ${offered.join(", ")}`))
      }

      const checkModel = (model: Model.ModelRef): Effect.Effect<void, Errors.InvalidRequestError> => {
        if (Option.isNone(config.provider(model.providerID))) {
          return Effect.fail(
            invalid(
              "model",
              `Unknown provider ${Quote.input(model.providerID)} in model ${Quote.clip(`${model.providerID}/${model.id}`)}`
            )
          )
        }
        const found = config.findModel(model)
        if (Option.isNone(found)) {
          return Effect.fail(
            invalid("model", `Unknown model ${Quote.input(model.id)} of provider ${Quote.input(model.providerID)}`)
          )
        }
        if (model.variant === undefined) return Effect.void
        const variant = RequestOptions.variant(found.value.model, model.variant)
        return Either.isLeft(variant) ? Effect.fail(invalid("model", variant.left.message)) : Effect.void
      }

      const check = Traced.fn("SessionSelection.check")(function* (selection: {
        readonly agent?: string | undefined
        readonly model?: Model.ModelRef | undefined
      }) {
        if (selection.agent !== undefined) yield* checkAgent(selection.agent)
        if (selection.model !== undefined) yield* checkModel(selection.model)
      })

      const switchAgent = Traced.fn("SessionSelection.switchAgent")(
        function* (sessionID: Identifier.SessionID, agent: string) {
          const session = yield* sessions.get(sessionID)
          yield* checkAgent(agent)
          if (session.agent === agent) return
          const now = yield* Clock.currentTimeMillis
          yield* events.append(session.id, [
            SessionEvents.draft("session.next.agent.switched", {
              timestamp: now,
              sessionID: session.id,
              messageID: Identifier.newMessageID(now),
              agent
            })
          ])
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      const switchModel = Traced.fn("SessionSelection.switchModel")(
        function* (sessionID: Identifier.SessionID, model: Model.ModelRef) {
          const session = yield* sessions.get(sessionID)
          yield* checkModel(model)
          const current = session.model
          if (
            current !== undefined &&
            current.providerID === model.providerID &&
            current.id === model.id &&
            current.variant === model.variant
          ) {
            return
          }
          const now = yield* Clock.currentTimeMillis
          yield* events.append(session.id, [
            SessionEvents.draft("session.next.model.switched", {
              timestamp: now,
              sessionID: session.id,
              messageID: Identifier.newMessageID(now),
              model
            })
          ])
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      return Service.of({ check, switchAgent, switchModel })
    })
  )
