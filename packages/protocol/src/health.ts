export * as HealthGroup from "./health.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"

/**
 * The health answer. `version` (the runtime's version) is a Contract Extension of this operation's
 * response (see `Api.additionalResponseFields`): optional, so an answer without it still decodes.
 */
export const Health = Schema.Struct({
  healthy: Schema.Literal(true),
  version: Schema.optional(
    Schema.String.annotations({ description: "The server's version (an extension of the observed contract)." })
  )
})

/** `GET /api/health`: answers `{healthy:true, version}` while the server accepts requests. */
export const get = HttpApiEndpoint.get("get", "/api/health")
  .addSuccess(Health)
  .annotate(OpenApi.Identifier, "v2.health.get")
  .annotate(OpenApi.Summary, "Check health")
  .annotate(
    OpenApi.Description,
    'Answers `{"healthy": true}` while the server accepts requests, with the server\'s `version`.'
  )

export const group = HttpApiGroup.make("health")
  .add(get)
  .annotate(OpenApi.Title, "opencode HttpApi")
  .annotate(ClientProjection.Namespace, "health")
