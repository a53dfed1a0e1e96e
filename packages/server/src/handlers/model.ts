export * as ModelHandlers from "./model.js"

import { HttpApiBuilder } from "@effect/platform"
import { type Catalog, Config, Locations } from "@opencode-ai/core"
import { Api } from "@opencode-ai/protocol"
import type { ModelInfo } from "@opencode-ai/schema"
import { Effect } from "effect"
import { api } from "./provider.js"

/**
 * A configured model in the wire shape. The config knows only what `opencode.json` says (no model
 * database): the declared input kinds (`modalities.input`, default text) and text out, tool calling
 * per `tool_call`, the declared limits (0 when unknown), no prices, no variants, no release date
 * (0), and always active and enabled.
 */
export const info = (provider: Catalog.Provider, model: Catalog.Model): ModelInfo.ModelV2Info => ({
  id: model.id,
  providerID: provider.id,
  name: model.name,
  api: { id: model.apiID, ...api(provider) },
  capabilities: { tools: model.toolCall, input: [...model.input], output: ["text"] },
  request: { headers: {}, body: {} },
  variants: [],
  time: { released: 0 },
  cost: [],
  status: "active",
  enabled: true,
  limit: { context: model.limit.context, output: model.limit.output }
})

/**
 * The `models` group: every model of every configured provider, providers and models in config
 * order. The request's `location` is resolved and echoed; the catalog is the instance's.
 */
export const layer = HttpApiBuilder.group(Api.OpenCodeApi, "models", (handlers) =>
  Effect.gen(function* () {
    const config = yield* Config.Service
    const locations = yield* Locations.Service
    return handlers.handle("list", ({ urlParams }) =>
      Effect.map(locations.resolve(urlParams.location), (location) => ({
        location,
        data: config.providers.flatMap((provider) => provider.models.map((model) => info(provider, model)))
      }))
    )
  })
)
