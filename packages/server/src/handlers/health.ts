export * as HealthHandlers from "./health.js"

import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@opencode-ai/protocol"
import { Effect } from "effect"

/** `v2.health.get`: answers while the router is serving. */
export const layer = HttpApiBuilder.group(Api.OpenCodeApi, "health", (handlers) =>
  handlers.handle("get", () => Effect.succeed({ healthy: true as const }))
)
