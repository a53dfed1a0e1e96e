export * as AuthorizationLive from "./authorization.js"

import { HttpServerRequest } from "@effect/platform"
import { Middleware, PtyGroup } from "@opencode-ai/protocol"
import { Effect, Layer, Option } from "effect"
import { BasicAuth } from "./basic-auth.js"
import { StreamToken } from "./stream-token.js"

/** The event stream routes, where a stream token may stand in for the `Authorization` header. */
const streamRoute = /^\/api\/(event|session\/[^/]+\/event)$/

/** The stream token of a `GET` to an event stream route, if the request carries one. */
const streamTokenOf = (request: HttpServerRequest.HttpServerRequest): Option.Option<string> => {
  if (request.method !== "GET") return Option.none()
  const url = new URL(request.url, "http://localhost")
  if (!streamRoute.test(url.pathname)) return Option.none()
  return Option.fromNullable(url.searchParams.get(StreamToken.parameter))
}

/**
 * Whether the request is a `GET` to a PTY's `connect` with a `ticket`: the connect handler then
 * spends the ticket before it upgrades (403 when it is not valid), so it stands in for credentials.
 */
const hasPtyTicket = (request: HttpServerRequest.HttpServerRequest): boolean => {
  if (request.method !== "GET") return false
  const url = new URL(request.url, "http://localhost")
  return PtyGroup.connectRoute.test(url.pathname) && url.searchParams.has(PtyGroup.ticketParameter)
}

/**
 * Whether a request may proceed: Basic auth under the server's policy, or, on the two event stream
 * routes (`GET`), a valid stream token (`?token=`, see StreamToken) instead of the header, or, on a
 * PTY's `connect`, a `ticket` (checked and spent by the handler, see PtyTickets). Anywhere else a
 * token or a ticket is ignored. Fails with `UnauthorizedError`.
 */
export const verify = Effect.fn("Authorization.verify")(function* (request: HttpServerRequest.HttpServerRequest) {
  if (hasPtyTicket(request)) return
  const token = streamTokenOf(request)
  if (Option.isSome(token)) {
    const tokens = yield* StreamToken.Service
    if (yield* tokens.verify(token.value)) return
  }
  yield* BasicAuth.verify(request.headers.authorization)
})

/** The concrete `Authorization` middleware of every API route: {@link verify}. */
export const layer = Layer.effect(
  Middleware.Authorization,
  Effect.gen(function* () {
    const context = yield* Effect.context<BasicAuth.Policy | StreamToken.Service>()
    return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      verify(request).pipe(Effect.provide(context))
    )
  })
)
