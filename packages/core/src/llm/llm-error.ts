export * as LLMError from "./llm-error.js"

/**
 * The typed failures of an LLM stream. Each carries the `providerID` it happened with and a
 * human-readable `message`; `body` is the provider's response body (truncated) when there was one.
 *
 * Retrying is decided from the value alone (see `Retry.isRetryable`): `ProviderError` and
 * `TransportError` say so in `retryable`; overflow, auth and routing failures never are.
 */

import { Schema } from "effect"

/** The provider answered with an error (an HTTP status, or an error event inside the stream). */
export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", {
  providerID: Schema.String,
  message: Schema.String,
  /** The HTTP status, or the status-like code of an in-stream error when it has one. */
  status: Schema.optional(Schema.Number),
  retryable: Schema.Boolean,
  /** How long the provider asked us to wait (`retry-after-ms`, `retry-after` seconds or HTTP date). */
  retryAfterMs: Schema.optional(Schema.Number),
  /** The provider's error type or code, e.g. `rate_limit_exceeded`, `overloaded_error`. */
  code: Schema.optional(Schema.String),
  body: Schema.optional(Schema.String)
}) {}

/**
 * The prompt does not fit the model's context window (OpenAI `context_length_exceeded`, Anthropic
 * "prompt is too long", HTTP 413, and the phrasing of common compatible servers). Never retried as is:
 * the runner's answer is compaction.
 */
export class ContextOverflowError extends Schema.TaggedError<ContextOverflowError>()("ContextOverflowError", {
  providerID: Schema.String,
  message: Schema.String,
  status: Schema.optional(Schema.Number),
  body: Schema.optional(Schema.String)
}) {}

/** The provider rejected the credentials (HTTP 401/403, or an authentication/permission error event). */
export class ProviderAuthError extends Schema.TaggedError<ProviderAuthError>()("ProviderAuthError", {
  providerID: Schema.String,
  message: Schema.String,
  status: Schema.optional(Schema.Number),
  body: Schema.optional(Schema.String)
}) {}

/**
 * The exchange itself failed: the connection could not be made or broke, the body could not be read,
 * the stream ended before the provider said it was finished, or it carried something unparseable.
 */
export class TransportError extends Schema.TaggedError<TransportError>()("TransportError", {
  providerID: Schema.String,
  message: Schema.String,
  retryable: Schema.Boolean
}) {}

/** The request names a provider that is not configured. */
export class ProviderNotFoundError extends Schema.TaggedError<ProviderNotFoundError>()("ProviderNotFoundError", {
  providerID: Schema.String,
  message: Schema.String
}) {}

/** Any failure of an LLM stream. */
export const Any = Schema.Union(
  ProviderError,
  ContextOverflowError,
  ProviderAuthError,
  TransportError,
  ProviderNotFoundError
)
export type Any = ProviderError | ContextOverflowError | ProviderAuthError | TransportError | ProviderNotFoundError

/** A provider `npm` package that selects no wire protocol we speak. */
export class UnsupportedProtocolError extends Schema.TaggedError<UnsupportedProtocolError>()(
  "UnsupportedProtocolError",
  { npm: Schema.String, message: Schema.String }
) {}
