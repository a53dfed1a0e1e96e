export * as ProviderHandlers from "./provider.js"

import { HttpApiBuilder } from "@effect/platform"
import { type Catalog, Config, Locations } from "@opencode-ai/core"
import { Api } from "@opencode-ai/protocol"
import { Errors, type Provider } from "@opencode-ai/schema"
import { Effect, Option } from "effect"

/** Header names that carry credentials: never echoed by the catalog endpoints. */
const credential = /(^|-)(authorization|auth|api-?key|key|token|secret|cookie|password)($|-)/i

/**
 * The configured `options.headers` a client may see: every header except those whose name says it
 * carries a credential (`Authorization`, `x-api-key`, `*-token`, …), like the API key itself.
 */
export const publicHeaders = (headers: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !credential.test(name)))

/** How a configured provider is reached: the `npm` package that selects its protocol, at its base URL. */
export const api = (provider: Catalog.Provider): Provider.ProviderAISDK => ({
  type: "aisdk",
  package: provider.npm,
  url: provider.baseURL
})

/** A configured provider in the wire shape; the API key never appears. */
export const info = (provider: Catalog.Provider): Provider.ProviderV2Info => ({
  id: provider.id,
  name: provider.name,
  api: api(provider),
  request: { headers: publicHeaders(provider.headers), body: {} }
})

/**
 * The `providers` group: the providers of the configuration loaded at startup. The request's
 * `location` is resolved and echoed; the catalog is the instance's (one configuration per server).
 */
export const layer = HttpApiBuilder.group(Api.OpenCodeApi, "providers", (handlers) =>
  Effect.gen(function* () {
    const config = yield* Config.Service
    const locations = yield* Locations.Service
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.map(locations.resolve(urlParams.location), (location) => ({
          location,
          data: config.providers.map(info)
        }))
      )
      .handle("get", ({ path, urlParams }) =>
        Effect.gen(function* () {
          const location = yield* locations.resolve(urlParams.location)
          const provider = config.provider(path.providerID)
          if (Option.isNone(provider)) return yield* Errors.ProviderNotFoundError.of(path.providerID)
          return { location, data: info(provider.value) }
        })
      )
  })
)
