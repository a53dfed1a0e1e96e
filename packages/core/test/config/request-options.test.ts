import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import type { Catalog } from "../../src/config/catalog.js"
import { RequestOptions } from "../../src/config/request-options.js"

/**
 * The shared ingestion adapter: one upstream-shaped options record → Generation Controls, Model
 * Request Options and compatibility body fields; and the layering of model, variant and agent.
 */

const model = (overrides: Partial<Catalog.Model> = {}): Catalog.Model => ({
  id: "m",
  apiID: "m",
  providerID: "p",
  name: "m",
  toolCall: true,
  reasoning: false,
  limit: { context: 100_000, output: 4000 },
  input: ["text"],
  output: ["text"],
  status: "active",
  temperature: true,
  options: {},
  variants: {},
  headers: {},
  ...overrides
})

describe("RequestOptions.partition", () => {
  it("splits AI SDK keys into Generation Controls, Model Request Options and body fields", () => {
    const parts = RequestOptions.partition({
      temperature: 0.3,
      topP: 0.8,
      topK: 40,
      maxOutputTokens: 2048,
      presencePenalty: 0.1,
      frequencyPenalty: 0.2,
      stopSequences: ["END"],
      seed: 7,
      reasoningEffort: "high",
      reasoningSummary: "auto",
      textVerbosity: "low",
      store: false,
      include: ["reasoning.encrypted_content"],
      promptCacheKey: "k1",
      serviceTier: "flex",
      parallelToolCalls: false,
      cacheControl: { type: "ephemeral", ttl: "1h" },
      provider: { order: ["a", "b"] },
      safe_prompt: true
    })
    assert.deepStrictEqual(parts.generation, {
      temperature: 0.3,
      topP: 0.8,
      topK: 40,
      maxOutputTokens: 2048,
      presencePenalty: 0.1,
      frequencyPenalty: 0.2,
      stopSequences: ["END"],
      seed: 7
    })
    assert.deepStrictEqual(parts.options, {
      reasoningEffort: "high",
      reasoningSummary: "auto",
      textVerbosity: "low",
      store: false,
      include: ["reasoning.encrypted_content"],
      promptCacheKey: "k1",
      serviceTier: "flex",
      parallelToolCalls: false,
      cacheTtl: "1h"
    })
    assert.deepStrictEqual(parts.body, { provider: { order: ["a", "b"] }, safe_prompt: true })
  })

  it("reads the legacy snake_case spellings; the AI SDK spelling wins when both are set", () => {
    const parts = RequestOptions.partition({
      top_p: 0.5,
      top_k: 3,
      max_tokens: 100,
      stop: "###",
      reasoning_effort: "low",
      reasoning_summary: "concise",
      verbosity: "high",
      prompt_cache_key: "legacy",
      service_tier: "priority",
      parallel_tool_calls: true,
      presence_penalty: 1,
      frequency_penalty: -1,
      temperature: 1
    })
    assert.deepStrictEqual(parts.generation, {
      topP: 0.5,
      topK: 3,
      maxOutputTokens: 100,
      stopSequences: ["###"],
      presencePenalty: 1,
      frequencyPenalty: -1,
      temperature: 1
    })
    assert.deepStrictEqual(parts.options, {
      reasoningEffort: "low",
      reasoningSummary: "concise",
      textVerbosity: "high",
      promptCacheKey: "legacy",
      serviceTier: "priority",
      parallelToolCalls: true
    })
    assert.deepStrictEqual(parts.body, {})
    const both = RequestOptions.partition({ topP: 0.9, top_p: 0.1, maxTokens: 10, maxOutputTokens: 20 })
    assert.deepStrictEqual(both, { generation: { topP: 0.9, maxOutputTokens: 20 }, options: {}, body: {} })
  })

  it("Anthropic thinking and Gemini thinkingConfig become thinking fields; the first recogniser wins", () => {
    assert.deepStrictEqual(RequestOptions.partition({ thinking: { type: "enabled", budgetTokens: 8000 } }).options, {
      thinking: true,
      thinkingBudget: 8000
    })
    assert.deepStrictEqual(RequestOptions.partition({ thinking: { type: "enabled", budget_tokens: 5000 } }).options, {
      thinking: true,
      thinkingBudget: 5000
    })
    assert.deepStrictEqual(RequestOptions.partition({ thinking: { type: "disabled" } }).options, { thinking: false })
    assert.deepStrictEqual(
      RequestOptions.partition({ thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } }).options,
      { thinkingBudget: 1024, includeThoughts: true }
    )
    assert.deepStrictEqual(RequestOptions.partition({ thinkingConfig: { thinkingBudget: 0 } }).options, {
      thinking: false
    })
    assert.deepStrictEqual(
      RequestOptions.partition({ thinkingConfig: { thinkingBudget: -1, thinkingLevel: "high" } }).options,
      { thinking: true, reasoningEffort: "high" }
    )
    assert.deepStrictEqual(
      RequestOptions.partition({
        thinking: { type: "enabled", budgetTokens: 2000 },
        thinkingConfig: { thinkingBudget: 9000, includeThoughts: false }
      }).options,
      { thinking: true, thinkingBudget: 2000, includeThoughts: false }
    )
    assert.deepStrictEqual(RequestOptions.partition({ disableParallelToolUse: true }).options, {
      parallelToolCalls: false
    })
  })

  it("an unknown key, or a known one of an unexpected shape, passes through as a body field, as written", () => {
    const odd = {
      thinking: { type: "adaptive" },
      reasoningEffort: "ultra",
      temperature: "warm",
      topK: 2.5,
      cacheControl: { type: "ephemeral", ttl: "1d" },
      thinkingConfig: { thinkingBudget: 100, extra: 1 },
      chat_template_kwargs: { enable_thinking: false }
    }
    assert.deepStrictEqual(RequestOptions.partition(odd), { generation: {}, options: {}, body: odd })
  })
})

