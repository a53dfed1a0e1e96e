export * as InstanceEvent from "./instance-event.js"

import { Schema } from "effect"
import {
  define,
  SessionCreated,
  SessionDeleted,
  SessionNextAgentSwitched,
  SessionNextCompactionDelta,
  SessionNextCompactionEnded,
  SessionNextCompactionStarted,
  SessionNextContextUpdated,
  SessionNextModelSwitched,
  SessionNextMoved,
  SessionNextPromptAdmitted,
  SessionNextPrompted,
  SessionNextReasoningDelta,
  SessionNextReasoningEnded,
  SessionNextReasoningStarted,
  SessionNextRetried,
  SessionNextRevertCleared,
  SessionNextRevertCommitted,
  SessionNextRevertStaged,
  SessionNextShellEnded,
  SessionNextShellStarted,
  SessionNextStepEnded,
  SessionNextStepFailed,
  SessionNextStepStarted,
  SessionNextSynthetic,
  SessionNextTextDelta,
  SessionNextTextEnded,
  SessionNextTextStarted,
  SessionNextToolCalled,
  SessionNextToolFailed,
  SessionNextToolInputDelta,
  SessionNextToolInputEnded,
  SessionNextToolInputStarted,
  SessionNextToolProgress,
  SessionNextToolSuccess,
  SessionUpdated
} from "./event.js"
import { PermissionV2Asked, PermissionV2Replied } from "./permission-request.js"
import { PtyCreated, PtyDeleted, PtyExited, PtyUpdated } from "./pty.js"
import { QuestionV2Asked, QuestionV2Rejected, QuestionV2Replied } from "./question-request.js"

/*
 * The instance-wide live stream (`GET /api/event`). It carries Session and non-Session activity as
 * it happens, with no replay guarantee: a consumer that reconnects refreshes authoritative state
 * instead. Its lifecycle is
 *
 *   server.connected ─► events* ─► global.disposed
 *
 * with an SSE comment (`: heartbeat`) whenever the stream has been quiet for a heartbeat period: it
 * is not an event, so a client decoding every event against the contract's union never meets one.
 */

/** Always the first event a subscriber receives; it carries no data. */
export const ServerConnected = define("server.connected", {}, "ServerConnected")
export interface ServerConnected extends Schema.Schema.Type<typeof ServerConnected> {}

/** The instance is shutting down; this is the last event and the stream ends after it. */
export const GlobalDisposed = define("global.disposed", {}, "GlobalDisposed")
export interface GlobalDisposed extends Schema.Schema.Type<typeof GlobalDisposed> {}

/**
 * What `GET /api/event` may send: the contract's `V2Event` union, in its order, restricted to the
 * members this runtime emits, with nothing added, so every event validates against the contract.
 * `session.created`, `session.updated` and `session.deleted` (the v1 session record; `session.updated`
 * stands for the durable `session.next.title.updated` and `usage.recorded`, which are not in the
 * contract), every contract `session.next.*` event (durable ones as they commit, plus the live-only
 * deltas), the permission and question requests' events, the PTYs' `pty.created`/`updated`/`exited`/
 * `deleted`, and the stream lifecycle. Each event about a session carries the session's `location`.
 * The contract's other members (legacy message and part events, files, workspaces, ...) join as their
 * features arrive.
 */
export const V2Event = Schema.Union(
  SessionCreated,
  SessionUpdated,
  SessionDeleted,
  SessionNextAgentSwitched,
  SessionNextModelSwitched,
  SessionNextMoved,
  SessionNextPrompted,
  SessionNextPromptAdmitted,
  SessionNextContextUpdated,
  SessionNextSynthetic,
  SessionNextShellStarted,
  SessionNextShellEnded,
  SessionNextStepStarted,
  SessionNextStepEnded,
  SessionNextStepFailed,
  SessionNextTextStarted,
  SessionNextTextDelta,
  SessionNextTextEnded,
  SessionNextReasoningStarted,
  SessionNextReasoningDelta,
  SessionNextReasoningEnded,
  SessionNextToolInputStarted,
  SessionNextToolInputDelta,
  SessionNextToolInputEnded,
  SessionNextToolCalled,
  SessionNextToolProgress,
  SessionNextToolSuccess,
  SessionNextToolFailed,
  SessionNextRetried,
  SessionNextCompactionStarted,
  SessionNextCompactionDelta,
  SessionNextCompactionEnded,
  SessionNextRevertStaged,
  SessionNextRevertCleared,
  SessionNextRevertCommitted,
  PermissionV2Asked,
  PermissionV2Replied,
  PtyCreated,
  PtyUpdated,
  PtyExited,
  PtyDeleted,
  QuestionV2Asked,
  QuestionV2Replied,
  QuestionV2Rejected,
  ServerConnected,
  GlobalDisposed
).annotations({ identifier: "V2Event" })
export type V2Event = typeof V2Event.Type
