export * as Catalog from "./catalog.js"

/**
 * The provider catalog: the model database (models.dev's format, see `ModelsDev`) with the user's
 * `provider` config merged over it, resolved for the runtime, and the default model references
 * checked against the result.
 *
 * Which providers are offered, in this order: every provider the config names (`provider.<id>`, in
 * config order), then every database provider with a credential (a stored credential from
 * `auth.json`, see `CredentialStore`, or a non-empty variable among its `env`, e.g. `OPENAI_API_KEY`),
 * in database order. A database provider neither named nor credentialed is not offered.
 *
 * Resolution of one provider:
 * - Merge: the database entry is the base and `provider.<id>` merges over it key by key (objects
 *   recursively, anything else replaced), models model by model: `{"provider":{"openai":{}}}` offers
 *   every OpenAI model of the database, and `models.<id>` adds a model or overrides fields of one.
 *   The config's models come first, in config order, then the database's others. `whitelist` keeps
 *   only the models it names, `blacklist` removes the ones it names.
 * - `npm` selects the wire protocol only, from the one package table (`ProviderPackage`): the OpenAI
 *   chat family (`@ai-sdk/openai-compatible`, `@ai-sdk/openai`, `@ai-sdk/groq`, `@ai-sdk/xai`, …) runs
 *   on the OpenAI-compatible adapter, `@ai-sdk/anthropic` on the Anthropic one, `@ai-sdk/google` on
 *   the Gemini one.
 * - The base URL is `options.baseURL`, else the database's `api` (`${VAR}` read from the
 *   environment), else the package's public endpoint. The API key is `options.apiKey` (after
 *   substitution), else the stored credential's secret, else the first non-empty variable of `env`;
 *   an empty key counts as none. {@link Provider.keySource} says which.
 * - A provider that cannot be spoken (no or an unknown `npm`, a package without an adapter such as
 *   Bedrock or Vertex, a sign-in-only service such as GitHub Copilot, no base URL) is not an error: it
 *   is listed in {@link Catalog.unavailable} with the reason. Only a model reference naming it fails.
 * - A model's `name` defaults to its key, `tool_call` to true, `reasoning` to false, each limit to
 *   0 (unknown), and its input kinds to `modalities.input` (else text, image and pdf with
 *   `attachment: true`, else text only). `id`, when set, is the model ID sent on the wire instead of the key.
 *
 * Resolution is pure and deterministic: the same config, environment and database give the same catalog.
 */

import type { Model as ModelSchema } from "@opencode-ai/schema"
import { Either, Option, Order } from "effect"
import type { Protocol } from "../llm/provider.js"
import * as ProviderPackage from "../llm/provider-package.js"
import { Traced } from "../observability/traced.js"
import * as ConfigErrors from "./config-error.js"
import type * as ConfigInfo from "./config-info.js"
import type * as ModelsDev from "./models-dev.js"

export type { Protocol } from "../llm/provider.js"

/** Services reached only through a sign-in flow this runtime does not implement, by provider ID. */
const signInOnly: Readonly<Record<string, string>> = {
  "github-copilot": "GitHub Copilot needs its own sign-in flow, which this runtime does not implement",
  "github-copilot-enterprise": "GitHub Copilot needs its own sign-in flow, which this runtime does not implement"
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
  /** The kinds of output it produces: `modalities.output`, else `text`. */
  readonly output: ReadonlyArray<string>
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
  /**
   * The variant used when the session's model reference names none (config `variant`); like a
   * selected one, it applies only while it is one of {@link variants} and not disabled.
   */
  readonly defaultVariant?: string | undefined
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
  /**
   * Where {@link apiKey} comes from: `options.apiKey`, the stored credential (whose OAuth access token
   * the runtime refreshes when it expires), or an `env` variable. Absent without a key.
   */
  readonly keySource?: "config" | "credential" | "env" | undefined
  readonly headers: Readonly<Record<string, string>>
  /** The config's models in config order, then the database's others. */
  readonly models: ReadonlyArray<Model>
}

