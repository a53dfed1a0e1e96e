export * as StepSelection from "./step-selection.js"

import type { Errors, Identifier, Model } from "@opencode-ai/schema"
import { Context, Data, Effect, Layer, Option } from "effect"
import type { AgentCatalog } from "../config/agent-catalog.js"
import type { Catalog } from "../config/catalog.js"
import { Config } from "../config/config.js"
import { Traced } from "../observability/traced.js"
import { Permission } from "../permission/permission.js"
import { Sessions } from "../session/sessions.js"
import { ToolRegistry } from "../tool/tool-registry.js"

/**
 * What a Step runs with, sampled when it starts:
 * - `Selected`: the agent, the resolved provider and model (`ref` names them, with the session's
 *   `variant` when its reference has one; `ModelContext` applies it), the tools offered to
 *   the model (`offered`: those the agent does not deny for every resource) and the tools that may
 *   run (`runnable`: the offered ones, or none at the agent's step limit, whatever the model still
 *   tries to call). `lastStep`: the agent's step allowance is reached with this Step;
 * - `Unusable`: no model can serve the Step (none configured, or an unknown one); `model` is the
 *   reference that failed (empty when there was none) and `message` says why.
 */
export type Selection = Data.TaggedEnum<{
  Selected: {
    readonly agent: AgentCatalog.Agent
    readonly provider: Catalog.Provider
    readonly model: Catalog.Model
    readonly ref: Model.ModelRef
    readonly offered: ToolRegistry.Materialized
    readonly runnable: ToolRegistry.Materialized
    readonly lastStep: boolean
  }
  Unusable: { readonly agent: AgentCatalog.Agent; readonly model: Model.ModelRef; readonly message: string }
}>

export const Selection = Data.taggedEnum<Selection>()

/** A usable selection. */
export type Selected = Extract<Selection, { readonly _tag: "Selected" }>

export interface Interface {
  /** The agent named `name`, falling back to the configured default agent (also when `name` is unknown). */
  readonly agent: (name: string | undefined) => Option.Option<AgentCatalog.Agent>
  /**
   * Samples the session's agent and model now, for its `step`-th Step since input was last promoted
   * (1-based): switches admitted after this apply to the next Step. The model is the session's
   * choice, else the agent's, else the configured default. Reads the session row, the config and
   * the tool registry; writes nothing. No agent at all (not even the default) is a defect. Unknown
   * session → SessionNotFoundError.
   */
  readonly select: (
    sessionID: Identifier.SessionID,
    step: number
  ) => Effect.Effect<Selection, Errors.SessionNotFoundError>
}

/** `yield* StepSelection.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/StepSelection")<Service, Interface>() {}

export const layer: Layer.Layer<Service, never, Config.Service | Sessions.Service | ToolRegistry.Service> =
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const config = yield* Config.Service
      const sessions = yield* Sessions.Service
      const registry = yield* ToolRegistry.Service

      const agent = (name: string | undefined) =>
        Option.orElse(config.agent(name ?? config.defaultAgent), () => config.agent(config.defaultAgent))

      const select = Traced.fn("StepSelection.select")(function* (sessionID: Identifier.SessionID, step: number) {
        const session = yield* sessions.get(sessionID)
        const selected = agent(session.agent)
        if (Option.isNone(selected)) return yield* Effect.dieMessage("no agent is available")
        const ref: Option.Option<Model.ModelRef> = Option.orElse(Option.fromNullable(session.model), () =>
          Option.orElse(Option.fromNullable(selected.value.model), () => config.model)
        )
        const found = Option.flatMap(ref, config.findModel)
        if (Option.isNone(found)) {
          return Selection.Unusable({
            agent: selected.value,
            model: Option.getOrElse(ref, () => ({ id: "", providerID: "" })),
            message: Option.isNone(ref)
              ? "No model is configured: set `model` in opencode.json or choose one for the session"
              : `Unknown model ${ref.value.providerID}/${ref.value.id}`
          })
        }
        const variant = Option.getOrUndefined(ref)?.variant
        const lastStep = selected.value.steps !== undefined && step >= selected.value.steps
        // Tools the agent denies for every resource are not offered at all.
        const offered = yield* registry.materialize((names) =>
          Permission.visibleTools(selected.value.permission, names)
        )
        return Selection.Selected({
          agent: selected.value,
          provider: found.value.provider,
          model: found.value.model,
          // The variant (model request options) is the session's choice, for the model it names.
          ref: {
            id: found.value.model.id,
            providerID: found.value.provider.id,
            ...(variant === undefined ? {} : { variant })
          },
          offered,
          // At the step limit nothing may run, whatever the model still tries to call.
          runnable: lastStep ? yield* registry.materialize(() => []) : offered,
          lastStep
        })
      })

      return Service.of({ agent, select })
    })
  )
