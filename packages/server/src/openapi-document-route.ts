export * as OpenApiDocumentRoute from "./openapi-document-route.js"

import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as OpenApi from "@effect/platform/OpenApi"
import { Effect } from "effect"

/** Where the document is served. */
export const path = "/doc" as const

/**
 * The OpenAPI document of the assembled API at `/doc`. The document (walking every endpoint's
 * schemas into JSON Schema, several hundred KiB of JSON) is made on the route's first request, not
 * when the router is built: a start neither spends the CPU nor keeps the result. The first response's
 * body is kept and every later request gets the same bytes; concurrent first requests share one build.
 * The same document as the platform's `HttpApiBuilder.middlewareOpenApi`, only later.
 */
export const layer = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { api } = yield* HttpApi.Api
    const response = yield* Effect.cached(
      Effect.suspend(() => HttpServerResponse.json(OpenApi.fromApi(api))).pipe(Effect.orDie)
    )
    yield* router.get(path, response)
  })
)