/** A provider a user could connect a credential to: every provider of the database or the config. */
export interface Connectable {
  readonly id: string
  readonly name: string
  /** The environment variables that may hold its API key, first set wins. */
  readonly env: ReadonlyArray<string>
  /** The OAuth methods the config declares for it (see `ConfigInfo.OAuthMethod`), in config order. */
  readonly oauth: ReadonlyArray<ConfigInfo.OAuthMethod>
}

/** A provider the config names or has a credential for, which this runtime cannot speak. */
export interface UnavailableProvider {
  readonly id: string
  readonly name: string
  /** The `npm` package, when one is named. */
  readonly npm?: string | undefined
  /** The base URL, when one could be determined. */
  readonly baseURL?: string | undefined
  /** Why it cannot be used, e.g. `Amazon Bedrock needs AWS request signing, …`. */
  readonly reason: string
  /** Its models, resolved as for an available provider (for listing only). */
  readonly models: ReadonlyArray<Model>
}

export interface Catalog {
  /** The providers requests can go to, in the order of the module doc. */
  readonly providers: ReadonlyArray<Provider>
  /** The providers offered but not usable, with the reason, in the same order. */
  readonly unavailable: ReadonlyArray<UnavailableProvider>
  /**
   * `model`; when absent, the first model the config declares of the first provider, else the
   * newest (by release date) non-deprecated model of the first provider; none without any model.
   */
  readonly model: Option.Option<ModelSchema.ModelRef>
  /** `small_model`; none when absent. */
  readonly smallModel: Option.Option<ModelSchema.ModelRef>
  /** Every provider of the config and the database (offered or not), config first, then database order. */
  readonly connectable: ReadonlyArray<Connectable>
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
 * must parse and name an available provider and one of its models. A reference to an unavailable
 * provider fails with the reason it is unavailable.
 */
export const checkModelRef = (
  catalog: Pick<Catalog, "providers"> & Partial<Pick<Catalog, "unavailable">>,
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
    const unavailable = catalog.unavailable?.find((item) => item.id === ref.providerID)
    if (unavailable !== undefined) {
      return fail(`"${value}" names provider "${ref.providerID}", which is unavailable: ${unavailable.reason}`)
    }
    const known = catalog.providers.map((item) => item.id)
    return fail(
      `"${value}" names provider "${ref.providerID}", which is not configured` +
        (known.length > 0
          ? ` (available: ${known.join(", ")})`
          : ' (no providers are available: configure one under "provider" or set its API key variable)')
    )
  }
  if (!provider.models.some((model) => model.id === ref.id)) {
    const known = provider.models.map((model) => model.id)
    return fail(
      `"${value}" names model "${ref.id}", which provider "${provider.id}" does not offer` +
        (known.length > 0 ? ` (its models: ${known.join(", ")})` : " (it has no models)")
    )
  }
  return Either.right(ref)
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** `over` merged over `base`: objects key by key, recursively; anything else replaced. Pure. */
const overlay = (base: unknown, over: unknown): unknown => {
  if (over === undefined) return base
  if (!isObject(base) || !isObject(over)) return over
  const out: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(over)) out[key] = overlay(out[key], value)
  return out
}

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value === "" ? undefined : value

/**
 * The database entry with the config's `provider.<id>` merged over it (see the module doc): the
 * config's models first, in its order, then the database's others.
 */
export const mergeProvider = (
  entry: ModelsDev.Provider | undefined,
  own: ConfigInfo.Provider | undefined
): ConfigInfo.Provider => {
  const base: ConfigInfo.Provider =
    entry === undefined
      ? {}
      : {
          name: entry.name,
          env: entry.env,
          models: entry.models,
          ...(entry.npm === undefined ? {} : { npm: entry.npm }),
          ...(entry.api === undefined ? {} : { api: entry.api })
        }
  const merged = overlay(base, own) as ConfigInfo.Provider
  const models = merged.models ?? {}
  const order = [...Object.keys(own?.models ?? {}), ...Object.keys(entry?.models ?? {})]
  return { ...merged, models: Object.fromEntries([...new Set(order)].map((id) => [id, models[id]!])) }
}

