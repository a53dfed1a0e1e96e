export * as WebHandler from "./web-handler.js"

import { HttpApiBuilder, HttpApp, HttpServer } from "@effect/platform"
import { Core } from "@opencode-ai/core"
import { Effect, Layer, Option, type Scope } from "effect"
import { Router } from "./router.js"

export interface Options {
  readonly databaseFile: string
  /** The instance directory: the default Location of new sessions. */
  readonly directory: string
}

/** A fetch-shaped handler: a web `Request` in, the router's `Response` out. */
export type Handler = (request: Request) => Promise<Response>

/**
 * Server's router over its own Core, as an in-memory web handler: no listener, no socket. Every
 * request still passes through the full routing, middleware, codecs and handlers. Auth is off (the
 * caller is the same process).
 *
 * Resolves once Core is open and migrated. Closing the Scope closes the database and interrupts the
 * runtime's fibers; requests made after that fail.
 */
export const make = (options: Options): Effect.Effect<Handler, never, Scope.Scope> =>
  Effect.gen(function* () {
    const runtime = yield* Layer.toRuntime(
      Layer.mergeAll(
        Router.layer({ auth: Option.none() }),
        HttpApiBuilder.Router.Live,
        HttpApiBuilder.Middleware.layer,
        HttpServer.layerContext
      ).pipe(Layer.provide(Core.layer(options)))
    )
    const app = yield* HttpApiBuilder.httpApp.pipe(Effect.provide(runtime))
    return HttpApp.toWebHandlerRuntime(runtime)(app)
  })
