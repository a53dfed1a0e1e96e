export * as RequestOptions from "./request-options.js"

/**
 * The shared ingestion adapter for upstream-shaped request options: the `options` of a provider, a
 * model, a model variant or an agent, written with AI SDK / models.dev keys (`reasoningEffort`,
 * `thinking: {type, budgetTokens}`, `thinkingConfig`, …) or their legacy snake_case spellings
 * (`reasoning_effort`, `top_p`, …). {@link partition} splits one such record into three separate
 * domains, and {@link resolve} combines the records that apply to one Step in their order.
 *
 * The three domains:
 * - Generation Controls (`LLMRequest.Generation`), provider-neutral:
 *   - `maxOutputTokens` ← `maxOutputTokens`, `maxTokens`, `max_tokens`, `max_output_tokens`,
 *     `maxCompletionTokens`, `max_completion_tokens` (a positive integer);
 *   - `temperature` ← `temperature`; `topP` ← `topP`, `top_p`; `topK` ← `topK`, `top_k` (positive
 *     integer); `presencePenalty` ← `presencePenalty`, `presence_penalty`; `frequencyPenalty` ←
 *     `frequencyPenalty`, `frequency_penalty`; `seed` ← `seed` (integer);
 *   - `stopSequences` ← `stopSequences`, `stop_sequences`, `stop` (a string or a list of strings).
 * - Model Request Options (`ModelRequestOptions`), provider-semantic: see that module for each field
 *   and the keys it is read from.
 * - Compatibility body fields: every other key, and every recognised key whose value is not of the
 *   expected shape (e.g. `thinking: {type: "adaptive"}`), kept as written, key and value. The runner
 *   sends them in the request body of the selected provider's protocol, so a field this runtime does
 *   not know still reaches the provider exactly as upstream would send it. Nothing is dropped.
 *
 * Within one record, when several spellings of one setting are present, the first one listed above
 * that has a valid value wins (the AI SDK name before the legacy one), and the others are consumed.
 * When two different keys say the same thing (Anthropic's `thinking` and Gemini's `thinkingConfig`;
 * `parallelToolCalls` and `disableParallelToolUse`), the one listed first in {@link recognisers} wins.
 *
 * {@link resolve}: the layers that apply to one Step, later wins per field: the model's catalog
 * `options` (the provider's extra options, then the model's own), then the selected variant of the
 * Session's model reference, then the agent's `options`, then the agent's `temperature` and `top_p`.
 * How much the model thinks is one decision: a layer that sets any of `reasoningEffort`, `thinking`
 * or `thinkingBudget` replaces all three from the layers before it. Body fields merge deeply (nested
 * objects key by key; anything else replaced). Then:
 * - a model whose catalog entry says `temperature: false` gets no temperature, whoever set one;
 * - `maxOutputTokens` defaults to the model's `limit.output` (when known) unless a layer set it.
 *
 * Variants ({@link variant}): a model's `variants.<name>` is an options record; `disabled: true` hides
 * it (the key is not an option). Selecting an unknown or hidden variant fails at selection time
 * (`SessionSelection.switchModel`); a Step whose session still names one (the configuration changed
 * since) runs with the model's options alone, and the runner logs a warning.
 */

import { Quote } from "@opencode-ai/schema"
import { Either, Option, Schema } from "effect"
import type { LLMRequest } from "../llm/llm-request.js"
import { ModelRequestOptions } from "../llm/model-request-options.js"
import type * as Catalog from "./catalog.js"
import type * as ConfigInfo from "./config-info.js"

/** One options record split into its three domains. */
export interface Partition {
  readonly generation: LLMRequest.Generation
  readonly options: ModelRequestOptions.Options
  /** Compatibility body fields: the keys not recognised (or not of the expected shape), as written. */
  readonly body: Readonly<Record<string, unknown>>
}

export const empty: Partition = { generation: {}, options: {}, body: {} }

type Mutable<A> = { -readonly [K in keyof A]: A[K] }

interface Patch {
  readonly generation?: Mutable<LLMRequest.Generation> | undefined
  readonly options?: Mutable<ModelRequestOptions.Options> | undefined
}

/** One setting: its spellings (preferred first), the shape its value must have, and what it sets. */
interface Recogniser {
  readonly keys: ReadonlyArray<string>
  readonly read: (value: unknown) => Option.Option<Patch>
}

const recogniser = <A, I>(
  keys: ReadonlyArray<string>,
  schema: Schema.Schema<A, I>,
  patch: (value: A) => Patch
): Recogniser => {
  const decode = Schema.decodeUnknownOption(schema, { onExcessProperty: "error" })
  return { keys, read: (value) => Option.map(decode(value), patch) }
}

const PositiveInt = Schema.Int.pipe(Schema.positive())
const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())
const Stop = Schema.Union(Schema.String, Schema.Array(Schema.String))

/** Anthropic's (AI SDK) `thinking`; the wire's `budget_tokens` spelling is accepted too. */
const Thinking = Schema.Struct({
  type: Schema.Literal("enabled", "disabled"),
  budgetTokens: Schema.optionalWith(NonNegativeInt, { exact: true }),
  budget_tokens: Schema.optionalWith(NonNegativeInt, { exact: true })
})

