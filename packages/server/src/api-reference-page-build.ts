import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiScalar from "@effect/platform/HttpApiScalar"
import { Effect, Layer } from "effect"

/**
 * Builds the Scalar page's routes for `api` on a router of their own and returns that router as the
 * app answering `path` (see ApiReferencePage, which loads this module on the first request).
 */
export const make = (api: HttpApi.Api["Type"], path: `/${string}`) =>
  HttpApiBuilder.Router.router.pipe(
    Effect.provide(
      HttpApiScalar.layer({ path, scalar: { withDefaultFonts: false } }).pipe(
        Layer.provideMerge(HttpApiBuilder.Router.Live),
        Layer.provide(Layer.succeed(HttpApi.Api, api))
      )
    )
  )
