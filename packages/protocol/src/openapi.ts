export * as OpenApiDocument from "./openapi.js"

import { OpenApi } from "@effect/platform"
import { OpenCodeApi } from "./api.js"

/** The OpenAPI document of {@link OpenCodeApi}, as checked in at `packages/protocol/openapi.json`. */
export const make = (): OpenApi.OpenAPISpec => OpenApi.fromApi(OpenCodeApi)
