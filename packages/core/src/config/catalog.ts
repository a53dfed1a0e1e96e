export * as Catalog from "./catalog.js"

/**
 * The provider catalog: the configured providers and models resolved for the runtime, and the
 * default model references checked against them. Nothing here knows a model database (upstream's
 * models.dev): a model exists when the config declares it.
 *
 * Resolution of `provider.<id>`:
 * - `npm` selects the wire protocol only: `@ai-sdk/openai-compatible` and `@ai-sdk/openai` are
 *   OpenAI-compatible chat, `@ai-sdk/anthropic` is Anthropic Messages, `@ai-sdk/google` is the Gemini
 *   API; any other package fails. The provider IDs `openai`, `anthropic` and `google` need no `npm`
 *   (they imply theirs); any other provider without `npm` fails.
 * - `options.baseURL` is required for `@ai-sdk/openai-compatible`; the others default to the
 *   vendor's public endpoint.
 * - `options.apiKey` is taken after substitution; an empty key counts as none. Without one, the
 *   `openai`, `anthropic` and `google` providers read `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` /
 *   `GOOGLE_GENERATIVE_AI_API_KEY`.
 * - A model's `name` defaults to its key, `tool_call` to true, `reasoning` to false, each limit to
 *   0 (unknown), and its input kinds to `modalities.input` (else text, image and pdf with
 *   `attachment: true`, else text only). `id`, when set, is the model ID sent on the wire instead of the key.
 */

import type { Model as ModelSchema } from "@opencode-ai/schema"
import { Effect, Either, Option } from "effect"
import * as ConfigErrors from "./config-error.js"
import type * as ConfigInfo from "./config-info.js"

/** The wire protocols this runtime speaks. */
export type Protocol = "openai-compatible" | "anthropic" | "google"

/** Provider `npm` package → wire protocol. */
export const protocols: Readonly<Record<string, Protocol>> = {
  "@ai-sdk/openai-compatible": "openai-compatible",
  "@ai-sdk/openai": "openai-compatible",
  "@ai-sdk/anthropic": "anthropic",
  "@ai-sdk/google": "google"
}

const wellKnown: Readonly<Record<string, { readonly npm: string; readonly apiKeyEnv: string }>> = {
  openai: { npm: "@ai-sdk/openai", apiKeyEnv: "OPENAI_API_KEY" },
  anthropic: { npm: "@ai-sdk/anthropic", apiKeyEnv: "ANTHROPIC_API_KEY" },
  google: { npm: "@ai-sdk/google", apiKeyEnv: "GOOGLE_GENERATIVE_AI_API_KEY" }
}

const defaultBaseURL: Readonly<Record<string, string>> = {
  "@ai-sdk/openai": "https://api.openai.com/v1",
  "@ai-sdk/anthropic": "https://api.anthropic.com/v1",
  "@ai-sdk/google": "https://generativelanguage.googleapis.com/v1beta"
}

export interface Model {
  /** The model's key under `provider.<id>.models`: the `modelID` of a reference. */
  readonly id: string
  /** The model ID sent to the provider (`models.<id>.id`, default the key). */
  readonly apiID: string
  readonly providerID: string
  readonly name: string
  readonly toolCall: boolean
  readonly reasoning: boolean
  /** Token limits; 0 when the config does not say. */
  readonly limit: { readonly context: number; readonly output: number }
  /**
   * The kinds of input the model accepts (`text`, `image`, `pdf`, …): `modalities.input` when set,
   * else `text`, `image` and `pdf` when `attachment` is true, else `text` only. Attachments the model
   * does not accept reach it as a note saying so (see `PromptFiles`).
   */
  readonly input: ReadonlyArray<string>
  readonly family?: string | undefined
  /** `YYYY-MM-DD` when known. */
  readonly releaseDate?: string | undefined
  readonly status: "alpha" | "beta" | "deprecated" | "active"
  /** Whether the model takes a sampling temperature; a request to one that does not sends none. */
  readonly temperature: boolean
  /** Prices in USD per million tokens; absent when unknown (the model then costs 0). */
  readonly cost?: Cost | undefined
  /**
   * Upstream-shaped request options for every request to this model: the provider's extra `options`
   * keys, then the model's `options` (later wins). Partitioned into Generation Controls, Model
   * Request Options and compatibility body fields before a request is built.
   */
  readonly options: ConfigInfo.RequestOptions
  /** Named option sets over {@link options}, selected by a model reference's `variant`. */
  readonly variants: Readonly<Record<string, ConfigInfo.RequestOptions>>
  /** Headers for every request to this model (over the provider's). */
  readonly headers: Readonly<Record<string, string>>
}

