export * as ProviderHandlers from "./provider.js"

import { HttpApiBuilder } from "@effect/platform"
import { type Catalog, Config } from "@opencode-ai/core"
import { Errors, type Provider } from "@opencode-ai/schema"
import { Effect, Option } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"

/** Header names that carry credentials: never echoed by the catalog endpoints. */
const credential = /(^|-)(authorization|auth|api-?key|key|token|secret|cookie|password)($|-)/i

/**
 * The configured `options.headers` a client may see: every header except those whose name says it
 * carries a credential (`Authorization`, `x-api-key`, `*-token`, …), like the API key itself.
 */
export const publicHeaders = (headers: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !credential.test(name)))

/**
 * How a provider is reached: the `npm` package that selects its protocol (empty when none is named),
 * at its base URL (absent when none could be determined).
 */
export const api = (provider: Pick<Catalog.UnavailableProvider, "npm" | "baseURL">): Provider.ProviderAISDK => ({
  type: "aisdk",
  package: provider.npm ?? "",
  ...(provider.baseURL === undefined ? {} : { url: provider.baseURL })
})

/** An available provider in the wire shape; the API key never appears. */
export const info = (provider: Catalog.Provider): Provider.ProviderV2Info => ({
  id: provider.id,
  name: provider.name,
  api: api(provider),
  request: { headers: publicHeaders(provider.headers), body: {} }
})

/** A provider this runtime cannot use: `disabled`, with the reason in the `disabledReason` extension. */
export const unavailableInfo = (provider: Catalog.UnavailableProvider): Provider.ProviderV2Info => ({
  id: provider.id,
  name: provider.name,
  disabled: true,
  disabledReason: provider.reason,
  api: api(provider),
  request: { headers: {}, body: {} }
})

/**
 * The `providers` group: the offered providers (the model database merged under the config, see
 * Catalog), available ones first, then the unavailable ones as `disabled`. Read from the configuration
 * in memory at each request (so a refreshed model database shows at once). The request's `location`
 * is resolved and echoed; the catalog is the instance's (one configuration per server).
 */
export const layer = HttpApiBuilder.group(ServerApi.api, "providers", (handlers) =>
  Effect.gen(function* () {
    const config = yield* Config.Service
    return handlers
      .handle("list", () =>
        Effect.map(LocationMiddleware.CurrentLocation, (location) => ({
          location,
          data: [...config.providers.map(info), ...config.unavailable.map(unavailableInfo)]
        }))
      )
      .handle("get", ({ path }) =>
        Effect.gen(function* () {
          const location = yield* LocationMiddleware.CurrentLocation
          const provider = config.provider(path.providerID)
          if (Option.isSome(provider)) return { location, data: info(provider.value) }
          const unavailable = config.unavailable.find((item) => item.id === path.providerID)
          if (unavailable !== undefined) return { location, data: unavailableInfo(unavailable) }
          return yield* Errors.ProviderNotFoundError.of(path.providerID)
        })
      )
  })
)
