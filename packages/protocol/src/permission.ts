export * as PermissionGroup from "./permission.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Errors, FreeForm, Identifier, Location, PermissionRequest, PermissionRule } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { documentLocationQuery, LocationQuery } from "./location.js"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const SessionPath = Schema.Struct({ sessionID: Identifier.SessionID })
export const RequestPath = Schema.Struct({ sessionID: Identifier.SessionID, requestID: Identifier.PermissionID })
export const SavedPath = Schema.Struct({ id: Schema.String })
export const SavedQuery = Schema.Struct({ projectID: Schema.optional(Schema.String) })

/**
 * `POST /api/session/{sessionID}/permission`: asks for a permission on behalf of a client (e.g. a
 * plugin's own tool). `agent` names whose rules apply (default: the session's agent).
 */
export const CreatePayload = Schema.Struct({
  id: Schema.optional(Identifier.PermissionID),
  action: Schema.String,
  resources: Schema.Array(Schema.String),
  save: Schema.optional(Schema.Array(Schema.String)),
  metadata: Schema.optional(FreeForm.FreeFormObject),
  source: Schema.optional(PermissionRequest.PermissionV2Source),
  agent: Schema.optional(Schema.String)
}).annotations(strict)
export interface CreatePayload extends Schema.Schema.Type<typeof CreatePayload> {}

export const ReplyPayload = Schema.Struct({
  reply: PermissionRequest.PermissionV2Reply,
  message: Schema.optional(Schema.String)
}).annotations(strict)
export interface ReplyPayload extends Schema.Schema.Type<typeof ReplyPayload> {}

/** `GET /api/permission/request`: the pending requests of the sessions in the Location (default: the instance's). */
export const listRequests = HttpApiEndpoint.get("listRequests", "/api/permission/request")
  .setUrlParams(LocationQuery)
  .addSuccess(
    Schema.Struct({ location: Location.LocationInfo, data: Schema.Array(PermissionRequest.PermissionV2Request) })
  )
  .annotate(OpenApi.Identifier, "v2.permission.request.list")
  .annotate(OpenApi.Summary, "List pending permission requests")
  .annotate(
    OpenApi.Description,
    "The pending permission requests of the sessions in the requested Location (default: the instance's)."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/** `GET /api/permission/saved`: saved permissions, of one project when `projectID` is given, else all. */
export const listSaved = HttpApiEndpoint.get("listSaved", "/api/permission/saved")
  .setUrlParams(SavedQuery)
  .addSuccess(Schema.Struct({ data: Schema.Array(PermissionRequest.PermissionSavedInfo) }))
  .annotate(OpenApi.Identifier, "v2.permission.saved.list")
  .annotate(OpenApi.Summary, "List saved permissions")
  .annotate(
    OpenApi.Description,
    "The permissions saved by `always` replies, of one project when `projectID` is given, else all."
  )

/** `DELETE /api/permission/saved/{id}`: forgets a saved permission (later calls ask again); idempotent. */
export const removeSaved = HttpApiEndpoint.del("removeSaved", "/api/permission/saved/:id")
  .setPath(SavedPath)
  .addSuccess(Schema.Void, { status: 204 })
  .annotate(OpenApi.Identifier, "v2.permission.saved.remove")
  .annotate(OpenApi.Summary, "Remove a saved permission")
  .annotate(OpenApi.Description, "Forgets a saved permission, so matching calls ask again. Idempotent.")

/**
 * `POST /api/session/{sessionID}/permission`: evaluates the action under the agent's rules and the
 * project's saved permissions. `allow` and `deny` create nothing; `ask` creates a pending request
 * (answered through `…/reply`, announced as `permission.v2.asked`). Idempotent by `id`: an existing
 * request is returned as it is. An unknown agent is a 400.
 */
export const create = HttpApiEndpoint.post("create", "/api/session/:sessionID/permission")
  .setPath(SessionPath)
  .setPayload(CreatePayload)
  .addSuccess(
    Schema.Struct({ data: Schema.Struct({ id: Identifier.PermissionID, effect: PermissionRule.PermissionV2Effect }) })
  )
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.permission.create")
  .annotate(OpenApi.Summary, "Ask for a permission")
  .annotate(
    OpenApi.Description,
    "Evaluates an action under the agent's rules and the project's saved permissions: `allow` and `deny` create nothing, `ask` creates a pending request that is answered through its reply route. Idempotent by request id. An unknown agent is a 400."
  )

/** `GET /api/session/{sessionID}/permission`: the session's pending requests, oldest first. */
export const list = HttpApiEndpoint.get("list", "/api/session/:sessionID/permission")
  .setPath(SessionPath)
  .addSuccess(Schema.Struct({ data: Schema.Array(PermissionRequest.PermissionV2Request) }))
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.permission.list")
  .annotate(OpenApi.Summary, "List a session's permission requests")
  .annotate(OpenApi.Description, "The session's pending permission requests, oldest first.")

/** `GET /api/session/{sessionID}/permission/{requestID}`: one pending request; 404 once it is answered. */
export const get = HttpApiEndpoint.get("get", "/api/session/:sessionID/permission/:requestID")
  .setPath(RequestPath)
  .addSuccess(Schema.Struct({ data: PermissionRequest.PermissionV2Request }))
  .addError(Errors.PermissionNotFoundError, { status: 404 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.permission.get")
  .annotate(OpenApi.Summary, "Get a permission request")
  .annotate(OpenApi.Description, "One pending permission request of the session; a 404 once it is answered.")

/**
 * `POST /api/session/{sessionID}/permission/{requestID}/reply` (204): answers a pending request:
 * `once` lets the waiting call run, `always` also saves the request's patterns for the project,
 * `reject` fails the call (`message`, when given, is passed to the model). A request that is not
 * pending (unknown, or already answered) is a 404.
 */
export const reply = HttpApiEndpoint.post("reply", "/api/session/:sessionID/permission/:requestID/reply")
  .setPath(RequestPath)
  .setPayload(ReplyPayload)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.PermissionNotFoundError, { status: 404 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.permission.reply")
  .annotate(OpenApi.Summary, "Reply to a permission request")
  .annotate(
    OpenApi.Description,
    "Answers a pending request: `once` lets the waiting call run, `always` also saves its patterns for the project, `reject` fails the call (a `message`, when given, is passed to the model). A request that is not pending is a 404."
  )

export const group = HttpApiGroup.make("permissions")
  .add(listRequests)
  .add(listSaved)
  .add(removeSaved)
  .add(create)
  .add(list)
  .add(get)
  .add(reply)
  .annotate(OpenApi.Title, "permissions")
  .annotate(ClientProjection.Namespace, "permissions")
