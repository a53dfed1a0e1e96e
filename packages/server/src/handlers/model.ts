export * as ModelHandlers from "./model.js"

import { HttpApiBuilder } from "@effect/platform"
import { type Catalog, Config, RequestOptions } from "@opencode-ai/core"
import type { ModelInfo } from "@opencode-ai/schema"
import { Effect } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"
import { api, publicHeaders } from "./provider.js"

/** The context size above which `Catalog.Cost.over200k` applies. */
const tierSize = 200_000

/** Prices in the wire shape: the base rates, then the rates over 200k tokens of context as a tier. */
export const cost = (value: Catalog.Cost | undefined): Array<ModelInfo.ModelCost> => {
  if (value === undefined) return []
  const rates = (r: Catalog.CostRates) => ({
    input: r.input,
    output: r.output,
    cache: { read: r.cacheRead, write: r.cacheWrite }
  })
  return [
    rates(value),
    ...(value.over200k === undefined
      ? []
      : [{ tier: { type: "context" as const, size: tierSize }, ...rates(value.over200k) }])
  ]
}

/** `YYYY-MM-DD` as epoch milliseconds (UTC midnight); 0 when unknown or unreadable. */
export const released = (date: string | undefined): number => {
  const time = date === undefined ? Number.NaN : Date.parse(date)
  return Number.isNaN(time) ? 0 : time
}

/** The model's named option sets, except those marked `disabled: true`, as request bodies. */
export const variants = (model: Catalog.Model): ModelInfo.ModelV2Info["variants"] =>
  Object.entries(model.variants)
    .filter(([, options]) => options.disabled !== true)
    .map(([id, { disabled: _disabled, ...body }]) => ({ id, headers: {}, body }))

/** The model's default variant (config `variant`), when it is one of its selectable variants. */
export const defaultVariant = (model: Catalog.Model): { readonly variant?: string } =>
  model.defaultVariant !== undefined && RequestOptions.variantNames(model).includes(model.defaultVariant)
    ? { variant: model.defaultVariant }
    : {}

/**
 * A catalog model in the wire shape: what it takes and gives (tools, input and output kinds), its
 * limits (0 when unknown), prices (base and the over-200k tier), release date, status, its variants
 * and the request additions (its headers without credentials, its request options as the body, and
 * as `variant` the variant a request uses when the session names none).
 * `enabled` is false for a model of an unavailable provider. The capabilities shape has no place for
 * `reasoning`.
 */
export const info = (
  provider: Pick<Catalog.UnavailableProvider, "id" | "npm" | "baseURL">,
  model: Catalog.Model,
  enabled: boolean
): ModelInfo.ModelV2Info => ({
  id: model.id,
  providerID: provider.id,
  ...(model.family === undefined ? {} : { family: model.family }),
  name: model.name,
  api: { id: model.apiID, ...api(provider) },
  capabilities: { tools: model.toolCall, input: [...model.input], output: [...model.output] },
  request: { headers: publicHeaders(model.headers), body: { ...model.options }, ...defaultVariant(model) },
  variants: variants(model),
  time: { released: released(model.releaseDate) },
  cost: cost(model.cost),
  status: model.status,
  enabled,
  limit: { context: model.limit.context, output: model.limit.output }
})

/**
 * The `models` group: every model of every offered provider (the model database merged under the
 * config, see Catalog), available providers first, in catalog order. Read from the configuration in
 * memory at each request, so a refreshed model database shows at once. The request's `location` is
 * resolved and echoed; the catalog is the instance's.
 */
export const layer = HttpApiBuilder.group(ServerApi.api, "models", (handlers) =>
  Effect.gen(function* () {
    const config = yield* Config.Service
    return handlers.handle("list", () =>
      Effect.map(LocationMiddleware.CurrentLocation, (location) => ({
        location,
        data: [
          ...config.providers.flatMap((provider) => provider.models.map((model) => info(provider, model, true))),
          ...config.unavailable.flatMap((provider) => provider.models.map((model) => info(provider, model, false)))
        ]
      }))
    )
  })
)
