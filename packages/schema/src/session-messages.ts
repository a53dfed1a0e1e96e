export * as SessionMessages from "./session-messages.js"

import { Schema } from "effect"
import { PromptAgentAttachment, PromptFileAttachment } from "./admitted-prompt.js"
import { Token } from "./cursor.js"
import { FreeFormObject } from "./free-form.js"
import { SessionID, SessionMessageID } from "./identifier.js"
import { ModelRef } from "./model.js"
import { Format as OutputFormat } from "./output-format.js"
import { LLMProviderMetadata } from "./provider-metadata.js"
import { Tokens } from "./session.js"
import { SessionErrorUnknown, SessionStepError } from "./session-error.js"
import { LLMToolContent } from "./tool-content.js"

/*
 * Session Messages: the projection of a session's durable log into the conversation a client reads
 * (`GET .../message`, `.../message/{messageID}`) and the model is given (`GET .../context`). Every
 * message has an `id`, a creation time, a `type` that discriminates it, and an optional `metadata`
 * bag that producers may attach and the runtime passes through untouched.
 *
 *   user ─ prompted           assistant ─ one per step: text, reasoning and tool content
 *   system ─ instruction update   synthetic ─ runtime-written text the model sees as user input
 *   shell ─ a user-run command     agent-switched / model-switched ─ markers for a switch
 *   compaction ─ the summary that replaces older history
 */

const Created = Schema.Struct({ created: Schema.Number })
const CreatedCompleted = Schema.Struct({ created: Schema.Number, completed: Schema.optional(Schema.Number) })

// ── Tool call state ─────────────────────────────────────────────────────────────────────────────
//
//   pending ──► running ──► completed
//                  └──────► error
//
// `pending` holds the raw argument text still streaming; from `running` on, the parsed input object.

/** The model is still streaming the call's arguments; `input` is the raw text received so far. */
export const SessionMessageToolStatePending = Schema.Struct({
  status: Schema.Literal("pending"),
  input: Schema.String
}).annotations({ identifier: "SessionMessageToolStatePending" })
export interface SessionMessageToolStatePending extends Schema.Schema.Type<typeof SessionMessageToolStatePending> {}

/** The tool is executing; `structured` and `content` hold the latest progress it reported. */
export const SessionMessageToolStateRunning = Schema.Struct({
  status: Schema.Literal("running"),
  input: FreeFormObject,
  structured: FreeFormObject,
  content: Schema.Array(LLMToolContent)
}).annotations({ identifier: "SessionMessageToolStateRunning" })
export interface SessionMessageToolStateRunning extends Schema.Schema.Type<typeof SessionMessageToolStateRunning> {}

/**
 * The tool finished. `content` is what the model sees, `structured` the machine-readable output,
 * `outputPaths` any files where full output was stored, and `result` the tool's raw return value.
 */
export const SessionMessageToolStateCompleted = Schema.Struct({
  status: Schema.Literal("completed"),
  input: FreeFormObject,
  attachments: Schema.optional(Schema.Array(PromptFileAttachment)),
  content: Schema.Array(LLMToolContent),
  outputPaths: Schema.optional(Schema.Array(Schema.String)),
  structured: FreeFormObject,
  // The contract places no constraint on the raw result (`{}`), so any JSON value is accepted.
  result: Schema.optional(Schema.Unknown)
}).annotations({ identifier: "SessionMessageToolStateCompleted" })
export interface SessionMessageToolStateCompleted extends Schema.Schema.Type<typeof SessionMessageToolStateCompleted> {}

/** The tool failed or was interrupted; any output produced before the failure is kept. */
export const SessionMessageToolStateError = Schema.Struct({
  status: Schema.Literal("error"),
  input: FreeFormObject,
  content: Schema.Array(LLMToolContent),
  structured: FreeFormObject,
  error: SessionErrorUnknown,
  // Unconstrained in the contract (`{}`), like the completed state's result.
  result: Schema.optional(Schema.Unknown)
}).annotations({ identifier: "SessionMessageToolStateError" })
export interface SessionMessageToolStateError extends Schema.Schema.Type<typeof SessionMessageToolStateError> {}

export const SessionMessageToolState = Schema.Union(
  SessionMessageToolStatePending,
  SessionMessageToolStateRunning,
  SessionMessageToolStateCompleted,
  SessionMessageToolStateError
)
export type SessionMessageToolState = typeof SessionMessageToolState.Type

