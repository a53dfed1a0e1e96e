export * as ModelRequestOptions from "./model-request-options.js"

/**
 * Model Request Options: provider-semantic model settings, typed and named independently of any
 * wire. They are selected from the Catalog (the model's `options`, the Session's variant, the agent's
 * `options`; see `RequestOptions` in config) and reach the request as `LLMRequest.Request.options`;
 * the selected protocol adapter alone decides how (or whether) each one is written on its wire.
 *
 * Every field is optional: absent means the provider's default, and an adapter whose protocol has no
 * way to say a setting leaves it out (each adapter's module comment lists what it encodes). They are
 * distinct from Generation Controls (provider-neutral sampling and output limits,
 * `LLMRequest.Generation`) and from compatibility body fields (anything else, sent as given through
 * `LLMRequest.Request.providerOptions`).
 *
 * The fields, and the upstream (AI SDK / models.dev) keys they are read from:
 * - `reasoningEffort`: how hard a reasoning model thinks. `reasoningEffort`, `reasoning_effort`, and
 *   Gemini's `thinkingConfig.thinkingLevel`;
 * - `reasoningSummary`: whether and how the provider summarises the reasoning. `reasoningSummary`,
 *   `reasoning_summary`;
 * - `thinking`: extended thinking explicitly on or off. Anthropic's `thinking.type` (`enabled` /
 *   `disabled`), and Gemini's `thinkingConfig.thinkingBudget` 0 (off) or -1 (on, provider-sized);
 * - `thinkingBudget`: tokens the model may spend thinking. Anthropic's `thinking.budgetTokens` (or
 *   `budget_tokens`), Gemini's `thinkingConfig.thinkingBudget`;
 * - `includeThoughts`: whether thought text is returned. Gemini's `thinkingConfig.includeThoughts`;
 * - `textVerbosity`: how long the visible answer should be. `textVerbosity`, `verbosity`;
 * - `store`: whether the provider keeps the exchange. `store`;
 * - `include`: extra outputs of OpenAI's Responses API (e.g. `reasoning.encrypted_content`). `include`;
 * - `promptCacheKey`: the provider's prompt-cache routing key. `promptCacheKey`, `prompt_cache_key`;
 * - `cacheTtl`: how long cached prompt prefixes live. Anthropic's `cacheControl: {type: "ephemeral", ttl}`;
 * - `serviceTier`: the provider's processing tier. `serviceTier`, `service_tier`;
 * - `parallelToolCalls`: whether one step may call several tools. `parallelToolCalls`,
 *   `parallel_tool_calls`, and Anthropic's `disableParallelToolUse` (negated).
 */

import { Schema } from "effect"

const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())

/**
 * Reasoning effort, in OpenAI's vocabulary (the widest one): `none` turns reasoning off where the
 * model allows it, `xhigh` and `max` are the extended levels some providers add.
 */
export const ReasoningEffort = Schema.Literal("none", "minimal", "low", "medium", "high", "xhigh", "max")
export type ReasoningEffort = typeof ReasoningEffort.Type

/** A reasoning summary: `auto` lets the provider choose between `concise` and `detailed`. */
export const ReasoningSummary = Schema.Literal("auto", "concise", "detailed")
export type ReasoningSummary = typeof ReasoningSummary.Type

export const TextVerbosity = Schema.Literal("low", "medium", "high")
export type TextVerbosity = typeof TextVerbosity.Type

/** A prompt-cache lifetime: `5m` is Anthropic's default, `1h` its extended one. */
export const CacheTtl = Schema.Literal("5m", "1h")
export type CacheTtl = typeof CacheTtl.Type

/** The Model Request Options of one request. */
export const Options = Schema.Struct({
  reasoningEffort: Schema.optionalWith(ReasoningEffort, { exact: true }),
  reasoningSummary: Schema.optionalWith(ReasoningSummary, { exact: true }),
  /** `false` turns thinking off whatever else is set; `true` turns it on (with a provider-sized budget). */
  thinking: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** Tokens the model may spend thinking; it implies `thinking: true` unless that is `false`. */
  thinkingBudget: Schema.optionalWith(NonNegativeInt, { exact: true }),
  includeThoughts: Schema.optionalWith(Schema.Boolean, { exact: true }),
  textVerbosity: Schema.optionalWith(TextVerbosity, { exact: true }),
  store: Schema.optionalWith(Schema.Boolean, { exact: true }),
  include: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  promptCacheKey: Schema.optionalWith(Schema.String, { exact: true }),
  cacheTtl: Schema.optionalWith(CacheTtl, { exact: true }),
  /** The provider's own tier name (OpenAI `auto`, `default`, `flex`, `priority`; Anthropic `auto`, `standard_only`). */
  serviceTier: Schema.optionalWith(Schema.String, { exact: true }),
  parallelToolCalls: Schema.optionalWith(Schema.Boolean, { exact: true })
}).annotations({ identifier: "ModelRequestOptions" })
export interface Options extends Schema.Schema.Type<typeof Options> {}