/** Prices in USD per million tokens. */
export interface CostRates {
  readonly input: number
  readonly output: number
  readonly cacheRead: number
  readonly cacheWrite: number
}

/** A model's prices; `over200k` applies instead once a request's input exceeds 200,000 tokens. */
export interface Cost extends CostRates {
  readonly over200k?: CostRates | undefined
}

/** The catalog's cost from the config's (models.dev) shape. */
export const costOf = (cost: ConfigInfo.ModelCost): Cost => {
  const rates = (value: ConfigInfo.ModelCostRates): CostRates => ({
    input: value.input,
    output: value.output,
    cacheRead: value.cache_read ?? 0,
    cacheWrite: value.cache_write ?? 0
  })
  return {
    ...rates(cost),
    ...(cost.context_over_200k === undefined ? {} : { over200k: rates(cost.context_over_200k) })
  }
}

export interface Provider {
  readonly id: string
  readonly name: string
  /** The `npm` package named (or implied), kept for display. */
  readonly npm: string
  readonly protocol: Protocol
  /** Without a trailing slash. */
  readonly baseURL: string
  readonly apiKey?: string
  readonly headers: Readonly<Record<string, string>>
  /** In config order. */
  readonly models: ReadonlyArray<Model>
}

export interface Catalog {
  /** In config order (the merged documents' key order). */
  readonly providers: ReadonlyArray<Provider>
  /** `model`; when absent, the first model of the first provider; none without any model. */
  readonly model: Option.Option<ModelSchema.ModelRef>
  /** `small_model`; none when absent. */
  readonly smallModel: Option.Option<ModelSchema.ModelRef>
}

/** Where a key path of the merged config was written (the last document that set it). */
export type Locate = (path: ReadonlyArray<string>) => ConfigErrors.Position

/**
 * Parses `provider/model`: the first `/` splits, so model IDs may contain slashes
 * (`openrouter/anthropic/claude-sonnet`). Fails with the reason when either side is empty.
 */
export const parseModelRef = (value: string): Either.Either<ModelSchema.ModelRef, string> => {
  const slash = value.indexOf("/")
  if (slash <= 0 || slash === value.length - 1) {
    return Either.left(`"${value}" is not a model reference; expected "provider/model"`)
  }
  return Either.right({ providerID: value.slice(0, slash), id: value.slice(slash + 1) })
}

/** The provider and model a reference names, if the catalog has them. */
export const find = (
  catalog: Pick<Catalog, "providers">,
  ref: Pick<ModelSchema.ModelRef, "providerID" | "id">
): Option.Option<{ readonly provider: Provider; readonly model: Model }> =>
  Option.fromNullable(catalog.providers.find((provider) => provider.id === ref.providerID)).pipe(
    Option.flatMap((provider) =>
      Option.fromNullable(provider.models.find((model) => model.id === ref.id)).pipe(
        Option.map((model) => ({ provider, model }))
      )
    )
  )

/**
 * Checks the model reference written at `path` (`model`, `small_model`, `agent.<name>.model`): it
 * must parse and name a configured provider and one of its models.
 */
export const checkModelRef = (
  catalog: Pick<Catalog, "providers">,
  value: string,
  path: ReadonlyArray<string>,
  locate: Locate
): Either.Either<ModelSchema.ModelRef, ConfigErrors.ConfigError> => {
  const key = path.join(".")
  const fail = (message: string) => Either.left(ConfigErrors.at(locate(path), message, key))
  const parsed = parseModelRef(value)
  if (Either.isLeft(parsed)) return fail(parsed.left)
  const ref = parsed.right
  const provider = catalog.providers.find((item) => item.id === ref.providerID)
  if (provider === undefined) {
    const known = catalog.providers.map((item) => item.id)
    return fail(
      `"${value}" names provider "${ref.providerID}", which is not configured` +
        (known.length > 0 ? ` (configured: ${known.join(", ")})` : " (no providers are configured)")
    )
  }
  if (!provider.models.some((model) => model.id === ref.id)) {
    const known = provider.models.map((model) => model.id)
    return fail(
      `"${value}" names model "${ref.id}", which provider "${provider.id}" does not configure` +
        (known.length > 0 ? ` (its models: ${known.join(", ")})` : " (it has no models)")
    )
  }
  return Either.right(ref)
}

