export * as AdmittedPrompt from "./admitted-prompt.js"

import { Schema } from "effect"
import { SessionID, SessionMessageID } from "./identifier.js"
import { Format as OutputFormat } from "./output-format.js"

/** The longest prompt text accepted, in characters (UTF-16 code units): 1 MiB. */
export const maxTextLength = 1024 * 1024

/**
 * The largest attachment accepted: 5 MiB. It bounds the length of an attachment's URI (a `data:`
 * URL carries its content inline) and, at admission, the size on disk of an attached file.
 */
export const maxAttachmentBytes = 5 * 1024 * 1024

/** The most file attachments one prompt may carry. */
export const maxAttachments = 20

/** The most bytes a prompt's file attachments may add up to (files on disk and `data:` URLs): 20 MiB. */
export const maxAttachmentTotalBytes = 20 * 1024 * 1024

/**
 * Where an attachment was mentioned in the prompt text: the character span `[start, end)` and the
 * text found there, so a client can render the mention in place.
 */
export const PromptSource = Schema.Struct({
  start: Schema.Number,
  end: Schema.Number,
  text: Schema.String
}).annotations({ identifier: "PromptSource" })
export interface PromptSource extends Schema.Schema.Type<typeof PromptSource> {}

/**
 * A file attached to a prompt as the client sends it: a URI and, optionally, a display name, a
 * description and its mention in the text. The media type is not required here; admission settles it.
 */
export const PromptInputFileAttachment = Schema.Struct({
  uri: Schema.String.pipe(
    Schema.maxLength(maxAttachmentBytes, {
      message: () => `An attachment URI is at most ${maxAttachmentBytes} characters`,
      description: `At most ${maxAttachmentBytes} characters (5 MiB); an attached file is at most ${maxAttachmentBytes} bytes`
    })
  ),
  name: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  source: Schema.optional(PromptSource)
}).annotations({ identifier: "PromptInputFileAttachment" })
export interface PromptInputFileAttachment extends Schema.Schema.Type<typeof PromptInputFileAttachment> {}

/** A file attached to an admitted prompt: as the input, plus the resolved media type (`mime`). */
export const PromptFileAttachment = Schema.Struct({
  uri: Schema.String,
  mime: Schema.String,
  name: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  source: Schema.optional(PromptSource)
}).annotations({ identifier: "PromptFileAttachment" })
export interface PromptFileAttachment extends Schema.Schema.Type<typeof PromptFileAttachment> {}

/** An agent mentioned in a prompt (`@name`), with where the mention sits in the text. */
export const PromptAgentAttachment = Schema.Struct({
  name: Schema.String,
  source: Schema.optional(PromptSource)
}).annotations({ identifier: "PromptAgentAttachment" })
export interface PromptAgentAttachment extends Schema.Schema.Type<typeof PromptAgentAttachment> {}

/**
 * A prompt's Output Format (our extension of the contract's prompt: upstream V2 prompts have none).
 * Absent means `text`. It is recorded with the prompt, so it survives a restart.
 */
const format = Schema.optional(OutputFormat).annotations({
  description:
    "Extension (not in the upstream V2 contract): how the final answer is given. `json_schema` asks for a " +
    "Structured Output validated against `schema`, recorded as the assistant message's `structured`; " +
    "absent means `text`"
})

/**
 * What a client submits as a prompt: the text, any file and agent attachments, and optionally an
 * Output Format (our extension).
 */
export const PromptInput = Schema.Struct({
  text: Schema.String.pipe(
    Schema.maxLength(maxTextLength, {
      message: () => `Prompt text is at most ${maxTextLength} characters`,
      description: `The prompt text: at most ${maxTextLength} characters (1 MiB)`
    })
  ),
  files: Schema.optional(Schema.Array(PromptInputFileAttachment)),
  agents: Schema.optional(Schema.Array(PromptAgentAttachment)),
  format
}).annotations({ identifier: "PromptInput" })
export interface PromptInput extends Schema.Schema.Type<typeof PromptInput> {}

/**
 * A prompt as admitted and recorded: the same as {@link PromptInput} except that every file
 * attachment has its media type resolved. This is what durable events and user messages carry.
 */
export const Prompt = Schema.Struct({
  text: Schema.String,
  files: Schema.optional(Schema.Array(PromptFileAttachment)),
  agents: Schema.optional(Schema.Array(PromptAgentAttachment)),
  format
}).annotations({ identifier: "Prompt" })
export interface Prompt extends Schema.Schema.Type<typeof Prompt> {}

/**
 * How an admitted prompt joins a running session. `steer` is promoted at the next Safe Step Boundary
 * and joins the next step of the current run; `queue` waits until the run would otherwise go idle,
 * and queued prompts are promoted one at a time.
 */
export const Delivery = Schema.Literal("steer", "queue")
export type Delivery = typeof Delivery.Type

/**
 * An Admitted Prompt: the answer to `POST /api/session/{sessionID}/prompt`. `id` is the user
 * message the prompt will become when promoted. `admittedSeq` is the session-log seq of its
 * `session.next.prompt.admitted` event; `promotedSeq` appears once it has been promoted (the seq of
 * its `session.next.prompted`). Admission is idempotent by `id`, so a retried request returns the
 * same record.
 */
export const SessionInputAdmitted = Schema.Struct({
  admittedSeq: Schema.NonNegativeInt,
  id: SessionMessageID,
  sessionID: SessionID,
  prompt: Prompt,
  delivery: Delivery,
  timeCreated: Schema.Number,
  promotedSeq: Schema.optional(Schema.NonNegativeInt)
}).annotations({ identifier: "SessionInputAdmitted" })
export interface SessionInputAdmitted extends Schema.Schema.Type<typeof SessionInputAdmitted> {}