// ── Assistant content ───────────────────────────────────────────────────────────────────────────

/** A block of visible assistant text; `id` is the provider stream's text id. */
export const SessionMessageAssistantText = Schema.Struct({
  type: Schema.Literal("text"),
  id: Schema.String,
  text: Schema.String
}).annotations({ identifier: "SessionMessageAssistantText" })
export interface SessionMessageAssistantText extends Schema.Schema.Type<typeof SessionMessageAssistantText> {}

/** A block of model reasoning, with the Native Continuation Metadata needed to replay it natively. */
export const SessionMessageAssistantReasoning = Schema.Struct({
  type: Schema.Literal("reasoning"),
  id: Schema.String,
  text: Schema.String,
  providerMetadata: Schema.optional(LLMProviderMetadata),
  time: Schema.optional(CreatedCompleted)
}).annotations({ identifier: "SessionMessageAssistantReasoning" })
export interface SessionMessageAssistantReasoning extends Schema.Schema.Type<typeof SessionMessageAssistantReasoning> {}

/**
 * One tool call: `id` is the call id, `name` the tool. `provider.executed` is true when the provider
 * ran the tool itself. `time` records when the call was made, ran, settled and (if so) pruned from
 * the model context.
 */
export const SessionMessageAssistantTool = Schema.Struct({
  type: Schema.Literal("tool"),
  id: Schema.String,
  name: Schema.String,
  provider: Schema.optional(
    Schema.Struct({
      executed: Schema.Boolean,
      metadata: Schema.optional(LLMProviderMetadata),
      resultMetadata: Schema.optional(LLMProviderMetadata)
    })
  ),
  state: SessionMessageToolState,
  time: Schema.Struct({
    created: Schema.Number,
    ran: Schema.optional(Schema.Number),
    completed: Schema.optional(Schema.Number),
    pruned: Schema.optional(Schema.Number)
  })
}).annotations({ identifier: "SessionMessageAssistantTool" })
export interface SessionMessageAssistantTool extends Schema.Schema.Type<typeof SessionMessageAssistantTool> {}

export const SessionMessageAssistantContent = Schema.Union(
  SessionMessageAssistantText,
  SessionMessageAssistantReasoning,
  SessionMessageAssistantTool
)
export type SessionMessageAssistantContent = typeof SessionMessageAssistantContent.Type

// ── Messages ────────────────────────────────────────────────────────────────────────────────────

/** From here on the session runs with `agent`. */
export const SessionMessageAgentSwitched = Schema.Struct({
  id: SessionMessageID,
  metadata: Schema.optional(FreeFormObject),
  time: Created,
  type: Schema.Literal("agent-switched"),
  agent: Schema.String
}).annotations({ identifier: "SessionMessageAgentSwitched" })
export interface SessionMessageAgentSwitched extends Schema.Schema.Type<typeof SessionMessageAgentSwitched> {}

/** From here on the session runs with `model`. */
export const SessionMessageModelSwitched = Schema.Struct({
  id: SessionMessageID,
  metadata: Schema.optional(FreeFormObject),
  time: Created,
  type: Schema.Literal("model-switched"),
  model: ModelRef
}).annotations({ identifier: "SessionMessageModelSwitched" })
export interface SessionMessageModelSwitched extends Schema.Schema.Type<typeof SessionMessageModelSwitched> {}

/**
 * A promoted prompt: what the user said, with its resolved attachments and (our extension) the
 * prompt's Output Format when it named one.
 */
export const SessionMessageUser = Schema.Struct({
  id: SessionMessageID,
  metadata: Schema.optional(FreeFormObject),
  time: Created,
  text: Schema.String,
  files: Schema.optional(Schema.Array(PromptFileAttachment)),
  agents: Schema.optional(Schema.Array(PromptAgentAttachment)),
  format: Schema.optional(OutputFormat).annotations({
    description: "Extension (not in the upstream V2 contract): the Output Format the prompt asked for"
  }),
  type: Schema.Literal("user")
}).annotations({ identifier: "SessionMessageUser" })
export interface SessionMessageUser extends Schema.Schema.Type<typeof SessionMessageUser> {}

/** Text the runtime wrote into the conversation on the user's side (not typed by the user). */
export const SessionMessageSynthetic = Schema.Struct({
  id: SessionMessageID,
  metadata: Schema.optional(FreeFormObject),
  time: Created,
  sessionID: SessionID,
  text: Schema.String,
  type: Schema.Literal("synthetic")
}).annotations({ identifier: "SessionMessageSynthetic" })
export interface SessionMessageSynthetic extends Schema.Schema.Type<typeof SessionMessageSynthetic> {}

