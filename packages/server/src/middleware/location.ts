export * as LocationMiddleware from "./location.js"

import { HttpApiError, HttpApiMiddleware, HttpServerRequest } from "@effect/platform"
import { Locations } from "@opencode-ai/core"
import { ApiErrors, LocationGroup } from "@opencode-ai/protocol"
import type { Location } from "@opencode-ai/schema"
import { Context, Effect, Layer, Schema } from "effect"
import { RequestErrors } from "./request-errors.js"

/** The request's resolved Location, provided by {@link Key} to the handlers of Location-scoped endpoints. */
export class CurrentLocation extends Context.Tag("@opencode-ai/server/CurrentLocation")<
  CurrentLocation,
  Location.LocationInfo
>() {}

/**
 * The server's concrete Location middleware key. Protocol places it on exactly the endpoints that take
 * the `location` query (see `Api.make`); it resolves that query through Core's Locations and provides the
 * result as {@link CurrentLocation}. It fails with the contract's `InvalidRequestError` (400), the same
 * error a handler resolving the Location itself answered: a query that does not decode reports the
 * `location[...]` fields as the request decoder does, a directory or workspace that does not resolve
 * reports Locations' own error.
 */
export class Key extends HttpApiMiddleware.Tag<Key>()("@opencode-ai/server/Location", {
  provides: CurrentLocation,
  failure: ApiErrors.InvalidRequestError
}) {}

const decodeQuery = Schema.decodeUnknown(LocationGroup.LocationQuery)

/**
 * {@link Key}'s implementation. It runs after Authorization and before the endpoint decodes its own
 * path, query and body; resolution is not cached across requests beyond what Locations caches.
 */
export const layer = Layer.effect(
  Key,
  Effect.gen(function* () {
    const locations = yield* Locations.Service
    return Effect.gen(function* () {
      const params = yield* HttpServerRequest.ParsedSearchParams
      const query = yield* decodeQuery(params).pipe(
        Effect.catchTag("ParseError", (error) =>
          HttpApiError.HttpApiDecodeError.refailParseError(error).pipe(Effect.mapError(RequestErrors.invalidRequest))
        )
      )
      return yield* locations.resolve(query.location)
    })
  })
)
