export * as ContextBudget from "./context-budget.js"

import type { SessionMessages } from "@opencode-ai/schema"
import type { Catalog } from "../config/catalog.js"
import type { Config } from "../config/config.js"
import type { LLMRequest } from "../llm/llm-request.js"
import { LoweringMemo } from "../llm/lowering-memo.js"
import { PrefixMemo } from "../llm/prefix-memo.js"

/**
 * How much of a model's context a Step's request may fill, and how full the next request would be.
 *
 * - The **usable context** is the model's `limit.context` less its output limit (room for the answer)
 *   and the `compaction.reserved` buffer (default: a tenth of the context, at most 20,000 tokens).
 *   A model without a known context limit has none: nothing is compacted ahead of time for it (an
 *   overflow the provider reports is still recovered).
 * - The **projected input** of a request is counted from what the provider reported for the last
 *   Step in the active history (its input, cache and output tokens: that request plus its answer),
 *   plus an estimate of everything added since (that Step's tool results and the later messages).
 *   Only when no such Step exists (a fresh session, or right after a compaction) is the whole request
 *   estimated. The estimate is about four characters per token, deliberately plain: it only has to
 *   cover what was added since the provider last counted.
 */

/** Characters per estimated token. */
const charsPerToken = 4

/** The `compaction.reserved` default for a model with this context: a tenth of it, at most 20,000. */
export const defaultReserved = (context: number) => Math.min(20_000, Math.floor(context / 10))

/**
 * The usable context of `model` in tokens, or undefined when its context limit is unknown (0) or the
 * limits leave nothing usable.
 */
export const usable = (model: Catalog.Model, compaction: Config.Compaction): number | undefined => {
  const context = model.limit.context
  if (context <= 0) return undefined
  const room = context - model.limit.output - (compaction.reserved ?? defaultReserved(context))
  return room > 0 ? room : undefined
}

/** The estimated tokens of a text. */
export const estimate = (text: string): number => Math.ceil(text.length / charsPerToken)

/**
 * What an attached file (an image or a document sent natively) is counted as: providers bill images
 * by their size in pixels, not by the length of their encoding, so a flat figure in the range they
 * charge for a typical screenshot stands in for it.
 */
export const fileTokens = 1_500

type Part = LLMRequest.Message extends infer M
  ? M extends { readonly content: ReadonlyArray<infer P> }
    ? P
    : never
  : never

const partTokens = (part: Part): number => {
  switch (part.type) {
    case "text":
    case "reasoning":
      return estimate(part.text)
    case "tool-call":
      return estimate(part.name + JSON.stringify(part.input))
    case "tool-result":
      return estimate(part.name + part.output) + (part.files?.length ?? 0) * fileTokens
    case "file":
      return fileTokens
    default:
      return 0
  }
}

const messageTokens = (message: LLMRequest.Message): number => {
  if (message.role === "instruction-update") return estimate(message.text)
  let total = 0
  for (const part of message.content) total += partTokens(part)
  return total
}

/**
 * Each request message's estimate, kept with the message (see LoweringMemo: the messages of an
 * unchanged history are the same objects), and a list's running total, kept for the list that
 * continues it (see PrefixMemo).
 */
const estimates = LoweringMemo.make<LLMRequest.Message, number>()
const totals = PrefixMemo.make<LLMRequest.Message, number, number>()

/** The estimated tokens of provider-neutral messages. */
export const estimateMessages = (messages: ReadonlyArray<LLMRequest.Message>): number =>
  totals.lower(
    messages,
    [],
    0,
    (total, message) => total + (estimates.get(message, null) ?? estimates.set(message, null, messageTokens(message))),
    (total, out) => out.push(total)
  )[0]!

/** The estimated tokens of a whole request: system text, tool definitions and messages. */
export const estimateRequest = (request: LLMRequest.Request): number =>
  estimate(request.system) +
  (request.tools ?? []).reduce(
    (sum, tool) => sum + estimate(tool.name + tool.description + JSON.stringify(tool.inputSchema)),
    0
  ) +
  estimateMessages(request.messages)

/** The tokens a provider reported for one Step: its whole request plus its answer; 0 when none were reported. */
const reported = (tokens: SessionMessages.SessionMessageAssistant["tokens"]): number =>
  tokens === undefined ? 0 : tokens.input + tokens.cache.read + tokens.cache.write + tokens.output

/**
 * Where the latest assistant message that reported its tokens is in a history (-1: none), kept for
 * the history that continues it (see PrefixMemo): a provider that never reports them would otherwise
 * have every Step look through the whole history.
 */
const reportedAt = PrefixMemo.make<
  SessionMessages.SessionMessage,
  number,
  { readonly seen: number; readonly latest: number }
>()

const latestReported = (history: ReadonlyArray<SessionMessages.SessionMessage>): number =>
  reportedAt.lower(
    history,
    [],
    { seen: 0, latest: -1 },
    (state, message) => ({
      seen: state.seen + 1,
      latest:
        message.type === "assistant" && message.error === undefined && reported(message.tokens) > 0
          ? state.seen
          : state.latest
    }),
    (state, out) => out.push(state.latest)
  )[0]!

/**
 * The projected input tokens of `request`, built from `history` (see the module doc). `lower` turns
 * a slice of the history into the request messages it becomes, as the Model Context lowers it;
 * `local` are the request's step-local messages after the history (e.g. the max-steps turn).
 */
export const projected = (input: {
  readonly history: ReadonlyArray<SessionMessages.SessionMessage>
  readonly request: LLMRequest.Request
  readonly local: ReadonlyArray<LLMRequest.Message>
  readonly lower: (slice: ReadonlyArray<SessionMessages.SessionMessage>) => ReadonlyArray<LLMRequest.Message>
}): number => {
  const { history, lower } = input
  const index = latestReported(history)
  const message = history[index]
  if (message === undefined || message.type !== "assistant") return estimateRequest(input.request)
  // That Step's answer is in its reported tokens; its tool results and everything after it are not.
  const own = lower([message]).filter((lowered) => lowered.role === "tool")
  return (
    reported(message.tokens) +
    estimateMessages(own) +
    estimateMessages(lower(history.slice(index + 1))) +
    estimateMessages(input.local)
  )
}