/** Gemini's (AI SDK) `thinkingConfig`: a budget of 0 turns thinking off, -1 lets the model size it. */
const ThinkingConfig = Schema.Struct({
  thinkingBudget: Schema.optionalWith(Schema.Int.pipe(Schema.greaterThanOrEqualTo(-1)), { exact: true }),
  includeThoughts: Schema.optionalWith(Schema.Boolean, { exact: true }),
  thinkingLevel: Schema.optionalWith(ModelRequestOptions.ReasoningEffort, { exact: true })
})

/** Anthropic's (AI SDK) `cacheControl`. */
const CacheControl = Schema.Struct({
  type: Schema.Literal("ephemeral"),
  ttl: Schema.optionalWith(ModelRequestOptions.CacheTtl, { exact: true })
})

const generation = (value: Mutable<LLMRequest.Generation>): Patch => ({ generation: value })
const options = (value: Mutable<ModelRequestOptions.Options>): Patch => ({ options: value })

/** Every recognised setting, in precedence order (see the module comment). */
export const recognisers: ReadonlyArray<Recogniser> = [
  // Generation Controls
  recogniser(
    ["maxOutputTokens", "maxTokens", "max_tokens", "max_output_tokens", "maxCompletionTokens", "max_completion_tokens"],
    PositiveInt,
    (maxOutputTokens) => generation({ maxOutputTokens })
  ),
  recogniser(["temperature"], Schema.Finite, (temperature) => generation({ temperature })),
  recogniser(["topP", "top_p"], Schema.Finite, (topP) => generation({ topP })),
  recogniser(["topK", "top_k"], PositiveInt, (topK) => generation({ topK })),
  recogniser(["presencePenalty", "presence_penalty"], Schema.Finite, (presencePenalty) =>
    generation({ presencePenalty })
  ),
  recogniser(["frequencyPenalty", "frequency_penalty"], Schema.Finite, (frequencyPenalty) =>
    generation({ frequencyPenalty })
  ),
  recogniser(["stopSequences", "stop_sequences", "stop"], Stop, (stop) =>
    generation({ stopSequences: typeof stop === "string" ? [stop] : stop })
  ),
  recogniser(["seed"], Schema.Int, (seed) => generation({ seed })),
  // Model Request Options
  recogniser(["reasoningEffort", "reasoning_effort"], ModelRequestOptions.ReasoningEffort, (reasoningEffort) =>
    options({ reasoningEffort })
  ),
  recogniser(["reasoningSummary", "reasoning_summary"], ModelRequestOptions.ReasoningSummary, (reasoningSummary) =>
    options({ reasoningSummary })
  ),
  recogniser(["thinking"], Thinking, (thinking) => {
    const budget = thinking.budgetTokens ?? thinking.budget_tokens
    return thinking.type === "disabled"
      ? options({ thinking: false })
      : options({ thinking: true, ...(budget === undefined ? {} : { thinkingBudget: budget }) })
  }),
  recogniser(["thinkingConfig"], ThinkingConfig, (config) =>
    options({
      ...(config.thinkingBudget === undefined
        ? {}
        : config.thinkingBudget === 0
          ? { thinking: false }
          : config.thinkingBudget === -1
            ? { thinking: true }
            : { thinkingBudget: config.thinkingBudget }),
      ...(config.includeThoughts === undefined ? {} : { includeThoughts: config.includeThoughts }),
      ...(config.thinkingLevel === undefined ? {} : { reasoningEffort: config.thinkingLevel })
    })
  ),
  recogniser(["textVerbosity", "verbosity"], ModelRequestOptions.TextVerbosity, (textVerbosity) =>
    options({ textVerbosity })
  ),
  recogniser(["store"], Schema.Boolean, (store) => options({ store })),
  recogniser(["include"], Schema.Array(Schema.String), (include) => options({ include })),
  recogniser(["promptCacheKey", "prompt_cache_key"], Schema.String, (promptCacheKey) => options({ promptCacheKey })),
  recogniser(["cacheControl"], CacheControl, (control) =>
    options(control.ttl === undefined ? {} : { cacheTtl: control.ttl })
  ),
  recogniser(["serviceTier", "service_tier"], Schema.String, (serviceTier) => options({ serviceTier })),
  recogniser(["parallelToolCalls", "parallel_tool_calls"], Schema.Boolean, (parallelToolCalls) =>
    options({ parallelToolCalls })
  ),
  recogniser(["disableParallelToolUse"], Schema.Boolean, (disabled) => options({ parallelToolCalls: !disabled }))
]

/**
 * Splits one upstream-shaped options record into Generation Controls, Model Request Options and
 * compatibility body fields (see the module comment). Total: it never fails, and every key of `raw`
 * ends up in exactly one domain (or is a superseded spelling of a setting that did).
 */
