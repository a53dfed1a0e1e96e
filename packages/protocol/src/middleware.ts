export * as Middleware from "./middleware.js"

import { HttpApiMiddleware } from "@effect/platform"
import type { Context } from "effect"
import { InvalidRequestError, UnauthorizedError } from "./errors.js"

/**
 * Guards every route. The server supplies the implementation (Basic auth when a password is
 * configured, a pass-through otherwise); clients never implement it.
 */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("@opencode-ai/protocol/Authorization", {
  failure: UnauthorizedError
}) {}

/**
 * What a Location middleware key must be: a middleware whose only failure is the contract's
 * `InvalidRequestError` (400), the error a bad `location` query answers. What it provides to handlers
 * (if anything) is the supplier's choice; Protocol only decides where it runs (see `Api.make`).
 */
export interface LocationKey extends Context.Tag<any, any> {
  new (
    _: never
  ): HttpApiMiddleware.HttpApiMiddleware.AnyId & {
    readonly [HttpApiMiddleware.TypeId]: { readonly failure: typeof InvalidRequestError.Type }
  }
  readonly [HttpApiMiddleware.TypeId]: HttpApiMiddleware.TypeId
  readonly failure: typeof InvalidRequestError
}

/**
 * The transport-only Location key: it provides nothing and is never implemented. Clients build the API
 * with it (`Api.OpenCodeApi`) so they share Protocol's endpoint construction without loading the
 * server's concrete key, which resolves the Location through Core.
 */
export class LocationTransport extends HttpApiMiddleware.Tag<LocationTransport>()(
  "@opencode-ai/protocol/LocationTransport",
  { failure: InvalidRequestError }
) {}
