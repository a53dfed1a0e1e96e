export * as ModelGroup from "./model.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Errors, Location, ModelInfo } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { documentLocationQuery, LocationQuery } from "./location.js"

/** `{location, data: ModelV2Info[]}` */
export const ModelsResponse = Schema.Struct({
  location: Location.LocationInfo,
  data: Schema.Array(ModelInfo.ModelV2Info)
})
export interface ModelsResponse extends Schema.Schema.Type<typeof ModelsResponse> {}

/**
 * `GET /api/model`: every model of every configured provider, in config order. `location` is the
 * resolved Location of the request (400 when its directory does not exist). 503
 * `ServiceUnavailableError` is part of the contract for a catalog that is not ready; this runtime
 * loads the catalog before it serves, so it does not answer it.
 */
export const list = HttpApiEndpoint.get("list", "/api/model")
  .setUrlParams(LocationQuery)
  .addSuccess(ModelsResponse)
  .addError(Errors.ServiceUnavailableError, { status: 503 })
  .annotate(OpenApi.Identifier, "v2.model.list")
  .annotate(OpenApi.Summary, "List models")
  .annotate(
    OpenApi.Description,
    "Every model of every available provider for the requested Location: identity, how it is reached, capabilities, limits, prices, variants and status."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

export const group = HttpApiGroup.make("models")
  .add(list)
  .annotate(OpenApi.Title, "models")
  .annotate(ClientProjection.Namespace, "models")
