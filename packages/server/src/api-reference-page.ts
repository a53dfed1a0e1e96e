export * as ApiReferencePage from "./api-reference-page.js"

import { HttpApi, HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"

/** Where the page is served. */
export const path = "/doc/ui" as const

/**
 * The API reference page at `/doc/ui`: the platform's Scalar page over the OpenAPI document, its
 * script inlined (nothing is fetched from elsewhere, fonts included). That script is about 3 MB, so
 * the page is made on its first request, from a module loaded then (`api-reference-page-build.ts`, a
 * chunk of its own in the bundle): a start neither reads, compiles nor keeps it. Later requests get
 * the same page; concurrent first requests share one build.
 */
export const layer = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const api = yield* HttpApi.Api
    const page = yield* Effect.cached(
      Effect.promise(() => import("./api-reference-page-build.js")).pipe(
        Effect.flatMap((build) => build.make(api, path))
      )
    )
    yield* router.get(path, Effect.flatten(page))
  })
)
