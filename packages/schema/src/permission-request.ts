export * as PermissionRequest from "./permission-request.js"

import { Schema } from "effect"
import { define } from "./event.js"
import { FreeFormObject } from "./free-form.js"
import { PermissionID, SessionID } from "./identifier.js"

/**
 * Permission requests: an *ask* waiting for a person's answer. A request is created when an action's
 * effect under the asking agent's rules is `ask` (by a tool call through the runner, or by a client
 * through `POST /api/session/{id}/permission`). It is pending until it is answered once, always
 * (which also saves the request's patterns), or rejected; interrupting its session rejects it.
 *
 *   pending ──reply once────► allowed (this call only)
 *           ──reply always──► allowed, `save` patterns become saved permissions of the project
 *           ──reply reject──► the call fails (also: session interrupted, process restarted)
 */

/** Where a request comes from: the tool call that asked (`messageID` is the assistant message). */
export const PermissionV2Source = Schema.Struct({
  type: Schema.Literal("tool"),
  messageID: Schema.String,
  callID: Schema.String
}).annotations({ identifier: "PermissionV2Source" })
export interface PermissionV2Source extends Schema.Schema.Type<typeof PermissionV2Source> {}

/**
 * A pending request: may `action` be done on every one of `resources`? `save` lists the patterns a
 * reply of `always` saves (default: the resources themselves); `metadata` is shown to whoever answers
 * (e.g. the diff of an edit) and never interpreted.
 */
export const PermissionV2Request = Schema.Struct({
  id: PermissionID,
  sessionID: SessionID,
  action: Schema.String,
  resources: Schema.Array(Schema.String),
  save: Schema.optional(Schema.Array(Schema.String)),
  metadata: Schema.optional(FreeFormObject),
  source: Schema.optional(PermissionV2Source)
}).annotations({ identifier: "PermissionV2Request" })
export interface PermissionV2Request extends Schema.Schema.Type<typeof PermissionV2Request> {}

/** An answer: allow this once, allow and save the request's patterns, or refuse. */
export const PermissionV2Reply = Schema.Literal("once", "always", "reject").annotations({
  identifier: "PermissionV2Reply"
})
export type PermissionV2Reply = typeof PermissionV2Reply.Type

/**
 * A request was created and waits for an answer. Durable: it is the first event (seq 1) of the
 * request's own aggregate (`durable.aggregateID` is the request ID), published on the instance
 * stream when it commits.
 */
export const PermissionV2Asked = define(
  "permission.v2.asked",
  {
    id: PermissionID,
    sessionID: SessionID,
    action: Schema.String,
    resources: Schema.Array(Schema.String),
    save: Schema.optional(Schema.Array(Schema.String)),
    metadata: Schema.optional(FreeFormObject),
    source: Schema.optional(PermissionV2Source)
  },
  "PermissionV2Asked"
)
export interface PermissionV2Asked extends Schema.Schema.Type<typeof PermissionV2Asked> {}

/**
 * A request was answered (seq 2 of the request's aggregate); its pending state is gone. An
 * interrupted session's requests are answered `reject`.
 */
export const PermissionV2Replied = define(
  "permission.v2.replied",
  { sessionID: SessionID, requestID: PermissionID, reply: PermissionV2Reply },
  "PermissionV2Replied"
)
export interface PermissionV2Replied extends Schema.Schema.Type<typeof PermissionV2Replied> {}

/**
 * A saved permission: `action` on resources matching `resource` is allowed in the project from now
 * on (the result of replying `always`). Removing it makes later calls ask again.
 */
export const PermissionSavedInfo = Schema.Struct({
  id: Schema.String,
  projectID: Schema.String,
  action: Schema.String,
  resource: Schema.String
}).annotations({ identifier: "PermissionSavedInfo" })
export interface PermissionSavedInfo extends Schema.Schema.Type<typeof PermissionSavedInfo> {}