/** Stored credentials' secrets by provider ID (see `CredentialStore.secretOf`). */
export type StoredKeys = Readonly<Record<string, string>>

/**
 * The credential of `provider` and where it comes from: `options.apiKey`, else the stored credential,
 * else a non-empty variable among its `env`.
 */
const credential = (
  id: string,
  provider: ConfigInfo.Provider,
  env: Readonly<Record<string, string | undefined>>,
  stored: StoredKeys
): { readonly key: string; readonly source: "config" | "credential" | "env" } | undefined => {
  const configured = nonEmpty(provider.options?.apiKey)
  if (configured !== undefined) return { key: configured, source: "config" }
  const own = nonEmpty(stored[id])
  if (own !== undefined) return { key: own, source: "credential" }
  const fromEnv = (provider.env ?? []).map((name) => nonEmpty(env[name])).find((key) => key)
  return fromEnv === undefined ? undefined : { key: fromEnv, source: "env" }
}

/** `${VAR}` in a database base URL, read from the environment; fails with the first missing name. */
const expand = (url: string, env: Readonly<Record<string, string | undefined>>): Either.Either<string, string> => {
  const missing = [...url.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)]
    .map((match) => match[1]!)
    .find((name) => nonEmpty(env[name]) === undefined)
  if (missing !== undefined) return Either.left(missing)
  return Either.right(url.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => env[name] ?? ""))
}

const models = (id: string, config: ConfigInfo.Provider): ReadonlyArray<Model> => {
  const { baseURL: _baseURL, apiKey: _apiKey, headers: _headers, ...providerOptions } = config.options ?? {}
  const whitelist = config.whitelist === undefined ? undefined : new Set(config.whitelist)
  const blacklist = new Set(config.blacklist ?? [])
  return Object.entries(config.models ?? {})
    .filter(([modelID]) => (whitelist === undefined || whitelist.has(modelID)) && !blacklist.has(modelID))
    .map(
      ([modelID, model]): Model => ({
        id: modelID,
        apiID: model.id ?? modelID,
        providerID: id,
        name: model.name ?? modelID,
        toolCall: model.tool_call ?? true,
        reasoning: model.reasoning ?? false,
        limit: { context: model.limit?.context ?? 0, output: model.limit?.output ?? 0 },
        input: model.modalities?.input ?? (model.attachment === true ? ["text", "image", "pdf"] : ["text"]),
        output: model.modalities?.output ?? ["text"],
        ...(model.family === undefined ? {} : { family: model.family }),
        ...(model.release_date === undefined ? {} : { releaseDate: model.release_date }),
        status: model.status ?? "active",
        temperature: model.temperature ?? true,
        ...(model.cost === undefined ? {} : { cost: costOf(model.cost) }),
        options: { ...providerOptions, ...model.options },
        variants: model.variants ?? {},
        ...(model.variant === undefined ? {} : { defaultVariant: model.variant }),
        headers: model.headers ?? {}
      })
    )
}

