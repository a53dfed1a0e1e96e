export * as RequestErrors from "./request-errors.js"

import { HttpApiBuilder, HttpApiError, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Api } from "@opencode-ai/protocol"
import { Errors } from "@opencode-ai/schema"
import { Cause, Effect, Option } from "effect"
import { BasicAuth } from "./basic-auth.js"
import { JsonBody } from "./json-body.js"
import { RequestOrigin } from "./request-origin.js"

const json = (status: number, body: unknown, headers?: Record<string, string>) =>
  HttpServerResponse.unsafeJson(body, { status, ...(headers ? { headers } : {}) })

const pathOf = (issue: HttpApiError.HttpApiDecodeError["issues"][number]): string => issue.path.map(String).join(".")

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
    if (!messages.includes(issue.message)) messages.push(issue.message)
    byField.set(pathOf(issue), messages)
  }
  const lines = [...byField].map(([field, messages]) => {
    const specific = messages.filter((m) => !m.startsWith("Expected undefined,"))
    return `${field === "" ? "request" : field}: ${(specific.length > 0 ? specific : messages).join(" or ")}`
  })
  return lines.length > 0 ? `Invalid request: ${lines.join("; ")}` : error.message
}

/**
 * Turns what the framework reports for a bad request into the contract's tagged JSON errors:
 * - a schema decode failure (path, query or body) → `InvalidRequestError` 400 (`kind: "validation"`);
 * - a body that is not JSON → `InvalidRequestError` 400 (`kind: "body"`);
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
      if (error instanceof HttpApiError.HttpApiDecodeError) {
        const field = fieldOf(error)
        return yield* new Errors.InvalidRequestError({
          message: describe(error),
          kind: "validation",
          ...(field !== undefined ? { field } : {})
        })
      }
      if (HttpServerError.isServerError(error) && error._tag === "RouteNotFound") {
        const path = request.url.split("?")[0] ?? request.url
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
      yield* Effect.logError("Unhandled failure while serving a request", cause)
      return json(500, { _tag: "UnknownError", message: "Internal server error" })
    }
    return yield* Effect.failCause(cause)
  })

/**
 * The API-wide middleware, for every route (including `/doc`, the event streams and unknown paths):
 * first the origin, host and CORS rules (`RequestOrigin.check`) and the JSON-only body rule
 * (`JsonBody.check`), then Basic auth, then the bad-request translation above.
 */
export const layer = HttpApiBuilder.middleware(
  Api.OpenCodeApi,
  Effect.map(
    Effect.all({ auth: BasicAuth.Policy, origins: RequestOrigin.Policy }),
    (policy) => (app) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const refused = yield* RequestOrigin.check(policy.origins, request)
        if (Option.isSome(refused)) return refused.value
        const unsupported = JsonBody.check(request)
        if (Option.isSome(unsupported)) return unsupported.value
        const denied = yield* BasicAuth.verify(request.headers.authorization).pipe(
          Effect.provideService(BasicAuth.Policy, policy.auth),
          Effect.flip,
          Effect.option
        )
        if (Option.isSome(denied)) {
          return json(401, denied.value, { "www-authenticate": `Basic realm="opencode", charset="UTF-8"` })
        }
        return yield* app
      }).pipe(Effect.catchAllCause(translate))
  )
)
