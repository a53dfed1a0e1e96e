export * as Provider from "./provider.js"

/**
 * Protocol selection and adapter construction. A provider's `npm` value in `opencode.json` only
 * selects the wire protocol (no AI SDK package is installed): {@link protocolOf}. {@link make} builds
 * the adapter for one provider; {@link layerRouted} provides an `LLMClient` that picks the provider of
 * each request by `request.model.providerID`.
 *
 * Adapters send through the `HttpClient` of the environment: `NodeHttpClient.layer` (or
 * `layerUndici`) in production, anything else in tests.
 */

import type { HttpClient } from "@effect/platform"
import { Effect, Either, Layer, type Option } from "effect"
import { RuntimeMetrics } from "../observability/runtime-metrics.js"
import * as Anthropic from "./anthropic.js"
import * as Gemini from "./gemini.js"
import * as LLMClient from "./llm-client.js"
import { ProviderNotFoundError, UnsupportedProtocolError } from "./llm-error.js"
import type * as LLMRequest from "./llm-request.js"
import * as OpenAICompatible from "./openai-compatible.js"
import * as ProviderHttp from "./provider-http.js"
import * as ProviderPackage from "./provider-package.js"

export type Protocol = "openai-compatible" | "anthropic" | "google"

export const protocols: ReadonlyArray<Protocol> = ["openai-compatible", "anthropic", "google"]

/**
 * The wire protocol an `npm` value selects, from the one package table ({@link ProviderPackage.table}):
 * e.g. `@ai-sdk/openai-compatible`, `@ai-sdk/openai`, `@ai-sdk/groq` → OpenAI-compatible chat
 * completions, `@ai-sdk/anthropic` → Anthropic Messages, `@ai-sdk/google` → the Gemini API
 * (`streamGenerateContent`). A version suffix (`@ai-sdk/anthropic@1.2.3`)
 * is ignored. A package the runtime cannot speak is an {@link UnsupportedProtocolError}.
 */
export const protocolOf = (npm: string): Either.Either<Protocol, UnsupportedProtocolError> => {
  const support = ProviderPackage.lookup(npm)
  return support._tag === "Unavailable"
    ? Either.left(
        new UnsupportedProtocolError({
          npm,
          message: `The provider package "${npm}" selects no supported protocol (${support.reason}); use one of ${ProviderPackage.supported().join(", ")}`
        })
      )
    : Either.right(support.protocol)
}

/**
 * The OpenAI-compatible dialect an `npm` value selects: `@ai-sdk/openai` is OpenAI's own API, anything
 * else a compatible server (see `OpenAICompatible.Dialect`). A version suffix is ignored.
 */
export const dialectOf = (npm: string): OpenAICompatible.Dialect =>
  npm.trim().replace(/^(@?[^@]+)@.*$/, "$1") === "@ai-sdk/openai" ? "openai" : "compatible"

/** What is needed to talk to one provider. */
export interface Settings {
  readonly protocol: Protocol
  /**
   * E.g. `https://api.openai.com/v1`, `https://api.anthropic.com/v1`,
   * `https://generativelanguage.googleapis.com/v1beta`, `http://127.0.0.1:8080/v1`.
   */
  readonly baseURL: string
  readonly apiKey?: string | undefined
  /** Sent with every request of this provider; the request's own headers win over them. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** The OpenAI-compatible dialect ({@link dialectOf}); default `compatible`. */
  readonly dialect?: OpenAICompatible.Dialect | undefined
}

/**
 * The adapter of `settings.protocol` as an `LLMClient`. Each request is timed, and its failure
 * counted, in the runtime metrics (`RuntimeMetrics.providerRequest`).
 */
export const make = (settings: Settings): Effect.Effect<LLMClient.Interface, never, HttpClient.HttpClient> =>
  Effect.map(adapter(settings), (client) => ProviderHttp.adapter((request) => opened(client, request)))

/**
 * One request of `client`, opened in the scope that will consume it, timed and counted; as an
 * adapter's, its `stream` has no stage between its events and the response's pull, and its
 * `forEachChunk` runs no stream at all.
 */
const opened = (client: ProviderHttp.Adapter, request: LLMRequest.Request) =>
  RuntimeMetrics.providerRequest(request.model, client.open(request))

const adapter = (settings: Settings): Effect.Effect<ProviderHttp.Adapter, never, HttpClient.HttpClient> => {
  const config = { baseURL: settings.baseURL, apiKey: settings.apiKey, headers: settings.headers }
  switch (settings.protocol) {
    case "openai-compatible":
      return OpenAICompatible.make({ ...config, dialect: settings.dialect })
    case "anthropic":
      return Anthropic.make(config)
    case "google":
      return Gemini.make(config)
  }
}

/** An `LLMClient` for a single provider, whatever `providerID` the requests name. */
export const layer = (settings: Settings): Layer.Layer<LLMClient.Service, never, HttpClient.HttpClient> =>
  Layer.effect(LLMClient.Service, make(settings))

/**
 * An `LLMClient` that resolves each request's `model.providerID` with `lookup` when the stream starts
 * (so configuration changes apply to the next attempt) and fails with {@link ProviderNotFoundError}
 * when it finds nothing.
 */
export const layerRouted = <R>(
  lookup: (providerID: string) => Effect.Effect<Option.Option<Settings>, never, R>
): Layer.Layer<LLMClient.Service, never, HttpClient.HttpClient | R> =>
  Layer.effect(
    LLMClient.Service,
    Effect.gen(function* () {
      const context = yield* Effect.context<HttpClient.HttpClient | R>()
      return ProviderHttp.adapter((request) =>
        Effect.gen(function* () {
          const settings = yield* lookup(request.model.providerID).pipe(Effect.provide(context))
          if (settings._tag === "None") {
            return yield* new ProviderNotFoundError({
              providerID: request.model.providerID,
              message: `Unknown provider: ${request.model.providerID}`
            })
          }
          const client = yield* adapter(settings.value).pipe(Effect.provide(context))
          return yield* opened(client, request)
        })
      )
    })
  )