/** One merged provider resolved: available, or unavailable with the reason (see the module doc). */
export const resolveProvider = (
  id: string,
  config: ConfigInfo.Provider,
  env: Readonly<Record<string, string | undefined>>,
  stored: StoredKeys = {}
): Either.Either<Provider, UnavailableProvider> => {
  const name = config.name ?? id
  const listed = models(id, config)
  const unavailable = (reason: string, baseURL?: string) =>
    Either.left<UnavailableProvider>({
      id,
      name,
      ...(config.npm === undefined ? {} : { npm: config.npm }),
      ...(baseURL === undefined ? {} : { baseURL }),
      reason,
      models: listed
    })
  const signIn = signInOnly[id]
  if (signIn !== undefined && config.options?.baseURL === undefined) return unavailable(signIn)
  const npm = config.npm
  if (npm === undefined) {
    return unavailable(`no "npm" package: set provider.${id}.npm, e.g. to "@ai-sdk/openai-compatible"`)
  }
  const support = ProviderPackage.lookup(npm)
  if (support._tag === "Unavailable") return unavailable(support.reason)
  const written = nonEmpty(config.options?.baseURL) ?? nonEmpty(config.api)
  const expanded = written === undefined ? undefined : expand(written, env)
  if (expanded !== undefined && Either.isLeft(expanded)) {
    return unavailable(`its base URL ${written} needs the environment variable ${expanded.left}`)
  }
  const baseURL = expanded?.right ?? support.baseURL
  if (baseURL === undefined) {
    return unavailable(`no base URL: set provider.${id}.options.baseURL (required for "${npm}")`)
  }
  const apiKey = credential(id, config, env, stored)
  return Either.right({
    id,
    name,
    npm,
    protocol: support.protocol satisfies Protocol,
    baseURL: baseURL.replace(/\/+$/, ""),
    ...(apiKey === undefined ? {} : { apiKey: apiKey.key, keySource: apiKey.source }),
    headers: config.options?.headers ?? {},
    models: listed
  })
}

/** The default model when `model` is not set (see {@link Catalog.model}). */
const fallbackModel = (
  providers: ReadonlyArray<Provider>,
  declared: Readonly<Record<string, ConfigInfo.Provider>>
): Option.Option<ModelSchema.ModelRef> => {
  const first = providers.find((provider) => provider.models.length > 0)
  if (first === undefined) return Option.none()
  const own = Object.keys(declared[first.id]?.models ?? {})
  const candidates = first.models.filter((model) => model.status !== "deprecated")
  const newest = [...(candidates.length > 0 ? candidates : first.models)].sort((a, b) =>
    Order.string(b.releaseDate ?? "", a.releaseDate ?? "")
  )[0]
  const chosen = first.models.find((model) => own.includes(model.id)) ?? newest
  return Option.fromNullable(chosen).pipe(
    Option.map((model): ModelSchema.ModelRef => ({ providerID: model.providerID, id: model.id }))
  )
}

/**
 * Resolves the providers of a merged config over `database` (see the module doc) and checks `model`
 * and `small_model` against them. Fails only with the ConfigError of a model reference.
 */
export const resolve = Traced.fn("Catalog.resolve")(function* (
  info: ConfigInfo.Info,
  options: {
    readonly env: Readonly<Record<string, string | undefined>>
    readonly locate: Locate
    readonly database: ModelsDev.Database
    /** Stored credentials' secrets by provider ID (default none). */
    readonly stored?: StoredKeys | undefined
  }
) {
  const configured = info.provider ?? {}
  const stored = options.stored ?? {}
  const ids = [...new Set([...Object.keys(configured), ...Object.keys(options.database)])]
  const providers: Array<Provider> = []
  const unavailable: Array<UnavailableProvider> = []
  const connectable: Array<Connectable> = []
  for (const id of ids) {
    const own = configured[id]
    const merged = mergeProvider(options.database[id], own)
    connectable.push({ id, name: merged.name ?? id, env: merged.env ?? [], oauth: merged.oauth ?? [] })
    if (own === undefined && credential(id, merged, options.env, stored) === undefined) continue
    const resolved = resolveProvider(id, merged, options.env, stored)
    if (Either.isRight(resolved)) providers.push(resolved.right)
    else unavailable.push(resolved.left)
  }
  const catalog = { providers, unavailable }
  const ref = (key: "model" | "small_model") =>
    info[key] === undefined
      ? Either.right(Option.none<ModelSchema.ModelRef>())
      : Either.map(checkModelRef(catalog, info[key], [key], options.locate), Option.some)
  const explicit = yield* ref("model")
  return {
    providers,
    unavailable,
    model: Option.orElse(explicit, () => fallbackModel(providers, configured)),
    smallModel: yield* ref("small_model"),
    connectable
  } satisfies Catalog
})
