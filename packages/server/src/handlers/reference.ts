export * as ReferenceHandlers from "./reference.js"

import { HttpApiBuilder } from "@effect/platform"
import { References } from "@opencode-ai/core"
import { Effect } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"

/** The `reference` group: the configured references, resolved for the requested Location. */
export const layer = HttpApiBuilder.group(ServerApi.api, "reference", (handlers) =>
  Effect.gen(function* () {
    const references = yield* References.Service
    return handlers.handle("list", () =>
      Effect.gen(function* () {
        const location = yield* LocationMiddleware.CurrentLocation
        return { location, data: yield* references.list(location) }
      })
    )
  })
)
