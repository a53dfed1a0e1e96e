export * as LLMRequest from "./llm-request.js"

/**
 * The provider-neutral request for one Physical Attempt: everything a protocol adapter needs to put
 * one provider call on the wire, and nothing about any particular wire.
 *
 * The runner assembles it: the ONE system text (agent prompt, Instruction Baseline, …, joined in the
 * order it wants them sent), the projected Session History as {@link Message}s in chronological order
 * (Instruction Updates included where they were admitted), the tool definitions, the Generation
 * Controls, the Model Request Options, the compatibility body fields and the extra headers
 * (`x-session-id`, …). Adapters never reorder the system text or the history, except that tool
 * results are put in the order of the calls they answer (see {@link ToolMessage}).
 */

import { Schema } from "effect"
import * as ModelRequestOptions from "./model-request-options.js"
import * as NativeContinuation from "./native-continuation.js"

/** The model a request is for: the provider's id in the catalog and the model's id on its wire. */
export const ModelRef = Schema.Struct({ providerID: Schema.String, modelID: Schema.String }).annotations({
  identifier: "LLMModelRef"
})
export interface ModelRef extends Schema.Schema.Type<typeof ModelRef> {}

/** A JSON object (a tool's input, a JSON Schema, a provider-option namespace). */
export const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })
export type JsonObject = typeof JsonObject.Type

export const TextPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
export interface TextPart extends Schema.Schema.Type<typeof TextPart> {}

/**
 * A file the model reads natively (an image or a PDF): its media type and its content as a `data:`
 * URL (base64), or an `http(s):` URL the provider fetches itself. The runner only puts one here when
 * the model's catalog entry accepts that input (see `PromptFiles`); adapters send it in their
 * protocol's own shape (OpenAI-compatible `image_url` / `file` parts, Anthropic `image` / `document`
 * blocks, Gemini `inlineData` / `fileData` parts) and never read files themselves.
 */
export const FilePart = Schema.Struct({
  type: Schema.Literal("file"),
  mime: Schema.String,
  url: Schema.String,
  name: Schema.optional(Schema.String)
})
export interface FilePart extends Schema.Schema.Type<typeof FilePart> {}

/** What a user turn carries: text, and files the model reads natively. */
export const UserPart = Schema.Union(TextPart, FilePart)
export type UserPart = TextPart | FilePart

/**
 * Reasoning the assistant produced. `metadata` is its Native Continuation Metadata as streamed.
 *
 * `replayable` is the runner's decision that this reasoning may be continued natively: the step that
 * produced it succeeded and the request goes to the exact same provider and model. Only then does an
 * adapter send the native form (e.g. an Anthropic `thinking` block with its signature). Otherwise the
 * metadata is ignored and non-empty visible reasoning is lowered to ordinary assistant text.
 */
export const ReasoningPart = Schema.Struct({
  type: Schema.Literal("reasoning"),
  text: Schema.String,
  metadata: Schema.optional(NativeContinuation.Metadata),
  replayable: Schema.optional(Schema.Boolean)
})
export interface ReasoningPart extends Schema.Schema.Type<typeof ReasoningPart> {}

/**
 * A tool call the assistant made: the provider's call id, the tool name and the decoded input.
 *
 * `metadata` is the call's Native Continuation Metadata as streamed (`LLMEvent.ToolCall.metadata`,
 * e.g. a Gemini `thoughtSignature`), and `replayable` the runner's decision, made as for
 * {@link ReasoningPart}: only when it is true does an adapter send the metadata back.
 */
export const ToolCallPart = Schema.Struct({
  type: Schema.Literal("tool-call"),
  id: Schema.String,
  name: Schema.String,
  input: JsonObject,
  metadata: Schema.optional(NativeContinuation.Metadata),
  replayable: Schema.optional(Schema.Boolean)
})
export interface ToolCallPart extends Schema.Schema.Type<typeof ToolCallPart> {}

