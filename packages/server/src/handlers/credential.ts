export * as CredentialHandlers from "./credential.js"

import { HttpApiBuilder } from "@effect/platform"
import { Integrations, Locations } from "@opencode-ai/core"
import { Api } from "@opencode-ai/protocol"
import { Effect } from "effect"

/**
 * The `credentials` group: renames and removals of stored credentials (see `Integrations`); the
 * Credential ID is the provider ID the credential is stored under.
 */
export const layer = HttpApiBuilder.group(Api.OpenCodeApi, "credentials", (handlers) =>
  Effect.gen(function* () {
    const integrations = yield* Integrations.Service
    const locations = yield* Locations.Service
    return handlers
      .handle(
        "update",
        Effect.fn("CredentialHandlers.update")(function* ({ path, payload, urlParams }) {
          yield* locations.resolve(urlParams.location)
          yield* integrations.updateCredential(path.credentialID, payload.label)
        })
      )
      .handle(
        "remove",
        Effect.fn("CredentialHandlers.remove")(function* ({ path, urlParams }) {
          yield* locations.resolve(urlParams.location)
          yield* integrations.removeCredential(path.credentialID)
        })
      )
  })
)
