export * as RequestErrors from "./request-errors.js"

import {
  HttpApiBuilder,
  HttpApiError,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse,
  Multipart
} from "@effect/platform"
import { Config } from "@opencode-ai/core"
import { Api } from "@opencode-ai/protocol"
import { Errors, Quote } from "@opencode-ai/schema"
import { Cause, Context, Effect, Option } from "effect"
import { AuthorizationLive } from "./authorization.js"
import { BasicAuth } from "./basic-auth.js"
import { BodyLimit } from "./body-limit.js"
import { JsonBody } from "./json-body.js"
import { RequestOrigin } from "./request-origin.js"
import type { StreamToken } from "./stream-token.js"

const json = (status: number, body: unknown, headers?: Record<string, string>) =>
  HttpServerResponse.unsafeJson(body, { status, ...(headers ? { headers } : {}) })

// A key of the request is input too: a path names at most 200 characters of it.
const pathOf = (issue: HttpApiError.HttpApiDecodeError["issues"][number]): string =>
  Quote.clip(issue.path.map(String).join("."))

/** At most this many fields are described; the rest are counted. */
const maxFields = 10

/**
 * An issue's message with the offending value (`…, actual <value>`) cut to 200 characters, and the
 * schema's side to 400: the decoder quotes the whole value, however large.
 */
const bounded = (message: string): string => {
  const at = message.lastIndexOf(", actual ")
  if (at === -1) return Quote.clip(message, 400)
  return `${Quote.clip(message.slice(0, at), 400)}, actual ${Quote.clip(message.slice(at + ", actual ".length))}`
}

const fieldOf = (error: HttpApiError.HttpApiDecodeError): string | undefined => {
  const first = error.issues[0]
  return first && first.path.length > 0 ? pathOf(first) : undefined
}

/**
 * One line per offending field, e.g. `limit: Expected a number between 1 and 200, actual 1000`.
 * An optional field reports its "Expected undefined" alternative too; that adds nothing when the
 * field has a more specific complaint, so it is dropped.
 */
const describe = (error: HttpApiError.HttpApiDecodeError): string => {
  const byField = new Map<string, Array<string>>()
  for (const issue of error.issues) {
    const messages = byField.get(pathOf(issue)) ?? []
    const message = bounded(issue.message)
    if (!messages.includes(message)) messages.push(message)
    byField.set(pathOf(issue), messages)
  }
  const lines = [...byField].map(([field, messages]) => {
    const specific = messages.filter((m) => !m.startsWith("Expected undefined,"))
    return `${field === "" ? "request" : field}: ${(specific.length > 0 ? specific : messages).join(" or ")}`
  })
  const shown = lines.length > maxFields ? [...lines.slice(0, maxFields), `${lines.length - maxFields} more`] : lines
  return shown.length > 0 ? `Invalid request: ${shown.join("; ")}` : bounded(error.message)
}

/**
 * The contract's `InvalidRequestError` (400, `kind: "validation"`) for a request that does not decode,
 * naming its first offending field. The Location middleware reports an undecodable `location` query
 * with it, exactly as the request decoder's failure is reported below.
 */
export const invalidRequest = (error: HttpApiError.HttpApiDecodeError): Errors.InvalidRequestError => {
  const field = fieldOf(error)
  return new Errors.InvalidRequestError({
    message: describe(error),
    kind: "validation",
    ...(field !== undefined ? { field } : {})
  })
}

/**
 * Turns what the framework reports for a bad request into the contract's tagged JSON errors:
 * - a schema decode failure (path, query or body) → `InvalidRequestError` 400 (`kind: "validation"`);
 * - a body that is not JSON, or a multipart body that cannot be read → `InvalidRequestError` 400
 *   (`kind: "body"`);
 * - a path that names no operation → `RouteNotFoundError` 404.
 * Any other defect is logged and answered with a JSON 500 that carries no internals.
 */
// The app is typed `HttpApp.Default<never>`, but the router fails with untyped framework errors; what
// this does not translate is passed on unchanged for the API's error encoder.
const translate = (cause: Cause.Cause<never>) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure)) {
      const error: unknown = failure.value
      if (error instanceof HttpApiError.HttpApiDecodeError) return yield* invalidRequest(error)
      if (HttpServerError.isServerError(error) && error._tag === "RouteNotFound") {
        const path = Quote.clip(request.url.split("?")[0] ?? request.url)
        return json(
          404,
          new Errors.RouteNotFoundError({
            method: request.method,
            path,
            message: `No route for ${request.method} ${path}`
          })
        )
      }
      return yield* Effect.failCause(cause)
    }
    const defect = Cause.dieOption(cause)
    if (Option.isSome(defect)) {
      const error: unknown = defect.value
      if (HttpServerError.isServerError(error) && error._tag === "RequestError" && error.reason === "Decode") {
        return yield* new Errors.InvalidRequestError({ message: "The request body is not valid JSON", kind: "body" })
      }
      if (error instanceof Multipart.MultipartError) {
        return yield* new Errors.InvalidRequestError({
          message: `The multipart body cannot be read (${error.reason})`,
          kind: "body"
        })
      }
      yield* Effect.logError("unhandled failure while serving a request", cause)
      return json(500, { _tag: "UnknownError", message: "Internal server error" })
    }
    return yield* Effect.failCause(cause)
  })

/**
 * The API-wide middleware, for every route (including `/doc`, the event streams and unknown paths):
 * first the origin, host and CORS rules (`RequestOrigin.check`) and the JSON-only body rule
 * (`JsonBody.check`), then Basic auth (or a stream token on an event stream, see AuthorizationLive), then the body limit (`server.max_body`, see BodyLimit), then
 * the bad-request translation above.
 */
export const layer = HttpApiBuilder.middleware(
  Api.OpenCodeApi,
  Effect.map(
    Effect.all({
      auth: Effect.context<BasicAuth.Policy | StreamToken.Service>(),
      origins: RequestOrigin.Policy,
      config: Config.Service
    }),
    (policy) => {
      // No credentials configured: the auth check always passes (AuthorizationLive.open).
      const open = AuthorizationLive.open(Context.get(policy.auth, BasicAuth.Policy))
      return (app) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const refused = yield* RequestOrigin.check(policy.origins, request)
          if (Option.isSome(refused)) return refused.value
          const unsupported = JsonBody.check(request)
          if (Option.isSome(unsupported)) return unsupported.value
          const denied = open
            ? Option.none()
            : yield* AuthorizationLive.verify(request).pipe(Effect.provide(policy.auth), Effect.flip, Effect.option)
          if (Option.isSome(denied)) {
            return json(401, denied.value, { "www-authenticate": `Basic realm="opencode", charset="UTF-8"` })
          }
          return yield* BodyLimit.guard(app, policy.config.server.max_body ?? BodyLimit.defaultMaxBody)
        }).pipe(Effect.catchAllCause(translate))
    }
  )
)