const provider = (
  id: string,
  config: ConfigInfo.Provider,
  env: Readonly<Record<string, string | undefined>>,
  locate: Locate
): Either.Either<Provider, ConfigErrors.ConfigError> => {
  const base = ["provider", id]
  const known = wellKnown[id]
  const npm = config.npm ?? known?.npm
  const supported = Object.keys(protocols).join(", ")
  if (npm === undefined) {
    return Either.left(
      ConfigErrors.at(locate(base), `missing; set it to one of ${supported}`, [...base, "npm"].join("."))
    )
  }
  const protocol = protocols[npm]
  if (protocol === undefined) {
    return Either.left(
      ConfigErrors.at(
        locate([...base, "npm"]),
        `unsupported provider package "${npm}"; supported: ${supported}`,
        [...base, "npm"].join(".")
      )
    )
  }
  const baseURL = config.options?.baseURL ?? defaultBaseURL[npm]
  if (baseURL === undefined || baseURL === "") {
    return Either.left(
      ConfigErrors.at(
        locate([...base, "options", "baseURL"]),
        `required for "${npm}"`,
        [...base, "options", "baseURL"].join(".")
      )
    )
  }
  const apiKey = [config.options?.apiKey, known === undefined ? undefined : env[known.apiKeyEnv]].find(
    (key) => key !== undefined && key !== ""
  )
  const { baseURL: _baseURL, apiKey: _apiKey, headers: _headers, ...providerOptions } = config.options ?? {}
  const models = Object.entries(config.models ?? {}).map(
    ([modelID, model]): Model => ({
      id: modelID,
      apiID: model.id ?? modelID,
      providerID: id,
      name: model.name ?? modelID,
      toolCall: model.tool_call ?? true,
      reasoning: model.reasoning ?? false,
      limit: { context: model.limit?.context ?? 0, output: model.limit?.output ?? 0 },
      input: model.modalities?.input ?? (model.attachment === true ? ["text", "image", "pdf"] : ["text"]),
      ...(model.family === undefined ? {} : { family: model.family }),
      ...(model.release_date === undefined ? {} : { releaseDate: model.release_date }),
      status: model.status ?? "active",
      temperature: model.temperature ?? true,
      ...(model.cost === undefined ? {} : { cost: costOf(model.cost) }),
      options: { ...providerOptions, ...model.options },
      variants: model.variants ?? {},
      headers: model.headers ?? {}
    })
  )
  return Either.right({
    id,
    name: config.name ?? id,
    npm,
    protocol,
    baseURL: baseURL.replace(/\/+$/, ""),
    ...(apiKey === undefined ? {} : { apiKey }),
    headers: config.options?.headers ?? {},
    models
  })
}

/** Resolves the providers of a merged config and checks `model` and `small_model` against them. */
export const resolve = Effect.fn("Catalog.resolve")(function* (
  info: ConfigInfo.Info,
  options: { readonly env: Readonly<Record<string, string | undefined>>; readonly locate: Locate }
) {
  const providers: Array<Provider> = []
  for (const [id, config] of Object.entries(info.provider ?? {})) {
    providers.push(yield* provider(id, config, options.env, options.locate))
  }
  const catalog = { providers }
  const ref = (key: "model" | "small_model") =>
    info[key] === undefined
      ? Either.right(Option.none<ModelSchema.ModelRef>())
      : Either.map(checkModelRef(catalog, info[key], [key], options.locate), Option.some)
  const explicit = yield* ref("model")
  const fallback = Option.fromNullable(providers.flatMap((item) => item.models)[0]).pipe(
    Option.map((model): ModelSchema.ModelRef => ({ providerID: model.providerID, id: model.id }))
  )
  return {
    providers,
    model: Option.orElse(explicit, () => fallback),
    smallModel: yield* ref("small_model")
  } satisfies Catalog
})
