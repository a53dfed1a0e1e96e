export * as CredentialHandlers from "./credential.js"

import { HttpApiBuilder } from "@effect/platform"
import { Integrations, Traced } from "@opencode-ai/core"
import { Effect } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"

/**
 * The `credentials` group: renames and removals of stored credentials (see `Integrations`); the
 * Credential ID is the provider ID the credential is stored under.
 */
export const layer = HttpApiBuilder.group(ServerApi.api, "credentials", (handlers) =>
  Effect.gen(function* () {
    const integrations = yield* Integrations.Service
    return handlers
      .handle(
        "update",
        Traced.fn("CredentialHandlers.update")(function* ({ path, payload }) {
          yield* LocationMiddleware.CurrentLocation
          yield* integrations.updateCredential(path.credentialID, payload.label)
        })
      )
      .handle(
        "remove",
        Traced.fn("CredentialHandlers.remove")(function* ({ path }) {
          yield* LocationMiddleware.CurrentLocation
          yield* integrations.removeCredential(path.credentialID)
        })
      )
  })
)
