export * as IntegrationHandlers from "./integration.js"

import { HttpApiBuilder } from "@effect/platform"
import { Integrations, OAuthAttempts, Traced } from "@opencode-ai/core"
import { Effect } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"

/**
 * The `integrations` group: the providers a credential can be connected to (see `Integrations`) and
 * the OAuth attempts that connect them (see `OAuthAttempts`). Every route resolves and echoes the
 * request's Location where the contract answers with one; credentials are per server, not per
 * Location. Secrets never appear in an answer.
 */
export const layer = HttpApiBuilder.group(ServerApi.api, "integrations", (handlers) =>
  Effect.gen(function* () {
    const integrations = yield* Integrations.Service
    const attempts = yield* OAuthAttempts.Service
    return handlers
      .handle(
        "list",
        Traced.fn("IntegrationHandlers.list")(function* () {
          const location = yield* LocationMiddleware.CurrentLocation
          return { location, data: yield* integrations.list }
        })
      )
      .handle(
        "get",
        Traced.fn("IntegrationHandlers.get")(function* ({ path }) {
          const location = yield* LocationMiddleware.CurrentLocation
          return { location, data: yield* integrations.get(path.integrationID) }
        })
      )
      .handle(
        "connectKey",
        Traced.fn("IntegrationHandlers.connectKey")(function* ({ path, payload }) {
          yield* LocationMiddleware.CurrentLocation
          yield* integrations.connectKey(path.integrationID, payload.key, payload.label)
        })
      )
      .handle(
        "connectOauth",
        Traced.fn("IntegrationHandlers.connectOauth")(function* ({ path, payload }) {
          const location = yield* LocationMiddleware.CurrentLocation
          return {
            location,
            data: yield* integrations.connectOAuth(path.integrationID, payload.methodID, payload.label)
          }
        })
      )
      .handle(
        "attemptStatus",
        Traced.fn("IntegrationHandlers.attemptStatus")(function* ({ path }) {
          const location = yield* LocationMiddleware.CurrentLocation
          return { location, data: yield* attempts.status(path.attemptID) }
        })
      )
      .handle(
        "attemptCancel",
        Traced.fn("IntegrationHandlers.attemptCancel")(function* ({ path }) {
          yield* LocationMiddleware.CurrentLocation
          yield* attempts.cancel(path.attemptID)
        })
      )
      .handle(
        "attemptComplete",
        Traced.fn("IntegrationHandlers.attemptComplete")(function* ({ path, payload }) {
          yield* LocationMiddleware.CurrentLocation
          yield* attempts.complete(path.attemptID, payload.code)
        })
      )
  })
)
