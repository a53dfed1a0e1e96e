export * as InstanceEvent from "./instance-event.js"

import { Schema } from "effect"
import {
  define,
  SessionCreated,
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
  SessionNextTitleUpdated,
  SessionNextToolCalled,
  SessionNextToolFailed,
  SessionNextToolInputDelta,
  SessionNextToolInputEnded,
  SessionNextToolInputStarted,
  SessionNextToolProgress,
  SessionNextToolSuccess,
  SessionNextUsageRecorded
} from "./event.js"
import { PermissionV2Asked, PermissionV2Replied } from "./permission-request.js"
import { PtyCreated, PtyDeleted, PtyExited, PtyUpdated } from "./pty.js"
import { QuestionV2Asked, QuestionV2Rejected, QuestionV2Replied } from "./question-request.js"

/*
 * The instance-wide live stream (`GET /api/event`). It carries Session and non-Session activity as
 * it happens, with no replay guarantee: a consumer that reconnects refreshes authoritative state
 * instead. Its lifecycle is
 *
 *   server.connected ─► (events | server.heartbeat)* ─► global.disposed
 */

/** Always the first event a subscriber receives; it carries no data. */
export const ServerConnected = define("server.connected", {}, "ServerConnected")
export interface ServerConnected extends Schema.Schema.Type<typeof ServerConnected> {}

/**
 * Sent when the stream has been quiet for a while (at most every 15 s), so clients and proxies can
 * tell an idle stream from a dead one. Not in the upstream contract's union: upstream's live stream
 * has no heartbeat event, while ours must send one.
 */
export const ServerHeartbeat = define("server.heartbeat", {}, "ServerHeartbeat")
export interface ServerHeartbeat extends Schema.Schema.Type<typeof ServerHeartbeat> {}

/** The instance is shutting down; this is the last event and the stream ends after it. */
export const GlobalDisposed = define("global.disposed", {}, "GlobalDisposed")
export interface GlobalDisposed extends Schema.Schema.Type<typeof GlobalDisposed> {}

/**
 * What `GET /api/event` may send. It has the contract's shape (a union of envelopes discriminated by
 * `type`, in the contract's order) restricted to the members this runtime emits: `session.created`,
 * every `session.next.*` event (durable ones as they commit, plus the live-only deltas), the
 * permission requests' `permission.v2.asked`/`replied`, the question requests' `question.v2.asked`/`replied`/`rejected`, the PTYs' `pty.created`/`updated`/`exited`/`deleted`, and the stream lifecycle. The contract's other
 * members (legacy message and part events, legacy permissions,
 * questions, files, workspaces, ...) join as their features arrive. `server.heartbeat` and the
 * `session.next.title.updated` / `usage.recorded` extensions are ours.
 */
export const V2Event = Schema.Union(
  SessionCreated,
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
  SessionNextTitleUpdated,
  SessionNextUsageRecorded,
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
  GlobalDisposed,
  ServerHeartbeat
).annotations({ identifier: "V2Event" })
export type V2Event = typeof V2Event.Type
