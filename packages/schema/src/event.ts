export * as Event from "./event.js"

import { Schema } from "effect"
import { Delivery, Prompt } from "./admitted-prompt.js"
import { FreeFormObject } from "./free-form.js"
import { EventID, SessionID, SessionMessageID } from "./identifier.js"
import { LegacySession } from "./legacy-session.js"
import { LocationRef } from "./location.js"
import { ModelRef } from "./model.js"
import { LLMProviderMetadata } from "./provider-metadata.js"
import { RevertState, SessionV2Info, Tokens } from "./session.js"
import { SessionErrorUnknown, SessionNextRetryError, SessionStepError } from "./session-error.js"
import { LLMToolContent } from "./tool-content.js"

/**
 * Where a durable event sits in its aggregate's log: `seq` is gapless per aggregate and starts at 1
 * (a session's `session.created`, the log's origin, is seq 0); `version` is the schema version of
 * the event type.
 */
export const Durable = Schema.Struct({
  aggregateID: Schema.String,
  seq: Schema.Int,
  version: Schema.Int
})
export interface Durable extends Schema.Schema.Type<typeof Durable> {}

/**
 * Builds the envelope schema of one event type: `{id, metadata?, type, durable?, location?, data}`.
 * Durable events always carry `durable`; live-only events omit it. `metadata` is an open bag a
 * producer may attach; the runtime never sets or reads it, but it is part of the contract's envelope
 * so a client may see it, and it is kept when present.
 */
export const define = <const Type extends string, Data extends Schema.Struct.Fields>(
  type: Type,
  data: Data,
  identifier: string
) =>
  Schema.Struct({
    id: EventID,
    metadata: Schema.optional(FreeFormObject),
    type: Schema.Literal(type),
    durable: Schema.optional(Durable),
    location: Schema.optional(LocationRef),
    data: dataOf(data)
  }).annotations({ identifier })

/**
 * The `data` record of an envelope. An event without data fields is described as an empty object
 * (as the contract does): Effect's own rendering of `{}` would also admit arrays. Decoding still
 * follows Effect's `{}` (any non-null value); there is nothing in it to read.
 */
const dataOf = <Data extends Schema.Struct.Fields>(fields: Data): Schema.Struct<Data> =>
  Object.keys(fields).length === 0
    ? Schema.Struct(fields).annotations({ jsonSchema: { type: "object", properties: {} } })
    : Schema.Struct(fields)

/**
 * The origin of every session's log (seq 0, before the session's own events): the session as
 * created, as the v2 record. It stays in the log; on the wire it is announced as {@link SessionCreated}.
 */
export const SessionOrigin = define("session.created", { sessionID: SessionID, info: SessionV2Info }, "SessionOrigin")
export interface SessionOrigin extends Schema.Schema.Type<typeof SessionOrigin> {}

/**
 * A session was created, as `GET /api/event` announces it: the contract's v1 bus event, carrying
 * the v1 session record (`LegacySession.fromV2` of the origin's record).
 */
export const SessionCreated = define(
  "session.created",
  { sessionID: SessionID, info: LegacySession.Session },
  "SessionCreated"
)
export interface SessionCreated extends Schema.Schema.Type<typeof SessionCreated> {}

/**
 * A session's record changed (its title, or its usage and cost), as `GET /api/event` announces it:
 * the contract's v1 bus event with the v1 record as it is now. The durable log records the change as
 * `session.next.title.updated` or `session.next.usage.recorded`.
 */
export const SessionUpdated = define(
  "session.updated",
  { sessionID: SessionID, info: LegacySession.Session },
  "SessionUpdated"
)
export interface SessionUpdated extends Schema.Schema.Type<typeof SessionUpdated> {}

/**
 * A session was deleted (`DELETE /api/session/{sessionID}`, an extension operation), as
 * `GET /api/event` announces it: the contract's v1 bus event, carrying the v1 session record as it
 * was when it was deleted. It is live only: the session's durable log is deleted with it.
 */
export const SessionDeleted = define(
  "session.deleted",
  { sessionID: SessionID, info: LegacySession.Session },
  "SessionDeleted"
)
export interface SessionDeleted extends Schema.Schema.Type<typeof SessionDeleted> {}

