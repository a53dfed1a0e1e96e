export * as SessionError from "./session-error.js"

import { Schema } from "effect"

/**
 * Why a step, a tool call or an assistant message failed, as recorded in history. The contract has
 * a single kind so far (`unknown`) whose `message` is meant for people, not for matching.
 */
export const SessionErrorUnknown = Schema.Struct({
  type: Schema.Literal("unknown"),
  message: Schema.String
}).annotations({ identifier: "SessionErrorUnknown" })
export interface SessionErrorUnknown extends Schema.Schema.Type<typeof SessionErrorUnknown> {}

/**
 * The provider failure that caused a retry: its message, whether it was judged retryable, and what
 * is known of the HTTP response (status, headers, body) plus string-valued details.
 */
export const SessionNextRetryError = Schema.Struct({
  message: Schema.String,
  statusCode: Schema.optional(Schema.Number),
  isRetryable: Schema.Boolean,
  responseHeaders: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  responseBody: Schema.optional(Schema.String),
  metadata: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
}).annotations({ identifier: "SessionNextRetry_error" })
export interface SessionNextRetryError extends Schema.Schema.Type<typeof SessionNextRetryError> {}

/**
 * A Step that was asked for a Structured Output (see `OutputFormat`) and did not produce one: the
 * model's calls of the `StructuredOutput` tool kept failing validation after `retries` retries, or it
 * finished without calling the tool. The upstream contract's component of this name (a V1
 * `{name, data}` error); on V2 step and assistant errors it is our extension (see `ContractExtension`).
 */
export const StructuredOutputError = Schema.Struct({
  name: Schema.Literal("StructuredOutputError"),
  data: Schema.Struct({
    message: Schema.String,
    retries: Schema.NonNegativeInt
  })
}).annotations({ identifier: "StructuredOutputError" })
export interface StructuredOutputError extends Schema.Schema.Type<typeof StructuredOutputError> {}

/**
 * Why a Step failed, as `session.next.step.failed` and the assistant message record it: the
 * contract's `SessionErrorUnknown`, or (our extension) a {@link StructuredOutputError}.
 */
export const SessionStepError = Schema.Union(SessionErrorUnknown, StructuredOutputError).annotations({
  identifier: "SessionStepError"
})
export type SessionStepError = typeof SessionStepError.Type

/** A Step error's text for people, whichever kind it is. */
export const messageOf = (error: SessionStepError): string => ("data" in error ? error.data.message : error.message)
