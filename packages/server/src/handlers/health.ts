export * as HealthHandlers from "./health.js"

import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ServerApi } from "../api.js"
import { ServerVersion } from "../server-version.js"

/** `v2.health.get`: answers while the router is serving, with the runtime's version. */
export const layer = HttpApiBuilder.group(ServerApi.api, "health", (handlers) =>
  handlers.handle("get", () => Effect.succeed({ healthy: true as const, version: ServerVersion.current }))
)