// Every session.next event's data starts with when it happened and which session it belongs to.
const at = { timestamp: Schema.Number, sessionID: SessionID } as const

/** Where a tool call was handled: `executed` is true when the provider ran it itself. */
const ToolProvider = Schema.Struct({
  executed: Schema.Boolean,
  metadata: Schema.optional(LLMProviderMetadata)
})

// ── Session state ───────────────────────────────────────────────────────────────────────────────

/** The session's agent changed; it applies from the next Step. `messageID` is the marker message. */
export const SessionNextAgentSwitched = define(
  "session.next.agent.switched",
  { ...at, messageID: SessionMessageID, agent: Schema.String },
  "SessionNextAgentSwitched"
)
export interface SessionNextAgentSwitched extends Schema.Schema.Type<typeof SessionNextAgentSwitched> {}

/** The session's model changed; it applies from the next Step. `messageID` is the marker message. */
export const SessionNextModelSwitched = define(
  "session.next.model.switched",
  { ...at, messageID: SessionMessageID, model: ModelRef },
  "SessionNextModelSwitched"
)
export interface SessionNextModelSwitched extends Schema.Schema.Type<typeof SessionNextModelSwitched> {}

/** The session now works at another Location (optionally a subdirectory of it); instructions reset. */
export const SessionNextMoved = define(
  "session.next.moved",
  { ...at, location: LocationRef, subdirectory: Schema.optional(Schema.String) },
  "SessionNextMoved"
)
export interface SessionNextMoved extends Schema.Schema.Type<typeof SessionNextMoved> {}

// ── Input ───────────────────────────────────────────────────────────────────────────────────────

/**
 * A prompt was promoted: the inbox entry is consumed and the user message `messageID` now exists in
 * history. It is committed atomically with the consumption, at a Safe Step Boundary.
 */
export const SessionNextPrompted = define(
  "session.next.prompted",
  { ...at, messageID: SessionMessageID, prompt: Prompt, delivery: Delivery },
  "SessionNextPrompted"
)
export interface SessionNextPrompted extends Schema.Schema.Type<typeof SessionNextPrompted> {}

/**
 * A prompt was admitted into the session's inbox, durably, before any execution. It is not yet
 * part of history; `messageID` is the message it will become when promoted.
 */
export const SessionNextPromptAdmitted = define(
  "session.next.prompt.admitted",
  { ...at, messageID: SessionMessageID, prompt: Prompt, delivery: Delivery },
  "SessionNextPromptAdmitted"
)
export interface SessionNextPromptAdmitted extends Schema.Schema.Type<typeof SessionNextPromptAdmitted> {}

/**
 * An Instruction Update was admitted: `text` is exactly what the model is told (replayed verbatim,
 * never re-rendered) and `messageID` is the chronological system message it becomes in history.
 */
export const SessionNextContextUpdated = define(
  "session.next.context.updated",
  { ...at, messageID: SessionMessageID, text: Schema.String },
  "SessionNextContextUpdated"
)
export interface SessionNextContextUpdated extends Schema.Schema.Type<typeof SessionNextContextUpdated> {}

/** The runtime added text on the user's side of the conversation (for example a continuation note). */
export const SessionNextSynthetic = define(
  "session.next.synthetic",
  { ...at, messageID: SessionMessageID, text: Schema.String },
  "SessionNextSynthetic"
)
export interface SessionNextSynthetic extends Schema.Schema.Type<typeof SessionNextSynthetic> {}

/** A user-run shell command started; `callID` ties it to its end. */
export const SessionNextShellStarted = define(
  "session.next.shell.started",
  { ...at, messageID: SessionMessageID, callID: Schema.String, command: Schema.String },
  "SessionNextShellStarted"
)
export interface SessionNextShellStarted extends Schema.Schema.Type<typeof SessionNextShellStarted> {}

/** A user-run shell command finished, with its whole output. */
export const SessionNextShellEnded = define(
  "session.next.shell.ended",
  { ...at, callID: Schema.String, output: Schema.String },
  "SessionNextShellEnded"
)
export interface SessionNextShellEnded extends Schema.Schema.Type<typeof SessionNextShellEnded> {}