/**
 * The settled result of one tool call, as the model will read it (already bounded by the registry).
 * `files` are the files the tool returned for the model to see (e.g. an image `read` opened), when
 * the model accepts them; a protocol whose tool results cannot carry files sends them in a user turn
 * right after the results.
 */
export const ToolResultPart = Schema.Struct({
  type: Schema.Literal("tool-result"),
  callID: Schema.String,
  name: Schema.String,
  output: Schema.String,
  isError: Schema.Boolean,
  files: Schema.optional(Schema.Array(FilePart))
})
export interface ToolResultPart extends Schema.Schema.Type<typeof ToolResultPart> {}

export const UserMessage = Schema.Struct({ role: Schema.Literal("user"), content: Schema.Array(UserPart) })
export interface UserMessage extends Schema.Schema.Type<typeof UserMessage> {}

export const AssistantPart = Schema.Union(TextPart, ReasoningPart, ToolCallPart)
export type AssistantPart = TextPart | ReasoningPart | ToolCallPart

/** One assistant step's output, parts in the order they were streamed. */
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: Schema.Array(AssistantPart)
})
export interface AssistantMessage extends Schema.Schema.Type<typeof AssistantMessage> {}

/**
 * The results of the tool calls of the preceding assistant message. Adapters send them in the order of
 * those calls, whatever order they settled in.
 */
export const ToolMessage = Schema.Struct({ role: Schema.Literal("tool"), content: Schema.Array(ToolResultPart) })
export interface ToolMessage extends Schema.Schema.Type<typeof ToolMessage> {}

/**
 * An Instruction Update at its chronological position: the exact combined text persisted by
 * `session.instructions.updated`. No supported protocol has a mid-conversation instruction role,
 * so adapters lower it to a wrapped block in the next user turn (see `InstructionLowering`).
 */
export const InstructionUpdate = Schema.Struct({ role: Schema.Literal("instruction-update"), text: Schema.String })
export interface InstructionUpdate extends Schema.Schema.Type<typeof InstructionUpdate> {}

export const Message = Schema.Union(UserMessage, AssistantMessage, ToolMessage, InstructionUpdate)
export type Message = UserMessage | AssistantMessage | ToolMessage | InstructionUpdate

/** A tool the model may call: `inputSchema` is a JSON Schema object. */
export const Tool = Schema.Struct({ name: Schema.String, description: Schema.String, inputSchema: JsonObject })
export interface Tool extends Schema.Schema.Type<typeof Tool> {}

/** `auto` (default), `none`, `required` (some tool), or one named tool. */
export const ToolChoice = Schema.Union(
  Schema.Literal("auto", "none", "required"),
  Schema.Struct({ type: Schema.Literal("tool"), name: Schema.String })
)
export type ToolChoice = typeof ToolChoice.Type

/**
 * Generation Controls: provider-neutral sampling and output controls. Omitted means provider default.
 * `maxOutputTokens` bounds everything the model writes in the request, reasoning included where the
 * provider counts it there (Anthropic's `max_tokens`). `stopSequences` end the output when produced.
 * An adapter leaves out what its protocol cannot say (see each adapter's module comment).
 */
export const Generation = Schema.Struct({
  maxOutputTokens: Schema.optional(Schema.Number),
  temperature: Schema.optional(Schema.Number),
  topP: Schema.optional(Schema.Number),
  topK: Schema.optional(Schema.Number),
  presencePenalty: Schema.optional(Schema.Number),
  frequencyPenalty: Schema.optional(Schema.Number),
  stopSequences: Schema.optional(Schema.Array(Schema.String)),
  seed: Schema.optional(Schema.Number)
})
export interface Generation extends Schema.Schema.Type<typeof Generation> {}

