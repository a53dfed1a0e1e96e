export * as SessionHistoryHandlers from "./session-history.js"

import { SessionHistory } from "@opencode-ai/core"
import type { SessionHistoryApi } from "@opencode-ai/protocol"
import type { Identifier } from "@opencode-ai/schema"
import { Effect } from "effect"
import { JsonBody } from "../json-body.js"

interface SessionPath {
  readonly sessionID: Identifier.SessionID
}

/**
 * `GET /api/session/{sessionID}/message`: one Page of the session's messages, its body the stored
 * messages as they are (SessionHistory.messagesJson): no decode and re-encode per message.
 */
export const messages = ({
  path,
  urlParams
}: {
  readonly path: SessionPath
  readonly urlParams: SessionHistoryApi.MessagesQuery
}) =>
  Effect.flatMap(SessionHistory.Service, (history) => history.messagesJson(path.sessionID, urlParams)).pipe(
    Effect.map(JsonBody.response)
  )

/** `GET /api/session/{sessionID}/message/{messageID}`: one message of the session. */
export const message = ({ path }: { readonly path: SessionPath & { readonly messageID: Identifier.MessageID } }) =>
  Effect.flatMap(SessionHistory.Service, (history) => history.message(path.sessionID, path.messageID)).pipe(
    Effect.map((data) => ({ data }))
  )

/** `GET /api/session/{sessionID}/context`: the projected Session History. */
export const context = ({ path }: { readonly path: SessionPath }) =>
  Effect.flatMap(SessionHistory.Service, (history) => history.context(path.sessionID)).pipe(
    Effect.map((data) => ({ data }))
  )

/** `GET /api/session/{sessionID}/history`: a slice of the session's durable event log. */
export const history = ({
  path,
  urlParams
}: {
  readonly path: SessionPath
  readonly urlParams: SessionHistoryApi.HistoryQuery
}) => Effect.flatMap(SessionHistory.Service, (service) => service.history(path.sessionID, urlParams))