/** A chronological system message: an Instruction Update, at the point of history where it applied. */
export const SessionMessageSystem = Schema.Struct({
  id: SessionMessageID,
  metadata: Schema.optional(FreeFormObject),
  time: Created,
  type: Schema.Literal("system"),
  text: Schema.String
}).annotations({ identifier: "SessionMessageSystem" })
export interface SessionMessageSystem extends Schema.Schema.Type<typeof SessionMessageSystem> {}

/** A shell command the user ran in the session, and its output once it finished. */
export const SessionMessageShell = Schema.Struct({
  id: SessionMessageID,
  metadata: Schema.optional(FreeFormObject),
  time: CreatedCompleted,
  type: Schema.Literal("shell"),
  callID: Schema.String,
  command: Schema.String,
  output: Schema.String
}).annotations({ identifier: "SessionMessageShell" })
export interface SessionMessageShell extends Schema.Schema.Type<typeof SessionMessageShell> {}

/**
 * One Step's assistant turn: the agent and model that produced it and its content in stream order.
 * `finish`, `cost` and `tokens` appear once the step has ended; `error` once it has failed.
 * `snapshot` names the workspace snapshots before and after the step and the files it touched.
 * Our extensions: `structured` is the validated Structured Output (the input of the Step's successful
 * `StructuredOutput` call) when the prompt asked for one; `error` may be a `StructuredOutputError`
 * when it was not produced.
 */
export const SessionMessageAssistant = Schema.Struct({
  id: SessionMessageID,
  metadata: Schema.optional(FreeFormObject),
  time: CreatedCompleted,
  type: Schema.Literal("assistant"),
  agent: Schema.String,
  model: ModelRef,
  content: Schema.Array(SessionMessageAssistantContent),
  snapshot: Schema.optional(
    Schema.Struct({
      start: Schema.optional(Schema.String),
      end: Schema.optional(Schema.String),
      files: Schema.optional(Schema.Array(Schema.String))
    })
  ),
  finish: Schema.optional(Schema.String),
  cost: Schema.optional(Schema.Number),
  tokens: Schema.optional(Tokens),
  structured: Schema.optional(FreeFormObject).annotations({
    description:
      "Extension (not in the upstream V2 contract): the Structured Output, validated against the prompt's " +
      "`format.schema`"
  }),
  error: Schema.optional(SessionStepError)
}).annotations({ identifier: "SessionMessageAssistant" })
export interface SessionMessageAssistant extends Schema.Schema.Type<typeof SessionMessageAssistant> {}

/**
 * A compaction: `summary` replaces the history before it in the model context, and `recent` is the
 * tail that was kept verbatim. `reason` says whether it was triggered automatically or requested.
 */
export const SessionMessageCompaction = Schema.Struct({
  type: Schema.Literal("compaction"),
  reason: Schema.Literal("auto", "manual"),
  summary: Schema.String,
  recent: Schema.String,
  id: SessionMessageID,
  metadata: Schema.optional(FreeFormObject),
  time: Created
}).annotations({ identifier: "SessionMessageCompaction" })
export interface SessionMessageCompaction extends Schema.Schema.Type<typeof SessionMessageCompaction> {}

/** Any Session Message, discriminated by `type`. */
export const SessionMessage = Schema.Union(
  SessionMessageAgentSwitched,
  SessionMessageModelSwitched,
  SessionMessageUser,
  SessionMessageSynthetic,
  SessionMessageSystem,
  SessionMessageShell,
  SessionMessageAssistant,
  SessionMessageCompaction
).annotations({ identifier: "SessionMessage" })
export type SessionMessage = typeof SessionMessage.Type

/**
 * One Page of a session's messages (`GET .../message`): newest first unless `order=asc`, with opaque
 * cursors to the neighbouring pages when they exist.
 */
export const SessionMessagesResponse = Schema.Struct({
  data: Schema.Array(SessionMessage),
  cursor: Schema.Struct({
    previous: Schema.optional(Token),
    next: Schema.optional(Token)
  })
}).annotations({ identifier: "SessionMessagesResponse" })
export interface SessionMessagesResponse extends Schema.Schema.Type<typeof SessionMessagesResponse> {}