// ── Steps ───────────────────────────────────────────────────────────────────────────────────────
//
//   step.started ─► (text | reasoning | tool input | tool call)* ─► step.ended   (finish, tokens, cost)
//                                                                └► step.failed  (error)

/** A Step began with this agent and model; `assistantMessageID` is the assistant message it fills. */
export const SessionNextStepStarted = define(
  "session.next.step.started",
  {
    ...at,
    assistantMessageID: SessionMessageID,
    agent: Schema.String,
    model: ModelRef,
    snapshot: Schema.optional(Schema.String)
  },
  "SessionNextStepStarted"
)
export interface SessionNextStepStarted extends Schema.Schema.Type<typeof SessionNextStepStarted> {}

/**
 * A Step settled normally. `finish` is the provider's finish reason (`stop`, `tool-calls`, ...),
 * with the step's token usage and cost; `snapshot` and `files` describe the workspace afterwards.
 */
export const SessionNextStepEnded = define(
  "session.next.step.ended",
  {
    ...at,
    assistantMessageID: SessionMessageID,
    finish: Schema.String,
    cost: Schema.Number,
    tokens: Tokens,
    snapshot: Schema.optional(Schema.String),
    files: Schema.optional(Schema.Array(Schema.String))
  },
  "SessionNextStepEnded"
)
export interface SessionNextStepEnded extends Schema.Schema.Type<typeof SessionNextStepEnded> {}

/**
 * A Step failed (provider error, interruption during output, overflow...). Partial content is kept.
 * `error` may be (our extension) a `StructuredOutputError`: the Step was asked for a Structured Output
 * and did not produce one.
 */
export const SessionNextStepFailed = define(
  "session.next.step.failed",
  { ...at, assistantMessageID: SessionMessageID, error: SessionStepError },
  "SessionNextStepFailed"
)
export interface SessionNextStepFailed extends Schema.Schema.Type<typeof SessionNextStepFailed> {}

// ── Text and reasoning ──────────────────────────────────────────────────────────────────────────
// Started and ended are durable; the deltas in between are live-only. Every `ended` carries the
// full value, so a reader of the durable log never needs the deltas.

export const SessionNextTextStarted = define(
  "session.next.text.started",
  { ...at, assistantMessageID: SessionMessageID, textID: Schema.String },
  "SessionNextTextStarted"
)
export interface SessionNextTextStarted extends Schema.Schema.Type<typeof SessionNextTextStarted> {}

/** Live-only: a fragment of streamed text. Never stored or replayed. */
export const SessionNextTextDelta = define(
  "session.next.text.delta",
  { ...at, assistantMessageID: SessionMessageID, textID: Schema.String, delta: Schema.String },
  "SessionNextTextDelta"
)
export interface SessionNextTextDelta extends Schema.Schema.Type<typeof SessionNextTextDelta> {}

/** A text block is complete; `text` is all of it (the partial text when the step was interrupted). */
export const SessionNextTextEnded = define(
  "session.next.text.ended",
  { ...at, assistantMessageID: SessionMessageID, textID: Schema.String, text: Schema.String },
  "SessionNextTextEnded"
)
export interface SessionNextTextEnded extends Schema.Schema.Type<typeof SessionNextTextEnded> {}

export const SessionNextReasoningStarted = define(
  "session.next.reasoning.started",
  {
    ...at,
    assistantMessageID: SessionMessageID,
    reasoningID: Schema.String,
    providerMetadata: Schema.optional(LLMProviderMetadata)
  },
  "SessionNextReasoningStarted"
)
export interface SessionNextReasoningStarted extends Schema.Schema.Type<typeof SessionNextReasoningStarted> {}

/** Live-only: a fragment of streamed reasoning. Never stored or replayed. */
export const SessionNextReasoningDelta = define(
  "session.next.reasoning.delta",
  { ...at, assistantMessageID: SessionMessageID, reasoningID: Schema.String, delta: Schema.String },
  "SessionNextReasoningDelta"
)
export interface SessionNextReasoningDelta extends Schema.Schema.Type<typeof SessionNextReasoningDelta> {}

