export * as HealthGroup from "./health.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"

export const Health = Schema.Struct({ healthy: Schema.Literal(true) })

/** `GET /api/health`: answers `{healthy:true}` while the server accepts requests. */
export const get = HttpApiEndpoint.get("get", "/api/health")
  .addSuccess(Health)
  .annotate(OpenApi.Identifier, "v2.health.get")
  .annotate(OpenApi.Summary, "Check health")
  .annotate(OpenApi.Description, 'Answers `{"healthy": true}` while the server accepts requests.')

export const group = HttpApiGroup.make("health")
  .add(get)
  .annotate(OpenApi.Title, "opencode HttpApi")
  .annotate(ClientProjection.Namespace, "health")
