export * as LLMEvent from "./llm-event.js"

/**
 * The provider-neutral stream of one Physical Attempt.
 *
 * Ordering guarantees every adapter keeps:
 * - content blocks are bracketed: `*-start`, any `*-delta`s, `*-end`, with a stable `id` unique within
 *   the stream; `text-end` / `reasoning-end` / `tool-input-end` carry the full accumulated value, so a
 *   consumer that only persists `*.ended` never has to accumulate deltas itself;
 * - text and reasoning blocks never overlap each other; tool input blocks may follow them;
 * - every `tool-input-end` is followed by exactly one `tool-call` with the same id;
 * - a successful stream ends with at most one `usage` and then exactly one `finish`, which is the
 *   last event. A stream that fails (an `LLMError`) emits no `finish`;
 *   blocks still open at that point are simply never ended.
 */

import { Session } from "@opencode-ai/schema"
import { Schema } from "effect"
import { JsonObject } from "./llm-request.js"
import * as NativeContinuation from "./native-continuation.js"

export const TextStart = Schema.Struct({ type: Schema.Literal("text-start"), id: Schema.String })
export interface TextStart extends Schema.Schema.Type<typeof TextStart> {}
export const TextDelta = Schema.Struct({ type: Schema.Literal("text-delta"), id: Schema.String, delta: Schema.String })
export interface TextDelta extends Schema.Schema.Type<typeof TextDelta> {}
export const TextEnd = Schema.Struct({ type: Schema.Literal("text-end"), id: Schema.String, text: Schema.String })
export interface TextEnd extends Schema.Schema.Type<typeof TextEnd> {}

export const ReasoningStart = Schema.Struct({ type: Schema.Literal("reasoning-start"), id: Schema.String })
export interface ReasoningStart extends Schema.Schema.Type<typeof ReasoningStart> {}
export const ReasoningDelta = Schema.Struct({
  type: Schema.Literal("reasoning-delta"),
  id: Schema.String,
  delta: Schema.String
})
export interface ReasoningDelta extends Schema.Schema.Type<typeof ReasoningDelta> {}
/**
 * The end of a reasoning block with its full visible text (empty for redacted reasoning) and its
 * Native Continuation Metadata, when the protocol has any (Anthropic: `{anthropic: {signature}}` or
 * `{anthropic: {redactedData}}`). Persist the metadata with the reasoning; send it back only through
 * a replayable `LLMRequest.ReasoningPart`.
 */
export const ReasoningEnd = Schema.Struct({
  type: Schema.Literal("reasoning-end"),
  id: Schema.String,
  text: Schema.String,
  metadata: Schema.optional(NativeContinuation.Metadata)
})
export interface ReasoningEnd extends Schema.Schema.Type<typeof ReasoningEnd> {}

/** A tool call begins: `id` is the provider's call id (also the id of the following input events). */
export const ToolInputStart = Schema.Struct({
  type: Schema.Literal("tool-input-start"),
  id: Schema.String,
  name: Schema.String
})
export interface ToolInputStart extends Schema.Schema.Type<typeof ToolInputStart> {}
export const ToolInputDelta = Schema.Struct({
  type: Schema.Literal("tool-input-delta"),
  id: Schema.String,
  delta: Schema.String
})
export interface ToolInputDelta extends Schema.Schema.Type<typeof ToolInputDelta> {}
/** The raw input text as streamed (JSON, when the model behaved). */
export const ToolInputEnd = Schema.Struct({
  type: Schema.Literal("tool-input-end"),
  id: Schema.String,
  text: Schema.String
})
export interface ToolInputEnd extends Schema.Schema.Type<typeof ToolInputEnd> {}

/**
 * A complete tool call. `inputText` is the raw streamed input. When it is empty, `input` is `{}`.
 * When it is not a JSON object, `input` is `{}` and `inputError` says why: the call is still reported
 * (the model did make it, and its call id must be answered), and the runner should settle it as a
 * failed tool call quoting `inputError`, so the model can correct itself on the next step.
 *
 * `metadata` is the call's own Native Continuation Metadata, for protocols that sign calls (Gemini:
 * `{google: {thoughtSignature}}` from its `functionCall` part). Persist it with the call; send it
 * back only through a replayable `LLMRequest.ToolCallPart`.
 */
export const ToolCall = Schema.Struct({
  type: Schema.Literal("tool-call"),
  id: Schema.String,
  name: Schema.String,
  input: JsonObject,
  inputText: Schema.String,
  inputError: Schema.optional(Schema.String),
  metadata: Schema.optional(NativeContinuation.Metadata)
})
export interface ToolCall extends Schema.Schema.Type<typeof ToolCall> {}

/**
 * Token usage of the whole attempt, as disjoint counts (so they add up to what was billed):
 * - `input`: prompt tokens that were neither read from nor written to the provider cache;
 * - `cache.read` / `cache.write`: prompt tokens read from / written to the cache;
 * - `output`: generated tokens other than reasoning;
 * - `reasoning`: generated reasoning tokens, when the provider reports them separately (Anthropic
 *   does not: its thinking tokens are in `output`).
 */
export const Usage = Schema.Struct({ type: Schema.Literal("usage"), tokens: Session.Tokens })
export interface Usage extends Schema.Schema.Type<typeof Usage> {}

export const FinishReason = Schema.Literal("stop", "length", "tool-calls", "content-filter", "other")
export type FinishReason = typeof FinishReason.Type

/**
 * The provider finished the response. `raw` is the provider's own reason when it sent one. When the
 * stream contained tool calls and the provider said merely "stop" (several OpenAI-compatible servers
 * do), the reason is `tool-calls`.
 */
export const Finish = Schema.Struct({
  type: Schema.Literal("finish"),
  reason: FinishReason,
  raw: Schema.optional(Schema.String)
})
export interface Finish extends Schema.Schema.Type<typeof Finish> {}

export const Event = Schema.Union(
  TextStart,
  TextDelta,
  TextEnd,
  ReasoningStart,
  ReasoningDelta,
  ReasoningEnd,
  ToolInputStart,
  ToolInputDelta,
  ToolInputEnd,
  ToolCall,
  Usage,
  Finish
).annotations({ identifier: "LLMEvent" })
export type Event =
  | TextStart
  | TextDelta
  | TextEnd
  | ReasoningStart
  | ReasoningDelta
  | ReasoningEnd
  | ToolInputStart
  | ToolInputDelta
  | ToolInputEnd
  | ToolCall
  | Usage
  | Finish

/**
 * Parses raw tool input text into a {@link ToolCall}: empty → `{}`; a JSON object → itself; anything
 * else → `{}` with `inputError`.
 */
export const toolCall = (id: string, name: string, inputText: string): ToolCall => {
  if (inputText.trim() === "") return { type: "tool-call", id, name, input: {}, inputText }
  let parsed: unknown
  try {
    parsed = JSON.parse(inputText)
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    return {
      type: "tool-call",
      id,
      name,
      input: {},
      inputText,
      inputError: `The tool input is not valid JSON: ${reason}`
    }
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return { type: "tool-call", id, name, input: {}, inputText, inputError: "The tool input is not a JSON object" }
  }
  return { type: "tool-call", id, name, input: parsed as JsonObject, inputText }
}
