export * as NativeContinuation from "./native-continuation.js"

/**
 * Native Continuation Metadata: opaque, protocol-shaped data attached to assistant content that a
 * compatible model needs to continue that content natively (an Anthropic thinking signature, the
 * payload of a redacted thinking block, ...).
 *
 * It is keyed by protocol namespace (`{ anthropic: { signature: "…" } }`), matching the reference
 * contract's `providerMetadata` shape, so durable history can store it verbatim. Only the adapter of
 * that namespace interprets its entry; everything else carries it untouched.
 *
 * It rides on reasoning (`LLMEvent.ReasoningEnd`, `LLMRequest.ReasoningPart`) and, for protocols that
 * sign tool calls (Gemini's `thoughtSignature` on a `functionCall` part), on tool calls
 * (`LLMEvent.ToolCall`, `LLMRequest.ToolCallPart`; durably the call's `provider.metadata`).
 */

import { Schema } from "effect"

export const Metadata = Schema.Record({
  key: Schema.String,
  value: Schema.Record({ key: Schema.String, value: Schema.Unknown })
}).annotations({ identifier: "NativeContinuationMetadata" })
export type Metadata = typeof Metadata.Type

/** The namespace of the Anthropic Messages adapter. */
export const anthropic = "anthropic"

/** The Anthropic thinking signature carried by `metadata`, if any. */
export const anthropicSignature = (metadata: Metadata | undefined): string | undefined => {
  const value = metadata?.[anthropic]?.signature
  return typeof value === "string" && value !== "" ? value : undefined
}

/** The encrypted payload of an Anthropic `redacted_thinking` block carried by `metadata`, if any. */
export const anthropicRedactedData = (metadata: Metadata | undefined): string | undefined => {
  const value = metadata?.[anthropic]?.redactedData
  return typeof value === "string" && value !== "" ? value : undefined
}

/** The namespace of the Gemini adapter. */
export const google = "google"

/**
 * The Gemini `thoughtSignature` carried by `metadata`, if any: on reasoning, the signature of the
 * thought (or signature-only) part it came from; on a tool call, the signature of its `functionCall`
 * part.
 */
export const googleThoughtSignature = (metadata: Metadata | undefined): string | undefined => {
  const value = metadata?.[google]?.thoughtSignature
  return typeof value === "string" && value !== "" ? value : undefined
}
