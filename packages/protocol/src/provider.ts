export * as ProviderGroup from "./provider.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Errors, Location, Provider } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { documentLocationQuery, LocationQuery } from "./location.js"

/** `{location, data: ProviderV2Info[]}` */
export const ProvidersResponse = Schema.Struct({
  location: Location.LocationInfo,
  data: Schema.Array(Provider.ProviderV2Info)
})
export interface ProvidersResponse extends Schema.Schema.Type<typeof ProvidersResponse> {}

/** `{location, data: ProviderV2Info}` */
export const ProviderResponse = Schema.Struct({
  location: Location.LocationInfo,
  data: Provider.ProviderV2Info
})
export interface ProviderResponse extends Schema.Schema.Type<typeof ProviderResponse> {}

export const ProviderPath = Schema.Struct({ providerID: Schema.String })

/**
 * `GET /api/provider`: the configured providers, in config order; credentials are never included.
 * `location` is the resolved Location of the request (400 when its directory does not exist). 503
 * `ServiceUnavailableError` is part of the contract for a catalog that is not ready; this runtime
 * loads the catalog before it serves, so it does not answer it.
 */
export const list = HttpApiEndpoint.get("list", "/api/provider")
  .setUrlParams(LocationQuery)
  .addSuccess(ProvidersResponse)
  .addError(Errors.ServiceUnavailableError, { status: 503 })
  .annotate(OpenApi.Identifier, "v2.provider.list")
  .annotate(OpenApi.Summary, "List providers")
  .annotate(
    OpenApi.Description,
    "Every provider known for the requested Location, with how it is reached; providers that cannot be used here are listed as disabled."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/** `GET /api/provider/{providerID}`: one configured provider; 404 `ProviderNotFoundError` otherwise. */
export const get = HttpApiEndpoint.get("get", "/api/provider/:providerID")
  .setPath(ProviderPath)
  .setUrlParams(LocationQuery)
  .addSuccess(ProviderResponse)
  .addError(Errors.ProviderNotFoundError, { status: 404 })
  .addError(Errors.ServiceUnavailableError, { status: 503 })
  .annotate(OpenApi.Identifier, "v2.provider.get")
  .annotate(OpenApi.Summary, "Get a provider")
  .annotate(OpenApi.Description, "One provider by id, as in the list.")
  .annotate(OpenApi.Transform, documentLocationQuery)

export const group = HttpApiGroup.make("providers")
  .add(list)
  .add(get)
  .annotate(OpenApi.Title, "providers")
  .annotate(ClientProjection.Namespace, "providers")
