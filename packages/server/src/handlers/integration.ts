export * as IntegrationHandlers from "./integration.js"

import { HttpApiBuilder } from "@effect/platform"
import { Integrations, Locations, OAuthAttempts } from "@opencode-ai/core"
import { Api } from "@opencode-ai/protocol"
import { Effect } from "effect"

/**
 * The `integrations` group: the providers a credential can be connected to (see `Integrations`) and
 * the OAuth attempts that connect them (see `OAuthAttempts`). Every route resolves and echoes the
 * request's Location where the contract answers with one; credentials are per server, not per
 * Location. Secrets never appear in an answer.
 */
export const layer = HttpApiBuilder.group(Api.OpenCodeApi, "integrations", (handlers) =>
  Effect.gen(function* () {
    const integrations = yield* Integrations.Service
    const attempts = yield* OAuthAttempts.Service
    const locations = yield* Locations.Service
    return handlers
      .handle(
        "list",
        Effect.fn("IntegrationHandlers.list")(function* ({ urlParams }) {
          const location = yield* locations.resolve(urlParams.location)
          return { location, data: yield* integrations.list }
        })
      )
      .handle(
        "get",
        Effect.fn("IntegrationHandlers.get")(function* ({ path, urlParams }) {
          const location = yield* locations.resolve(urlParams.location)
          return { location, data: yield* integrations.get(path.integrationID) }
        })
      )
      .handle(
        "connectKey",
        Effect.fn("IntegrationHandlers.connectKey")(function* ({ path, payload, urlParams }) {
          yield* locations.resolve(urlParams.location)
          yield* integrations.connectKey(path.integrationID, payload.key, payload.label)
        })
      )
      .handle(
        "connectOauth",
        Effect.fn("IntegrationHandlers.connectOauth")(function* ({ path, payload, urlParams }) {
          const location = yield* locations.resolve(urlParams.location)
          return {
            location,
            data: yield* integrations.connectOAuth(path.integrationID, payload.methodID, payload.label)
          }
        })
      )
      .handle(
        "attemptStatus",
        Effect.fn("IntegrationHandlers.attemptStatus")(function* ({ path, urlParams }) {
          const location = yield* locations.resolve(urlParams.location)
          return { location, data: yield* attempts.status(path.attemptID) }
        })
      )
      .handle(
        "attemptCancel",
        Effect.fn("IntegrationHandlers.attemptCancel")(function* ({ path, urlParams }) {
          yield* locations.resolve(urlParams.location)
          yield* attempts.cancel(path.attemptID)
        })
      )
      .handle(
        "attemptComplete",
        Effect.fn("IntegrationHandlers.attemptComplete")(function* ({ path, payload, urlParams }) {
          yield* locations.resolve(urlParams.location)
          yield* attempts.complete(path.attemptID, payload.code)
        })
      )
  })
)
