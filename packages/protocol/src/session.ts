export * as SessionGroup from "./session.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Cursor, Errors, Identifier, Location, Model, Session } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { SessionEventStream } from "./session-event-stream.js"
import { SessionExecution } from "./session-execution.js"
import { SessionHistoryApi } from "./session-history.js"
import { SessionInputApi } from "./session-input.js"
import { SessionMoveApi } from "./session-move.js"
import { SessionRevertApi } from "./session-revert.js"
import { SessionSelectionApi } from "./session-selection.js"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

/** `{data: SessionV2Info}` */
export const SessionResponse = Schema.Struct({ data: Session.SessionV2Info })

export const CreatePayload = Schema.Struct({
  id: Schema.optional(Identifier.SessionID),
  agent: Schema.optional(Schema.String),
  model: Schema.optional(Model.ModelRef),
  location: Schema.optional(Location.LocationRef)
}).annotations(strict)
export interface CreatePayload extends Schema.Schema.Type<typeof CreatePayload> {}

export const Order = Schema.Literal("asc", "desc")
export type Order = typeof Order.Type

/** A page size: an integer in 1..200 (the default is 50). */
export const Limit = Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 200)).annotations({
  jsonSchema: { type: "number" }
})

export const ListQuery = Schema.Struct({
  workspace: Schema.optional(Identifier.WorkspaceID),
  limit: Schema.optional(Limit),
  order: Schema.optional(Order),
  search: Schema.optional(Schema.String),
  directory: Schema.optional(Schema.String),
  project: Schema.optional(Schema.String),
  subpath: Schema.optional(Schema.String),
  cursor: Schema.optional(Cursor.Token)
})
export interface ListQuery extends Schema.Schema.Type<typeof ListQuery> {}

export const PageCursor = Schema.Struct({
  previous: Schema.optional(Cursor.Token),
  next: Schema.optional(Cursor.Token)
})

export const SessionsResponse = Schema.Struct({
  data: Schema.Array(Session.SessionV2Info),
  cursor: PageCursor
}).annotations({ identifier: "SessionsResponse" })
export interface SessionsResponse extends Schema.Schema.Type<typeof SessionsResponse> {}

export const SessionPath = Schema.Struct({ sessionID: Identifier.SessionID })

/** `POST /api/session`: creates a session; with an explicit `id` it is idempotent for that id. */
export const create = HttpApiEndpoint.post("create", "/api/session")
  .setPayload(CreatePayload)
  .addSuccess(SessionResponse)
  .annotate(OpenApi.Identifier, "v2.session.create")
  .annotate(OpenApi.Summary, "Create a session")
  .annotate(
    OpenApi.Description,
    "Creates a session in the requested Location. With an explicit `id` it is idempotent: an existing session of that id is returned unchanged. An unknown or hidden `agent`, or a `model` that is not configured, is a 400 and creates nothing."
  )

/** `GET /api/session`: one Page of sessions, newest first unless `order=asc`. */
export const list = HttpApiEndpoint.get("list", "/api/session")
  .setUrlParams(ListQuery)
  .addSuccess(SessionsResponse)
  .addError(Errors.InvalidCursorError, { status: 400 })
  .annotate(OpenApi.Identifier, "v2.session.list")
  // A continuation may repeat `limit` with its cursor; filters and `order` belong to the initial query.
  .annotate(ClientProjection.Page, { continuation: ["limit"] })
  .annotate(OpenApi.Summary, "List sessions")
  .annotate(
    OpenApi.Description,
    "One page of sessions, newest first unless `order=asc`, optionally filtered by title search, directory, workspace, project or subpath. Continue with the `cursor` of the page."
  )

/** `GET /api/session/{sessionID}` */
export const get = HttpApiEndpoint.get("get", "/api/session/:sessionID")
  .setPath(SessionPath)
  .addSuccess(SessionResponse)
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.get")
  .annotate(OpenApi.Summary, "Get a session")
  .annotate(OpenApi.Description, "One session by id, with its title, agent, model, cost, tokens and revert state.")

/**
 * `DELETE /api/session/{sessionID}` (an extension of the upstream contract): deletes the session with
 * its child sessions (subagents), answering 204 once nothing of them is left. A running session is
 * interrupted first (as by `interrupt`) and its pending permission and question requests are
 * rejected; then every row of the sessions (record, messages, durable log, inbox, instructions,
 * requests) goes in one transaction, their managed files (tool output, the plan file in the data
 * directory) are removed, `GET /api/event` announces `session.deleted` for each, and their open
 * `GET /api/session/{sessionID}/event` streams end. Not idempotent by status: a second delete of the
 * same id (like any unknown id) is the 404 of `get`, and the effect is the same.
 */
export const remove = HttpApiEndpoint.del("remove", "/api/session/:sessionID")
  .setPath(SessionPath)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.delete")
  .annotate(OpenApi.Summary, "Delete a session")
  .annotate(
    OpenApi.Description,
    "Extension. Deletes the session and its child sessions: a running one is interrupted first and its pending permission and question requests are rejected, then its messages, durable log, inbox, instructions and managed files are removed. `GET /api/event` announces `session.deleted` for each, and their open event streams end. An unknown id (including one already deleted) is a 404."
  )

export const group = HttpApiGroup.make("sessions")
  .add(create)
  .add(list)
  .add(get)
  .add(remove)
  .add(SessionEventStream.events)
  .add(SessionInputApi.prompt)
  .add(SessionHistoryApi.messages)
  .add(SessionHistoryApi.message)
  .add(SessionHistoryApi.context)
  .add(SessionHistoryApi.history)
  .add(SessionSelectionApi.switchAgent)
  .add(SessionSelectionApi.switchModel)
  .add(SessionExecution.active)
  .add(SessionExecution.interrupt)
  .add(SessionExecution.wait)
  .add(SessionExecution.compact)
  .add(SessionRevertApi.stage)
  .add(SessionRevertApi.clear)
  .add(SessionRevertApi.commit)
  .add(SessionMoveApi.move)
  .annotate(OpenApi.Title, "sessions")
  .annotate(ClientProjection.Namespace, "sessions")
