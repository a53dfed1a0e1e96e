export * as SessionMoveHandlers from "./session-move.js"

import { SessionMove, Traced } from "@opencode-ai/core"
import type { SessionMoveApi } from "@opencode-ai/protocol"
import type { Identifier } from "@opencode-ai/schema"

/** `POST /api/session/{sessionID}/move`: the session continues in another Location, `{data: SessionV2Info}`. */
export const move = Traced.fn("SessionMoveHandlers.move")(function* ({
  path,
  payload
}: {
  readonly path: { readonly sessionID: Identifier.SessionID }
  readonly payload: SessionMoveApi.MovePayload
}) {
  const sessions = yield* SessionMove.Service
  const data = yield* sessions.move(path.sessionID, {
    directory: payload.location.directory,
    workspace: payload.location.workspaceID
  })
  return { data }
})
