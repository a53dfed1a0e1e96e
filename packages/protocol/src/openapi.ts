export * as OpenApiDocument from "./openapi.js"

import { OpenApi } from "@effect/platform"
import { OpenCodeApi } from "./api.js"

/** The OpenAPI document of {@link OpenCodeApi}, as checked in at `packages/protocol/openapi.json`. */
export const make = (): OpenApi.OpenAPISpec => OpenApi.fromApi(OpenCodeApi)

/** The checked-in text of the document: two-space JSON with a trailing newline. */
export const render = (): string => `${JSON.stringify(make(), null, 2)}\n`
