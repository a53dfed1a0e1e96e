export * as LocationHandlers from "./location.js"

import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"

/** `v2.location.get`: resolves the requested Location, or the instance's default one. */
export const layer = HttpApiBuilder.group(ServerApi.api, "location", (handlers) =>
  Effect.gen(function* () {
    return handlers.handle("get", () => LocationMiddleware.CurrentLocation)
  })
)
