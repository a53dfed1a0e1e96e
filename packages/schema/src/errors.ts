export * as Errors from "./errors.js"

import { Schema } from "effect"
import { clip } from "./quote.js"

/**
 * The tagged failure payloads shared by the runtime and its clients. Each one is a plain tagged
 * record on the wire (`{_tag, message, ...ids}`); Protocol attaches the HTTP status.
 */
export class SessionNotFoundError extends Schema.TaggedError<SessionNotFoundError>()("SessionNotFoundError", {
  sessionID: Schema.String,
  message: Schema.String
}) {
  static of(sessionID: string): SessionNotFoundError {
    return new SessionNotFoundError({ sessionID, message: `Session not found: ${clip(sessionID)}` })
  }
}

export class MessageNotFoundError extends Schema.TaggedError<MessageNotFoundError>()("MessageNotFoundError", {
  sessionID: Schema.String,
  messageID: Schema.String,
  message: Schema.String
}) {}

/** A permission request that does not exist in the session, or is no longer pending. */
export class PermissionNotFoundError extends Schema.TaggedError<PermissionNotFoundError>()("PermissionNotFoundError", {
  requestID: Schema.String,
  message: Schema.String
}) {
  static of(requestID: string): PermissionNotFoundError {
    return new PermissionNotFoundError({ requestID, message: `Permission request not found: ${clip(requestID)}` })
  }
}

/** A question request that does not exist in the session, or is no longer pending. */
export class QuestionNotFoundError extends Schema.TaggedError<QuestionNotFoundError>()("QuestionNotFoundError", {
  requestID: Schema.String,
  message: Schema.String
}) {
  static of(requestID: string): QuestionNotFoundError {
    return new QuestionNotFoundError({ requestID, message: `Question request not found: ${clip(requestID)}` })
  }
}

/** A PTY that does not exist (never created, removed, or created for another Location). */
export class PtyNotFoundError extends Schema.TaggedError<PtyNotFoundError>()("PtyNotFoundError", {
  ptyID: Schema.String,
  message: Schema.String
}) {
  static of(ptyID: string): PtyNotFoundError {
    return new PtyNotFoundError({ ptyID, message: `PTY not found: ${clip(ptyID)}` })
  }
}

/** A credential that was understood and is refused (e.g. a PTY connect ticket that is spent or expired). */
export class ForbiddenError extends Schema.TaggedError<ForbiddenError>()("ForbiddenError", {
  message: Schema.String
}) {}

export class InvalidCursorError extends Schema.TaggedError<InvalidCursorError>()("InvalidCursorError", {
  message: Schema.String
}) {}

/** A request that could not be decoded: `kind` says which part failed, `field` names the path when known. */
export class InvalidRequestError extends Schema.TaggedError<InvalidRequestError>()("InvalidRequestError", {
  message: Schema.String,
  kind: Schema.optional(Schema.String),
  field: Schema.optional(Schema.String)
}) {}

export class ConflictError extends Schema.TaggedError<ConflictError>()("ConflictError", {
  message: Schema.String,
  resource: Schema.optional(Schema.String)
}) {}

export class UnauthorizedError extends Schema.TaggedError<UnauthorizedError>()("UnauthorizedError", {
  message: Schema.String
}) {}

/** An `/api` path that names no operation. */
export class RouteNotFoundError extends Schema.TaggedError<RouteNotFoundError>()("RouteNotFoundError", {
  method: Schema.String,
  path: Schema.String,
  message: Schema.String
}) {}

/**
 * A request that carries a body whose `Content-Type` is not `application/json` (parameters such as
 * `charset` aside); `contentType` is the type sent, absent when the request named none.
 */
export class UnsupportedMediaTypeError extends Schema.TaggedError<UnsupportedMediaTypeError>()(
  "UnsupportedMediaTypeError",
  {
    message: Schema.String,
    contentType: Schema.optional(Schema.String)
  }
) {}

/**
 * A request whose `Origin` header is neither the server's own origin nor one the server was told
 * to allow (`--cors`, `server.cors`); `origin` is the header as sent (at most 200 characters).
 */
export class ForbiddenOriginError extends Schema.TaggedError<ForbiddenOriginError>()("ForbiddenOriginError", {
  message: Schema.String,
  origin: Schema.String
}) {}

/**
 * A request to a loopback listener whose `Host` header names neither a loopback address nor
 * `localhost` with the listener's port (DNS rebinding); `host` is the header as sent (at most 200
 * characters), absent when there was none.
 */
export class ForbiddenHostError extends Schema.TaggedError<ForbiddenHostError>()("ForbiddenHostError", {
  message: Schema.String,
  host: Schema.optional(Schema.String)
}) {}

/**
 * A request body larger than the server accepts (`server.max_body`, 10 MiB by default): `limit` is
 * that size in bytes. Nothing of the request was acted on.
 */
export class PayloadTooLargeError extends Schema.TaggedError<PayloadTooLargeError>()("PayloadTooLargeError", {
  message: Schema.String,
  limit: Schema.Number
}) {}

/**
 * A path that names nothing inside the requested Location (`GET /api/fs/read/*`, `GET /api/fs/list`):
 * `path` is the path as the request gave it.
 */
export class PathNotFoundError extends Schema.TaggedError<PathNotFoundError>()("PathNotFoundError", {
  message: Schema.String,
  path: Schema.String
}) {}

/** A provider ID that names no configured provider. */
export class ProviderNotFoundError extends Schema.TaggedError<ProviderNotFoundError>()("ProviderNotFoundError", {
  providerID: Schema.String,
  message: Schema.String
}) {
  static of(providerID: string): ProviderNotFoundError {
    return new ProviderNotFoundError({ providerID, message: `Provider not found: ${clip(providerID)}` })
  }
}

/** A capability the server cannot serve right now; `service` names it when known. */
export class ServiceUnavailableError extends Schema.TaggedError<ServiceUnavailableError>()("ServiceUnavailableError", {
  message: Schema.String,
  service: Schema.optional(Schema.String)
}) {}

/**
 * A failure the server did not expect (a defect): answered as 500 with no internals. `ref` may name
 * the logged occurrence.
 */
export class UnknownError extends Schema.TaggedError<UnknownError>()("UnknownError", {
  message: Schema.String,
  ref: Schema.optional(Schema.String)
}) {}