/** A reasoning block is complete, with its Native Continuation Metadata (e.g. a signature). */
export const SessionNextReasoningEnded = define(
  "session.next.reasoning.ended",
  {
    ...at,
    assistantMessageID: SessionMessageID,
    reasoningID: Schema.String,
    text: Schema.String,
    providerMetadata: Schema.optional(LLMProviderMetadata)
  },
  "SessionNextReasoningEnded"
)
export interface SessionNextReasoningEnded extends Schema.Schema.Type<typeof SessionNextReasoningEnded> {}

// ── Tools ───────────────────────────────────────────────────────────────────────────────────────
//
//   tool.input.started ─► (tool.input.delta)* ─► tool.input.ended ─► tool.called ─► (tool.progress)*
//                                                                  ─► tool.success | tool.failed

/** The model began a tool call to `name`; its arguments are about to stream. */
export const SessionNextToolInputStarted = define(
  "session.next.tool.input.started",
  { ...at, assistantMessageID: SessionMessageID, callID: Schema.String, name: Schema.String },
  "SessionNextToolInputStarted"
)
export interface SessionNextToolInputStarted extends Schema.Schema.Type<typeof SessionNextToolInputStarted> {}

/** Live-only: a fragment of a tool call's argument text. Never stored or replayed. */
export const SessionNextToolInputDelta = define(
  "session.next.tool.input.delta",
  { ...at, assistantMessageID: SessionMessageID, callID: Schema.String, delta: Schema.String },
  "SessionNextToolInputDelta"
)
export interface SessionNextToolInputDelta extends Schema.Schema.Type<typeof SessionNextToolInputDelta> {}

/** The tool call's argument text is complete (raw, as the model wrote it). */
export const SessionNextToolInputEnded = define(
  "session.next.tool.input.ended",
  { ...at, assistantMessageID: SessionMessageID, callID: Schema.String, text: Schema.String },
  "SessionNextToolInputEnded"
)
export interface SessionNextToolInputEnded extends Schema.Schema.Type<typeof SessionNextToolInputEnded> {}

/**
 * A tool call with parsed `input` is about to run. It is durable before execution starts, so after a
 * crash a call with no settlement is known to have been left running and is failed explicitly.
 */
export const SessionNextToolCalled = define(
  "session.next.tool.called",
  {
    ...at,
    assistantMessageID: SessionMessageID,
    callID: Schema.String,
    tool: Schema.String,
    input: FreeFormObject,
    provider: ToolProvider
  },
  "SessionNextToolCalled"
)
export interface SessionNextToolCalled extends Schema.Schema.Type<typeof SessionNextToolCalled> {}

/** A running tool reported progress; each report replaces the previous one. */
export const SessionNextToolProgress = define(
  "session.next.tool.progress",
  {
    ...at,
    assistantMessageID: SessionMessageID,
    callID: Schema.String,
    structured: FreeFormObject,
    content: Schema.Array(LLMToolContent)
  },
  "SessionNextToolProgress"
)
export interface SessionNextToolProgress extends Schema.Schema.Type<typeof SessionNextToolProgress> {}

/**
 * A tool call settled successfully: `content` is what the model sees, `structured` the
 * machine-readable output, `outputPaths` where full output was stored, `result` the raw return value
 * (unconstrained in the contract, hence `unknown`).
 */
export const SessionNextToolSuccess = define(
  "session.next.tool.success",
  {
    ...at,
    assistantMessageID: SessionMessageID,
    callID: Schema.String,
    structured: FreeFormObject,
    content: Schema.Array(LLMToolContent),
    outputPaths: Schema.optional(Schema.Array(Schema.String)),
    result: Schema.optional(Schema.Unknown),
    provider: ToolProvider
  },
  "SessionNextToolSuccess"
)
export interface SessionNextToolSuccess extends Schema.Schema.Type<typeof SessionNextToolSuccess> {}

/** A tool call failed, was interrupted, or was left running by a crash and failed at recovery. */
export const SessionNextToolFailed = define(
  "session.next.tool.failed",
  {
    ...at,
    assistantMessageID: SessionMessageID,
    callID: Schema.String,
    error: SessionErrorUnknown,
    // Whatever the tool returned before failing; unconstrained in the contract (`{}`).
    result: Schema.optional(Schema.Unknown),
    provider: ToolProvider
  },
  "SessionNextToolFailed"
)
export interface SessionNextToolFailed extends Schema.Schema.Type<typeof SessionNextToolFailed> {}

