export * as LocationHandlers from "./location.js"

import { HttpApiBuilder } from "@effect/platform"
import { Locations } from "@opencode-ai/core"
import { Api } from "@opencode-ai/protocol"
import { Effect } from "effect"

/** `v2.location.get`: resolves the requested Location, or the instance's default one. */
export const layer = HttpApiBuilder.group(Api.OpenCodeApi, "location", (handlers) =>
  Effect.gen(function* () {
    const locations = yield* Locations.Service
    return handlers.handle("get", ({ urlParams }) => locations.resolve(urlParams.location))
  })
)
