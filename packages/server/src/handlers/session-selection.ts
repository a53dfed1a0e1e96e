export * as SessionSelectionHandlers from "./session-selection.js"

import { SessionSelection } from "@opencode-ai/core"
import type { Identifier, Model } from "@opencode-ai/schema"
import { Effect } from "effect"

interface SessionPath {
  readonly sessionID: Identifier.SessionID
}

/** `POST /api/session/{sessionID}/agent`: selects the agent of the session's next Steps (204). */
export const switchAgent = ({
  path,
  payload
}: {
  readonly path: SessionPath
  readonly payload: { readonly agent: string }
}) => Effect.flatMap(SessionSelection.Service, (selection) => selection.switchAgent(path.sessionID, payload.agent))

/** `POST /api/session/{sessionID}/model`: selects the model of the session's next Steps (204). */
export const switchModel = ({
  path,
  payload
}: {
  readonly path: SessionPath
  readonly payload: { readonly model: Model.ModelRef }
}) => Effect.flatMap(SessionSelection.Service, (selection) => selection.switchModel(path.sessionID, payload.model))
