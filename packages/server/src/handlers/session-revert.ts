export * as SessionRevertHandlers from "./session-revert.js"

import { SessionRevert, Traced } from "@opencode-ai/core"
import type { SessionRevertApi } from "@opencode-ai/protocol"
import type { Identifier } from "@opencode-ai/schema"

interface SessionPath {
  readonly sessionID: Identifier.SessionID
}

/** `POST /api/session/{sessionID}/revert/stage`: stages a revert, `{data: RevertState}`. */
export const stage = Traced.fn("SessionRevertHandlers.stage")(function* ({
  path,
  payload
}: {
  readonly path: SessionPath
  readonly payload: SessionRevertApi.StagePayload
}) {
  const revert = yield* SessionRevert.Service
  const data = yield* revert.stage(path.sessionID, { messageID: payload.messageID, files: payload.files })
  return { data }
})

/** `POST /api/session/{sessionID}/revert/clear`: undoes the staged revert (204). */
export const clear = Traced.fn("SessionRevertHandlers.clear")(function* ({ path }: { readonly path: SessionPath }) {
  const revert = yield* SessionRevert.Service
  yield* revert.clear(path.sessionID)
})

/** `POST /api/session/{sessionID}/revert/commit`: commits the staged revert (204). */
export const commit = Traced.fn("SessionRevertHandlers.commit")(function* ({ path }: { readonly path: SessionPath }) {
  const revert = yield* SessionRevert.Service
  yield* revert.commit(path.sessionID)
})