export const partition = (raw: ConfigInfo.RequestOptions): Partition => {
  const out = { generation: {} as Mutable<LLMRequest.Generation>, options: {} as Mutable<ModelRequestOptions.Options> }
  const consumed = new Set<string>()
  for (const item of recognisers) {
    let chosen: Patch | undefined
    for (const key of item.keys) {
      if (!Object.hasOwn(raw, key)) continue
      const read = item.read(raw[key])
      if (Option.isNone(read)) continue
      consumed.add(key)
      chosen ??= read.value
    }
    if (chosen === undefined) continue
    // An earlier recogniser that set the same field wins over this one.
    Object.assign(out.generation, { ...chosen.generation, ...out.generation })
    Object.assign(out.options, { ...chosen.options, ...out.options })
  }
  const body = Object.fromEntries(Object.entries(raw).filter(([key]) => !consumed.has(key)))
  return { generation: out.generation, options: out.options, body }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** `over` merged into `base`: nested plain objects key by key, anything else replaced. */
const mergeDeep = (
  base: Readonly<Record<string, unknown>>,
  over: Readonly<Record<string, unknown>>
): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(over)) {
    const prior = out[key]
    out[key] = isPlainObject(prior) && isPlainObject(value) ? mergeDeep(prior, value) : value
  }
  return out
}

const thinkingFields = ["reasoningEffort", "thinking", "thinkingBudget"] as const

/** `over` layered on `base` per field (see the module comment for the thinking group and the body). */
export const merge = (base: Partition, over: Partition): Partition => {
  const thinks = thinkingFields.some((field) => over.options[field] !== undefined)
  const kept = thinks
    ? Object.fromEntries(
        Object.entries(base.options).filter(([field]) => !(thinkingFields as ReadonlyArray<string>).includes(field))
      )
    : base.options
  return {
    generation: { ...base.generation, ...over.generation },
    options: { ...kept, ...over.options },
    body: mergeDeep(base.body, over.body)
  }
}

/** Why a model reference's variant cannot be used. */
export class VariantUnavailableError extends Schema.TaggedError<VariantUnavailableError>()("Core/VariantUnavailable", {
  providerID: Schema.String,
  modelID: Schema.String,
  variant: Schema.String,
  /** `unknown`: the model has no variant of that name; `disabled`: the variant says `disabled: true`. */
  reason: Schema.Literal("unknown", "disabled"),
  message: Schema.String
}) {}

/** The names of the model's selectable variants (not disabled), in config order. */
export const variantNames = (model: Pick<Catalog.Model, "variants">): ReadonlyArray<string> =>
  Object.entries(model.variants)
    .filter(([, value]) => value.disabled !== true)
    .map(([name]) => name)

/**
 * The options record of the model's variant `name`, without its `disabled` key. Fails when the model
 * has no such variant or it is disabled; the message lists the selectable ones.
 */
export const variant = (
  model: Pick<Catalog.Model, "providerID" | "id" | "variants">,
  name: string
): Either.Either<ConfigInfo.RequestOptions, VariantUnavailableError> => {
  const found = Object.hasOwn(model.variants, name) ? model.variants[name] : undefined
  if (found === undefined || found.disabled === true) {
    const available = variantNames(model)
    return Either.left(
      new VariantUnavailableError({
        providerID: model.providerID,
        modelID: model.id,
        variant: name,
        reason: found === undefined ? "unknown" : "disabled",
        message:
          `Model ${model.providerID}/${model.id} has no ${found === undefined ? "" : "enabled "}variant ${Quote.input(name)}` +
          (available.length > 0 ? ` (its variants: ${available.join(", ")})` : " (it has no variants)")
      })
    )
  }
  const { disabled: _disabled, ...options } = found
  return Either.right(options)
}

/** What an agent contributes: its `options`, then its `temperature` and `top_p` over them. */
export interface AgentLayer {
  readonly options?: ConfigInfo.RequestOptions | undefined
  readonly temperature?: number | undefined
  readonly topP?: number | undefined
}

/**
 * The Generation Controls, Model Request Options and compatibility body fields of one Step: the
 * model's options, then `variant` (the selected variant's record, from {@link variant}), then the
 * agent's, with the model's `temperature: false` and `limit.output` applied last (see the module
 * comment). Pure.
 */
export const resolve = (input: {
  readonly model: Pick<Catalog.Model, "options" | "temperature" | "limit">
  readonly variant?: ConfigInfo.RequestOptions | undefined
  readonly agent?: AgentLayer | undefined
}): Partition => {
  const agent = input.agent ?? {}
  const agentControls: Partition = {
    ...empty,
    generation: {
      ...(agent.temperature === undefined ? {} : { temperature: agent.temperature }),
      ...(agent.topP === undefined ? {} : { topP: agent.topP })
    }
  }
  const layered = [
    partition(input.model.options),
    partition(input.variant ?? {}),
    partition(agent.options ?? {}),
    agentControls
  ].reduce(merge, empty)
  const { temperature, ...rest } = layered.generation
  const maxOutputTokens = rest.maxOutputTokens ?? (input.model.limit.output > 0 ? input.model.limit.output : undefined)
  return {
    generation: {
      ...rest,
      ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
      ...(temperature === undefined || !input.model.temperature ? {} : { temperature })
    },
    options: layered.options,
    body: layered.body
  }
}
