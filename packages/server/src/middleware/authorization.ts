export * as AuthorizationLive from "./authorization.js"

import { HttpServerRequest } from "@effect/platform"
import { Traced } from "@opencode-ai/core"
import { Middleware, PtyGroup } from "@opencode-ai/protocol"
import { Context, Effect, Layer, Option } from "effect"
import { BasicAuth } from "./basic-auth.js"
import { StreamToken } from "./stream-token.js"

/** The event stream routes, where a stream token may stand in for the `Authorization` header. */
const streamRoute = /^\/api\/(event|session\/[^/]+\/event)$/

/** The stream token of a `GET` to an event stream route (`url`: the request's), if it carries one. */
const streamTokenOf = (url: URL): Option.Option<string> =>
  streamRoute.test(url.pathname) ? Option.fromNullable(url.searchParams.get(StreamToken.parameter)) : Option.none()

/**
 * Whether the request (a `GET` to `url`) is to a PTY's `connect` with a `ticket`: the connect handler
 * then spends the ticket before it upgrades (403 when it is not valid), so it stands in for credentials.
 */
const hasPtyTicket = (url: URL): boolean =>
  PtyGroup.connectRoute.test(url.pathname) && url.searchParams.has(PtyGroup.ticketParameter)

/**
 * Whether a request may proceed: Basic auth under the server's policy, or, on the two event stream
 * routes (`GET`), a valid stream token (`?token=`, see StreamToken) instead of the header, or, on a
 * PTY's `connect`, a `ticket` (checked and spent by the handler, see PtyTickets). Anywhere else a
 * token or a ticket is ignored. Fails with `UnauthorizedError`.
 */
export const verify = Traced.fn("Authorization.verify")(function* (request: HttpServerRequest.HttpServerRequest) {
  // Only a `GET` may stand a ticket or a token in for the header; the URL is parsed once, for both.
  const url = request.method === "GET" ? new URL(request.url, "http://localhost") : undefined
  if (url !== undefined && hasPtyTicket(url)) return
  const token = url === undefined ? Option.none() : streamTokenOf(url)
  if (Option.isSome(token)) {
    const tokens = yield* StreamToken.Service
    if (yield* tokens.verify(token.value)) return
  }
  yield* BasicAuth.verify(request.headers.authorization)
})

/**
 * Whether {@link verify} lets every request through under `policy`: with no credentials configured
 * it always succeeds (a token or a ticket is only ever an alternative to the header, and neither is
 * spent by the check), so the hot path skips it. Never true when a password is set.
 */
export const open = (policy: Option.Option<BasicAuth.Credentials>): boolean => Option.isNone(policy)

/** The concrete `Authorization` middleware of every API route: {@link verify}. */
export const layer = Layer.effect(
  Middleware.Authorization,
  Effect.gen(function* () {
    const context = yield* Effect.context<BasicAuth.Policy | StreamToken.Service>()
    // No credentials configured: every request passes (see `open`), with no per-request work.
    if (open(Context.get(context, BasicAuth.Policy))) return Effect.void
    return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      verify(request).pipe(Effect.provide(context))
    )
  })
)