/**
 * Compatibility body fields, by protocol id: protocol id → wire fields. The adapter of that protocol
 * merges its entry into the request body as given, after its own fields (so a field here wins over
 * the adapter's encoding of the same name), except the ones it owns: `model`, `messages`/`system`,
 * `tools`, `tool_choice`, `stream`, `stream_options` (Gemini: `contents`, `systemInstruction`,
 * `tools`, `toolConfig`). Other entries are ignored. Keys: `"openai-compatible"`, `"anthropic"`,
 * `"google"` (whose `generationConfig` is merged into the adapter's own rather than replacing it).
 * The runner puts here the request options it does not recognise (see `RequestOptions` in config),
 * under the selected provider's protocol.
 */
export const ProviderOptions = Schema.Record({ key: Schema.String, value: JsonObject })
export type ProviderOptions = typeof ProviderOptions.Type

export const Request = Schema.Struct({
  model: ModelRef,
  /** The one system text, sent first and unchanged. Empty means no system message. */
  system: Schema.String,
  messages: Schema.Array(Message),
  tools: Schema.optional(Schema.Array(Tool)),
  toolChoice: Schema.optional(ToolChoice),
  generation: Schema.optional(Generation),
  /** Model Request Options: provider-semantic, encoded (or left out) by the protocol adapter alone. */
  options: Schema.optional(ModelRequestOptions.Options),
  providerOptions: Schema.optional(ProviderOptions),
  /** Extra request headers, e.g. `x-session-id` and `x-session-affinity`; they win over adapter defaults. */
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
}).annotations({ identifier: "LLMRequest" })
export interface Request extends Schema.Schema.Type<typeof Request> {}

// ---------------------------------------------------------------------------------------------------
// Constructors (plain values; they exist so call sites read well)

export const text = (text: string): TextPart => ({ type: "text", text })

export const user = (...texts: ReadonlyArray<string>): UserMessage => ({ role: "user", content: texts.map(text) })

export const file = (mime: string, url: string, name?: string): FilePart => ({
  type: "file",
  mime,
  url,
  ...(name === undefined ? {} : { name })
})

export const assistant = (...content: ReadonlyArray<AssistantPart>): AssistantMessage => ({
  role: "assistant",
  content
})

export const reasoning = (
  text: string,
  options: { readonly metadata?: NativeContinuation.Metadata; readonly replayable?: boolean } = {}
): ReasoningPart => ({ type: "reasoning", text, ...options })

export const toolCall = (
  id: string,
  name: string,
  input: JsonObject,
  options: { readonly metadata?: NativeContinuation.Metadata; readonly replayable?: boolean } = {}
): ToolCallPart => ({ type: "tool-call", id, name, input, ...options })

export const toolResult = (
  callID: string,
  name: string,
  output: string,
  options: { readonly isError?: boolean; readonly files?: ReadonlyArray<FilePart> } = {}
): ToolResultPart => ({
  type: "tool-result",
  callID,
  name,
  output,
  isError: options.isError ?? false,
  ...(options.files === undefined || options.files.length === 0 ? {} : { files: options.files })
})

export const tool = (...content: ReadonlyArray<ToolResultPart>): ToolMessage => ({ role: "tool", content })

export const instructionUpdate = (text: string): InstructionUpdate => ({ role: "instruction-update", text })

/**
 * The results of `message` in the order of the calls of `calls` (the assistant message they answer),
 * whatever order they settled in. Results for call ids not found there keep their given order, after
 * the others.
 */
export const resultsInCallOrder = (
  message: ToolMessage,
  calls: AssistantMessage | undefined
): ReadonlyArray<ToolResultPart> => {
  const ids = calls === undefined ? [] : calls.content.flatMap((part) => (part.type === "tool-call" ? [part.id] : []))
  const position = (result: ToolResultPart) => {
    const index = ids.indexOf(result.callID)
    return index === -1 ? Number.MAX_SAFE_INTEGER : index
  }
  // Array.prototype.sort is stable: equal positions keep their given order.
  return [...message.content].sort((a, b) => position(a) - position(b))
}
