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