// ── Retries ─────────────────────────────────────────────────────────────────────────────────────

/** A provider call failed retryably and will be attempted again; `attempt` counts from 1. */
export const SessionNextRetried = define(
  "session.next.retried",
  { ...at, attempt: Schema.Number, error: SessionNextRetryError },
  "SessionNextRetried"
)
export interface SessionNextRetried extends Schema.Schema.Type<typeof SessionNextRetried> {}

// ── Compaction ──────────────────────────────────────────────────────────────────────────────────

export const SessionNextCompactionStarted = define(
  "session.next.compaction.started",
  { ...at, messageID: SessionMessageID, reason: Schema.Literal("auto", "manual") },
  "SessionNextCompactionStarted"
)
export interface SessionNextCompactionStarted extends Schema.Schema.Type<typeof SessionNextCompactionStarted> {}

/** Live-only: a fragment of the summary being written. Never stored or replayed. */
export const SessionNextCompactionDelta = define(
  "session.next.compaction.delta",
  { ...at, messageID: SessionMessageID, text: Schema.String },
  "SessionNextCompactionDelta"
)
export interface SessionNextCompactionDelta extends Schema.Schema.Type<typeof SessionNextCompactionDelta> {}

/** A compaction finished: `text` is the summary and `recent` the tail of history kept verbatim. */
export const SessionNextCompactionEnded = define(
  "session.next.compaction.ended",
  {
    ...at,
    messageID: SessionMessageID,
    reason: Schema.Literal("auto", "manual"),
    text: Schema.String,
    recent: Schema.String
  },
  "SessionNextCompactionEnded"
)
export interface SessionNextCompactionEnded extends Schema.Schema.Type<typeof SessionNextCompactionEnded> {}

// ── Revert ──────────────────────────────────────────────────────────────────────────────────────
//
//   revert.staged ─► revert.committed   (history after the message is dropped; instructions reset)
//                └─► revert.cleared     (nothing changes)

export const SessionNextRevertStaged = define(
  "session.next.revert.staged",
  { ...at, revert: RevertState },
  "SessionNextRevertStaged"
)
export interface SessionNextRevertStaged extends Schema.Schema.Type<typeof SessionNextRevertStaged> {}

export const SessionNextRevertCleared = define("session.next.revert.cleared", { ...at }, "SessionNextRevertCleared")
export interface SessionNextRevertCleared extends Schema.Schema.Type<typeof SessionNextRevertCleared> {}

export const SessionNextRevertCommitted = define(
  "session.next.revert.committed",
  { ...at, messageID: SessionMessageID },
  "SessionNextRevertCommitted"
)
export interface SessionNextRevertCommitted extends Schema.Schema.Type<typeof SessionNextRevertCommitted> {}

// ── Extensions (ours; not in the upstream contract) ─────────────────────────────────────────────
//
// The v2 contract keeps a session's title, cost and tokens on SessionV2Info but has no durable event
// that changes the title, and only `step.ended` carries usage. These two events fill those gaps; they
// are appended to the session's log like the contract's and replayed with it.

/**
 * Extension: the hidden `title` agent named the session. `title` is the new SessionV2Info title
 * (one line, at most 100 characters). Appended at most once per session, and never for a child
 * session or one whose title was given when it was created; the projection sets the session's title
 * in the same transaction.
 */
export const SessionNextTitleUpdated = define(
  "session.next.title.updated",
  { ...at, title: Schema.String },
  "SessionNextTitleUpdated"
)
export interface SessionNextTitleUpdated extends Schema.Schema.Type<typeof SessionNextTitleUpdated> {}

/**
 * Extension: the usage of a provider request the runtime made for the session outside its Steps (the
 * hidden `compaction` and `title` agents' requests): `agent` made it to `model`, which billed
 * `tokens` (disjoint counts, as on `step.ended`) costing `cost` USD. The session's `cost` and
 * `tokens` add it, like a `step.ended`'s. Committed in the transaction of the result it paid for
 * (`compaction.ended`, `title.updated`), or alone when the request produced no usable result.
 */
