export * as StepCost from "./step-cost.js"

/**
 * Step Cost: what one provider request cost, in USD, from its token usage and the catalog pricing of
 * the model that served it (`Catalog.Model.cost`: USD per million tokens). Pure.
 *
 * ```
 *   cost = ( input × rates.input + output × rates.output + reasoning × rates.output
 *          + cache.read × rates.cacheRead + cache.write × rates.cacheWrite ) / 1,000,000
 *   rates = pricing.over200k   when it exists and input + cache.read > 200,000
 *         = pricing            otherwise
 * ```
 *
 * - Usage is in this runtime's disjoint convention (see `LLMEvent.Usage`): `input` excludes the
 *   cache reads and writes, `output` excludes reasoning. So the prompt's size for the tier is
 *   `input + cache.read`, as upstream reckons it (cache writes do not count towards the threshold
 *   there either); once over, the tier's rates price the whole request, not just the excess.
 * - Reasoning tokens are priced as output (models.dev lists no separate reasoning price).
 * - A model without pricing costs 0.
 * - Floating point: the products `tokens × rate` are micro-dollars, summed, then converted to USD
 *   once and rounded to 1e-12 USD (a millionth of a micro-dollar), which drops binary noise such as
 *   `0.30000000000000004` while staying far below any billed amount. Totals add with {@link add},
 *   which rounds the same way, so a session's running total does not accumulate noise either.
 */

import type { Session } from "@opencode-ai/schema"
import type { Catalog } from "../config/catalog.js"

/** Above this many prompt tokens (`input + cache.read`), a model's `over200k` rates apply. */
export const tierThreshold = 200_000

/** Rounds a USD amount to 1e-12 (see the module doc). */
const round = (usd: number): number => Math.round(usd * 1e12) / 1e12

/** The rates that price `tokens` on a model with `pricing`: its `over200k` tier once the prompt is past the threshold. */
export const ratesFor = (pricing: Catalog.Cost, tokens: Session.Tokens): Catalog.CostRates =>
  pricing.over200k !== undefined && tokens.input + tokens.cache.read > tierThreshold ? pricing.over200k : pricing

/** The cost in USD of one request's `tokens` on a model priced `pricing` (0 without pricing). */
export const of = (pricing: Catalog.Cost | undefined, tokens: Session.Tokens): number => {
  if (pricing === undefined) return 0
  const rates = ratesFor(pricing, tokens)
  const micro =
    tokens.input * rates.input +
    (tokens.output + tokens.reasoning) * rates.output +
    tokens.cache.read * rates.cacheRead +
    tokens.cache.write * rates.cacheWrite
  return round(micro / 1_000_000)
}

/** Two USD amounts added, rounded like {@link of}: how session totals accumulate. */
export const add = (a: number, b: number): number => round(a + b)

/** Two usages added field by field. */
export const addTokens = (a: Session.Tokens, b: Session.Tokens): Session.Tokens => ({
  input: a.input + b.input,
  output: a.output + b.output,
  reasoning: a.reasoning + b.reasoning,
  cache: { read: a.cache.read + b.cache.read, write: a.cache.write + b.cache.write }
})
