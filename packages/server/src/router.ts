export * as Router from "./router.js"

import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@opencode-ai/protocol"
import { Layer, type Option } from "effect"
import { HealthHandlers } from "./handlers/health.js"
import { InstructionHandlers } from "./handlers/instructions.js"
import { LocationHandlers } from "./handlers/location.js"
import { SessionHandlers } from "./handlers/session.js"
import { AuthorizationLive } from "./middleware/authorization.js"
import { BasicAuth } from "./middleware/basic-auth.js"
import { RequestErrors } from "./middleware/request-errors.js"

export interface Options {
  /** Basic auth credentials; `None` leaves every route open. */
  readonly auth: Option.Option<BasicAuth.Credentials>
}

/**
 * The assembled OpenCode API: every handler group, the concrete middleware and the OpenAPI document
 * at `/doc`. The network listener and the embedded host both serve exactly this layer; it needs the
 * Core services (`Core.layer`) and nothing else.
 */
export const layer = (options: Options) => {
  const api = HttpApiBuilder.api(Api.OpenCodeApi).pipe(
    Layer.provide([
      HealthHandlers.layer,
      LocationHandlers.layer,
      SessionHandlers.layer,
      InstructionHandlers.layer,
      AuthorizationLive.layer
    ])
  )
  return Layer.mergeAll(
    api,
    HttpApiBuilder.middlewareOpenApi({ path: "/doc" }).pipe(Layer.provide(api)),
    RequestErrors.layer
  ).pipe(Layer.provide(BasicAuth.layer(options.auth)))
}