export const SessionNextUsageRecorded = define(
  "session.next.usage.recorded",
  { ...at, agent: Schema.String, model: ModelRef, cost: Schema.Number, tokens: Tokens },
  "SessionNextUsageRecorded"
)
export interface SessionNextUsageRecorded extends Schema.Schema.Type<typeof SessionNextUsageRecorded> {}

// ── Unions ──────────────────────────────────────────────────────────────────────────────────────

/**
 * The `session.next.*` events that are committed to a session's log and replayed by
 * `GET /api/session/{id}/event` and `/history`, in the contract's order, then our extensions
 * (`title.updated`, `usage.recorded`). `session.created` is not a member (the contract's union
 * leaves it out); see {@link SessionLogEvent}.
 */
export const SessionDurableEvent = Schema.Union(
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
  SessionNextTextEnded,
  SessionNextToolInputStarted,
  SessionNextToolInputEnded,
  SessionNextToolCalled,
  SessionNextToolProgress,
  SessionNextToolSuccess,
  SessionNextToolFailed,
  SessionNextReasoningStarted,
  SessionNextReasoningEnded,
  SessionNextRetried,
  SessionNextCompactionStarted,
  SessionNextCompactionEnded,
  SessionNextRevertStaged,
  SessionNextRevertCleared,
  SessionNextRevertCommitted,
  // Extensions, after the contract's members.
  SessionNextTitleUpdated,
  SessionNextUsageRecorded
).annotations({ identifier: "SessionDurableEvent" })
export type SessionDurableEvent = typeof SessionDurableEvent.Type

/**
 * Everything a session's log may hold: `session.created` (its origin, seq 0; seq 1 in a log written
 * before that rule) followed by durable `session.next.*` events from seq 1 on. This is what the log decodes; it is not a wire contract of its own.
 */
export const SessionLogEvent = Schema.Union(SessionOrigin, ...SessionDurableEvent.members)
export type SessionLogEvent = typeof SessionLogEvent.Type

/**
 * The `session.next.*` events that exist only on the live instance stream (`GET /api/event`): the
 * streamed fragments between a durable `started` and `ended`. They have no `durable` position.
 */
export const SessionLiveEvent = Schema.Union(
  SessionNextTextDelta,
  SessionNextReasoningDelta,
  SessionNextToolInputDelta,
  SessionNextCompactionDelta
)
export type SessionLiveEvent = typeof SessionLiveEvent.Type

/**
 * The schema version each durable type is written with (`durable.version`). A reader meeting a
 * higher version than it knows must not guess at the shape. `step.ended` and `step.failed` are at
 * version 2, as on the upstream server.
 */
export const durableVersion: { readonly [T in SessionLogEvent["type"]]: number } = {
  "session.created": 1,
  "session.next.agent.switched": 1,
  "session.next.model.switched": 1,
  "session.next.moved": 1,
  "session.next.prompted": 1,
  "session.next.prompt.admitted": 1,
  "session.next.context.updated": 1,
  "session.next.synthetic": 1,
  "session.next.shell.started": 1,
  "session.next.shell.ended": 1,
  "session.next.step.started": 1,
  "session.next.step.ended": 2,
  "session.next.step.failed": 2,
  "session.next.text.started": 1,
  "session.next.text.ended": 1,
  "session.next.tool.input.started": 1,
  "session.next.tool.input.ended": 1,
  "session.next.tool.called": 1,
  "session.next.tool.progress": 1,
  "session.next.tool.success": 1,
  "session.next.tool.failed": 1,
  "session.next.reasoning.started": 1,
  "session.next.reasoning.ended": 1,
  "session.next.retried": 1,
  "session.next.compaction.started": 1,
  "session.next.compaction.ended": 1,
  "session.next.revert.staged": 1,
  "session.next.revert.cleared": 1,
  "session.next.revert.committed": 1,
  "session.next.title.updated": 1,
  "session.next.usage.recorded": 1
}

/**
 * One slice of a session's durable log (`GET .../history`): the events after `?after`, in seq
 * order, at most `?limit` of them. `hasMore` is true when the log continues past the last one.
 */
export const SessionHistory = Schema.Struct({
  data: Schema.Array(SessionDurableEvent),
  hasMore: Schema.Boolean
}).annotations({ identifier: "SessionHistory" })
export interface SessionHistory extends Schema.Schema.Type<typeof SessionHistory> {}
