import * as fs from "node:fs"
import * as path from "node:path"
import { it } from "@effect/vitest"
import { Effect } from "effect"
import { describe, expect } from "vitest"
import type { Catalog } from "../../src/config/catalog.js"
import type { Provider } from "../../src/llm/provider.js"
import { StepCost } from "../../src/session/step-cost.js"
import { LLMScript as S } from "../../src/testing/llm-script.js"
import { baseRequest, collect, setup } from "../llm/harness.js"

/**
 * Step Cost on recorded usage: each fixture is replayed through the real adapter over loopback HTTP,
 * so the usage priced is exactly what a Step would record for it. Prices are the vendors' list prices
 * (USD per million tokens) in the catalog's shape.
 */
const fixture = (name: string) => fs.readFileSync(path.join(__dirname, "../fixtures/llm", name), "utf8")

const usageOf = (protocol: Provider.Protocol, name: string) =>
  Effect.gen(function* () {
    const { server, client } = yield* setup(protocol)
    yield* server.enqueue(S.raw(fixture(name)))
    const events = yield* collect(client.stream(baseRequest()))
    const usage = events.find((event) => event.type === "usage")
    if (usage?.type !== "usage") return yield* Effect.dieMessage(`${name} has no usage`)
    return usage.tokens
  })

const gpt4oMini: Catalog.Cost = { input: 0.15, output: 0.6, cacheRead: 0.075, cacheWrite: 0 }
const claudeSonnet: Catalog.Cost = {
  input: 3,
  output: 15,
  cacheRead: 0.3,
  cacheWrite: 3.75,
  over200k: { input: 6, output: 22.5, cacheRead: 0.6, cacheWrite: 7.5 }
}
const deepseekReasoner: Catalog.Cost = { input: 0.55, output: 2.19, cacheRead: 0.14, cacheWrite: 0 }

const cents = (usd: number) => Math.round(usd * 100)

describe("StepCost.of on recorded usage", () => {
  it.scoped("OpenAI: uncached input, output and cache reads each at their own rate", () =>
    Effect.gen(function* () {
      const tokens = yield* usageOf("openai-compatible", "openai-text-usage.sse")
      expect(tokens).toEqual({ input: 425, output: 9, reasoning: 0, cache: { read: 1920, write: 0 } })
      // 425 × 0.15 + 9 × 0.6 + 1920 × 0.075 = 63.75 + 5.4 + 144 = 213.15 micro-dollars.
      expect(StepCost.of(gpt4oMini, tokens)).toBe(0.00021315)
    })
  )

  it.scoped("Anthropic: cache reads and cache writes priced apart from fresh input", () =>
    Effect.gen(function* () {
      const tokens = yield* usageOf("anthropic", "anthropic-thinking-tool.sse")
      expect(tokens).toEqual({ input: 412, output: 187, reasoning: 0, cache: { read: 9216, write: 2048 } })
      // 412 × 3 + 187 × 15 + 9216 × 0.3 + 2048 × 3.75 = 1236 + 2805 + 2764.8 + 7680 = 14485.8 micro-dollars.
      expect(StepCost.of(claudeSonnet, tokens)).toBe(0.0144858)
      // Without the cache rates the same usage would cost 1236 + 2805 = 4041 micro-dollars.
      expect(StepCost.of({ ...claudeSonnet, cacheRead: 0, cacheWrite: 0 }, tokens)).toBe(0.004041)
    })
  )

  it.scoped("reasoning tokens are priced as output", () =>
    Effect.gen(function* () {
      const tokens = yield* usageOf("openai-compatible", "openai-reasoning-content.sse")
      expect(tokens).toEqual({ input: 64, output: 12, reasoning: 28, cache: { read: 0, write: 0 } })
      // 64 × 0.55 + (12 + 28) × 2.19 = 35.2 + 87.6 = 122.8 micro-dollars.
      expect(StepCost.of(deepseekReasoner, tokens)).toBe(0.0001228)
    })
  )
})

describe("StepCost.of", () => {
  it("a model with no pricing costs 0", () => {
    expect(
      StepCost.of(undefined, { input: 1_000_000, output: 1_000_000, reasoning: 0, cache: { read: 0, write: 0 } })
    ).toBe(0)
  })

  it("past 200,000 prompt tokens (input + cache reads) the over200k rates price the whole request", () => {
    const big = { input: 150_000, output: 4_000, reasoning: 1_000, cache: { read: 60_000, write: 10_000 } }
    // 150,000 × 6 + 5,000 × 22.5 + 60,000 × 0.6 + 10,000 × 7.5 = 900,000 + 112,500 + 36,000 + 75,000 µ$.
    expect(StepCost.of(claudeSonnet, big)).toBe(1.1235)
    expect(cents(StepCost.of(claudeSonnet, big))).toBe(112)
    // The same usage on the base rates would be 450,000 + 75,000 + 18,000 + 37,500 µ$ = $0.5805.
    expect(StepCost.of({ ...claudeSonnet, over200k: undefined }, big)).toBe(0.5805)
  })

  it("exactly 200,000 prompt tokens stays on the base rates, and cache writes do not count towards the tier", () => {
    const at = { input: 140_000, output: 0, reasoning: 0, cache: { read: 60_000, write: 50_000 } }
    expect(StepCost.ratesFor(claudeSonnet, at)).toBe(claudeSonnet)
    // 140,000 × 3 + 60,000 × 0.3 + 50,000 × 3.75 = 420,000 + 18,000 + 187,500 µ$.
    expect(StepCost.of(claudeSonnet, at)).toBe(0.6255)
    const over = { ...at, input: 140_001 }
    expect(StepCost.ratesFor(claudeSonnet, over)).toBe(claudeSonnet.over200k)
  })

  it("a model without an over200k tier keeps its rates however large the prompt", () => {
    const huge = { input: 900_000, output: 0, reasoning: 0, cache: { read: 0, write: 0 } }
    expect(StepCost.of(gpt4oMini, huge)).toBe(0.135)
  })

  it("sums are free of binary noise: ten steps of 0.1 + 0.2 cents add to exactly 3 cents", () => {
    // 1,000 input and 2,000 output tokens at $1 per million each: every step costs 0.001 + 0.002 USD.
    const step = StepCost.of(
      { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
      {
        input: 1_000,
        output: 2_000,
        reasoning: 0,
        cache: { read: 0, write: 0 }
      }
    )
    expect(step).toBe(0.003)
    let total = 0
    let naive = 0
    for (let i = 0; i < 10; i++) {
      total = StepCost.add(total, step)
      naive += 0.001 + 0.002
    }
    expect(naive).not.toBe(0.03)
    expect(total).toBe(0.03)
  })
})
