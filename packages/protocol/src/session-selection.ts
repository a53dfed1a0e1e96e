export * as SessionSelectionApi from "./session-selection.js"

import { HttpApiEndpoint, OpenApi } from "@effect/platform"
import { Errors, Identifier, Model } from "@opencode-ai/schema"
import { Schema } from "effect"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const SessionPath = Schema.Struct({ sessionID: Identifier.SessionID })

export const SwitchAgentPayload = Schema.Struct({ agent: Schema.String }).annotations(strict)
export const SwitchModelPayload = Schema.Struct({ model: Model.ModelRef }).annotations(strict)

/**
 * `POST /api/session/{sessionID}/agent`: the agent the session's next Steps use (204). An unknown or
 * hidden agent is a 400 InvalidRequestError (field `agent`), never a silent 204.
 */
export const switchAgent = HttpApiEndpoint.post("switchAgent", "/api/session/:sessionID/agent")
  .setPath(SessionPath)
  .setPayload(SwitchAgentPayload)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.switchAgent")
  .annotate(OpenApi.Summary, "Switch a session's agent")
  .annotate(
    OpenApi.Description,
    "Selects the agent for the session's next Step; the current Step finishes with the agent it started with."
  )

/**
 * `POST /api/session/{sessionID}/model`: the model the session's next Steps use (204). A provider or
 * model the configuration does not have is a 400 InvalidRequestError (field `model`).
 */
export const switchModel = HttpApiEndpoint.post("switchModel", "/api/session/:sessionID/model")
  .setPath(SessionPath)
  .setPayload(SwitchModelPayload)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.switchModel")
  .annotate(OpenApi.Summary, "Switch a session's model")
  .annotate(
    OpenApi.Description,
    "Selects the model (and variant) for the session's next Step; the instructions and history carry over unchanged."
  )
