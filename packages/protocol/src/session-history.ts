export * as SessionHistoryApi from "./session-history.js"

import { HttpApiEndpoint, OpenApi } from "@effect/platform"
import { Cursor, Errors, Event, Identifier, SessionMessages } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"

export const SessionPath = Schema.Struct({ sessionID: Identifier.SessionID })
export const MessagePath = Schema.Struct({ sessionID: Identifier.SessionID, messageID: Identifier.SessionMessageID })

/** A page size: an integer in 1..200 (the default is 50). */
export const Limit = Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 200)).annotations({
  jsonSchema: { type: "number" }
})

export const Order = Schema.Literal("asc", "desc")
export type Order = typeof Order.Type

/** A first page (`limit`, `order`; newest first by default) or a continuation (`cursor`, optionally with a new `limit`; `order` with a cursor is an InvalidCursorError). */
export const MessagesQuery = Schema.Struct({
  limit: Schema.optional(Limit),
  order: Schema.optional(Order),
  cursor: Schema.optional(Cursor.Token)
})
export interface MessagesQuery extends Schema.Schema.Type<typeof MessagesQuery> {}

/** The `after` of a history slice: a seq, a non-negative integer (the contract leaves it a string). */
export const After = Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()).annotations({
  jsonSchema: { type: "string" }
})

/** The size of a history slice: an integer in 1..1000 (the default is 100). */
export const HistoryLimit = Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000)).annotations({
  jsonSchema: { type: "string" }
})

export const HistoryQuery = Schema.Struct({
  limit: Schema.optional(HistoryLimit),
  after: Schema.optional(After)
})
export interface HistoryQuery extends Schema.Schema.Type<typeof HistoryQuery> {}

/**
 * `GET /api/session/{sessionID}/message`: one Page of the session's messages, newest first unless
 * `order=asc`, with the same cursor discipline as the session list. A cursor is bound to its session.
 */
export const messages = HttpApiEndpoint.get("messages", "/api/session/:sessionID/message")
  .setPath(SessionPath)
  .setUrlParams(MessagesQuery)
  .addSuccess(SessionMessages.SessionMessagesResponse)
  .addError(Errors.InvalidCursorError, { status: 400 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .addError(Errors.UnknownError, { status: 500 })
  .annotate(OpenApi.Identifier, "v2.session.messages")
  // A continuation may repeat `limit` with its cursor; `order` belongs to the initial query.
  .annotate(ClientProjection.Page, { continuation: ["limit"] })
  .annotate(OpenApi.Summary, "List a session's messages")
  .annotate(
    OpenApi.Description,
    "One page of the session's messages (user prompts, assistant Steps with their parts, switches, compactions), newest first unless `order=asc`. Continue with the `cursor` of the page."
  )
  // The contract files this operation under "messages", unlike the rest of the session group.
  .annotate(OpenApi.Override, { tags: ["messages"] })

/**
 * `GET /api/session/{sessionID}/message/{messageID}`: one message. A message of another session is
 * "not found", exactly like an absent one.
 */
export const message = HttpApiEndpoint.get("message", "/api/session/:sessionID/message/:messageID")
  .setPath(MessagePath)
  .addSuccess(Schema.Struct({ data: SessionMessages.SessionMessage }))
  .addError(Errors.MessageNotFoundError, { status: 404 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.message")
  .annotate(OpenApi.Summary, "Get a message")
  .annotate(
    OpenApi.Description,
    "One message of the session. A message of another session is not found, exactly like an absent one."
  )

/**
 * `GET /api/session/{sessionID}/context`: the projected Session History the next Step gives the
 * model, oldest first (not the complete Model Context).
 */
export const context = HttpApiEndpoint.get("context", "/api/session/:sessionID/context")
  .setPath(SessionPath)
  .addSuccess(Schema.Struct({ data: Schema.Array(SessionMessages.SessionMessage) }))
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .addError(Errors.UnknownError, { status: 500 })
  .annotate(OpenApi.Identifier, "v2.session.context")
  .annotate(OpenApi.Summary, "Get a session's model history")
  .annotate(
    OpenApi.Description,
    "The Session History the next Step gives the model, oldest first: after compactions and committed reverts (not the complete request)."
  )

/**
 * `GET /api/session/{sessionID}/history?after&limit`: the durable `session.next.*` events with seq
 * greater than `after` (default 0), at most `limit` (default 100, at most 1000), and whether more follow.
 */
export const history = HttpApiEndpoint.get("history", "/api/session/:sessionID/history")
  .setPath(SessionPath)
  .setUrlParams(HistoryQuery)
  .addSuccess(Event.SessionHistory)
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.history")
  .annotate(OpenApi.Summary, "Read a session's durable log")
  .annotate(
    OpenApi.Description,
    "The durable `session.next.*` events with a sequence number greater than `after` (default 0), at most `limit` (default 100, at most 1000), and whether more follow."
  )
