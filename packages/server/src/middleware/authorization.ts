export * as AuthorizationLive from "./authorization.js"

import { HttpServerRequest } from "@effect/platform"
import { Middleware } from "@opencode-ai/protocol"
import { Effect, Layer } from "effect"
import { BasicAuth } from "./basic-auth.js"

/** The concrete `Authorization` middleware of every API route: Basic auth under the server's policy. */
export const layer = Layer.effect(
  Middleware.Authorization,
  Effect.gen(function* () {
    const policy = yield* BasicAuth.Policy
    return Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      yield* BasicAuth.verify(request.headers.authorization).pipe(Effect.provideService(BasicAuth.Policy, policy))
    })
  })
)