describe("RequestOptions.resolve", () => {
  it("defaults maxOutputTokens to the model's output limit and nothing else", () => {
    assert.deepStrictEqual(RequestOptions.resolve({ model: model() }), {
      generation: { maxOutputTokens: 4000 },
      options: {},
      body: {}
    })
    assert.deepStrictEqual(
      RequestOptions.resolve({ model: model({ limit: { context: 0, output: 0 } }) }).generation,
      {}
    )
  })

  it("layers the model's options, then the variant, then the agent's options, temperature and top_p", () => {
    const resolved = RequestOptions.resolve({
      model: model({
        options: { temperature: 0.1, reasoningEffort: "low", store: false, extra: { a: 1, b: { c: 1 } } }
      }),
      variant: { reasoningEffort: "high", maxOutputTokens: 9000, extra: { b: { d: 2 } } },
      agent: { options: { temperature: 0.4, topP: 0.2, textVerbosity: "low" }, topP: 0.7 }
    })
    assert.deepStrictEqual(resolved, {
      generation: { temperature: 0.4, topP: 0.7, maxOutputTokens: 9000 },
      options: { reasoningEffort: "high", store: false, textVerbosity: "low" },
      body: { extra: { a: 1, b: { c: 1, d: 2 } } }
    })
    assert.deepStrictEqual(
      RequestOptions.resolve({ model: model({ options: { temperature: 0.1 } }), agent: { temperature: 0.9 } })
        .generation.temperature,
      0.9
    )
  })

  it("a layer that decides how much to think replaces the earlier layers' thinking fields", () => {
    const resolved = RequestOptions.resolve({
      model: model({ options: { thinking: { type: "enabled", budgetTokens: 4000 }, includeThoughts: true } }),
      variant: { reasoningEffort: "high" }
    })
    assert.deepStrictEqual(resolved.options, { reasoningEffort: "high" })
    assert.deepStrictEqual(resolved.body, { includeThoughts: true })
  })

  it("a model with temperature: false gets no temperature, whoever set one", () => {
    const resolved = RequestOptions.resolve({
      model: model({ temperature: false, options: { temperature: 0.2 } }),
      variant: { temperature: 0.3 },
      agent: { temperature: 0.5, topP: 0.9 }
    })
    assert.deepStrictEqual(resolved.generation, { topP: 0.9, maxOutputTokens: 4000 })
  })
})

describe("RequestOptions.variant", () => {
  const withVariants = model({
    variants: { high: { reasoningEffort: "high" }, max: { reasoningEffort: "max", disabled: true } }
  })

  it("is the variant's options without its disabled key", () => {
    assert.deepStrictEqual(RequestOptions.variant(withVariants, "high"), Either.right({ reasoningEffort: "high" }))
    assert.deepStrictEqual(RequestOptions.variantNames(withVariants), ["high"])
    const enabled = model({ variants: { x: { disabled: false, seed: 1 } } })
    assert.deepStrictEqual(RequestOptions.variant(enabled, "x"), Either.right({ seed: 1 }))
  })

  it("an unknown or disabled variant fails, naming the selectable ones", () => {
    const unknown = Either.flip(RequestOptions.variant(withVariants, "low"))
    assert.isTrue(Either.isRight(unknown))
    const error = Either.getOrThrow(unknown)
    assert.strictEqual(error._tag, "Core/VariantUnavailable")
    assert.strictEqual(error.reason, "unknown")
    assert.include(error.message, 'no variant "low" (its variants: high)')
    const disabled = Either.getOrThrow(Either.flip(RequestOptions.variant(withVariants, "max")))
    assert.strictEqual(disabled.reason, "disabled")
    assert.include(disabled.message, 'no enabled variant "max"')
    const none = Either.getOrThrow(Either.flip(RequestOptions.variant(model(), "high")))
    assert.include(none.message, "(it has no variants)")
    // Inherited object keys are not variants.
    assert.isTrue(Either.isLeft(RequestOptions.variant(model(), "toString")))
  })
})
