export * as ReferenceHandlers from "./reference.js"

import { HttpApiBuilder } from "@effect/platform"
import { Locations, References } from "@opencode-ai/core"
import { Api } from "@opencode-ai/protocol"
import { Effect } from "effect"

/** The `reference` group: the configured references, resolved for the requested Location. */
export const layer = HttpApiBuilder.group(Api.OpenCodeApi, "reference", (handlers) =>
  Effect.gen(function* () {
    const references = yield* References.Service
    const locations = yield* Locations.Service
    return handlers.handle("list", ({ urlParams }) =>
      Effect.gen(function* () {
        const location = yield* locations.resolve(urlParams.location)
        return { location, data: yield* references.list(location) }
      })
    )
  })
)
