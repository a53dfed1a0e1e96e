export * as ApiErrors from "./errors.js"

import { HttpApiSchema } from "@effect/platform"
import { Errors } from "@opencode-ai/schema"

/** The HTTP status of each tagged failure the API can return. */
export const status = {
  InvalidRequestError: 400,
  InvalidCursorError: 400,
  UnauthorizedError: 401,
  ForbiddenOriginError: 403,
  ForbiddenHostError: 403,
  ForbiddenError: 403,
  SessionNotFoundError: 404,
  MessageNotFoundError: 404,
  PermissionNotFoundError: 404,
  ProviderNotFoundError: 404,
  PathNotFoundError: 404,
  PtyNotFoundError: 404,
  RouteNotFoundError: 404,
  ConflictError: 409,
  UnsupportedMediaTypeError: 415,
  PayloadTooLargeError: 413,
  UnknownError: 500,
  ServiceUnavailableError: 503
} as const

export const InvalidRequestError = Errors.InvalidRequestError.annotations(
  HttpApiSchema.annotations({ status: status.InvalidRequestError })
)
export const UnauthorizedError = Errors.UnauthorizedError.annotations(
  HttpApiSchema.annotations({ status: status.UnauthorizedError })
)
