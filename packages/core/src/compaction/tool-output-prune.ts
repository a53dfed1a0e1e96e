export * as ToolOutputPrune from "./tool-output-prune.js"

import type { SessionMessages } from "@opencode-ai/schema"
import { LoweringMemo } from "../llm/lowering-memo.js"
import { PrefixMemo } from "../llm/prefix-memo.js"
import { CompactionPrompt } from "../prompt/compaction-prompt.js"
import { ContextBudget } from "./context-budget.js"

/**
 * Pruning (`compaction.prune`): in the history a Step's request is built from, the outputs of older
 * completed tool calls are replaced by a short marker ({@link CompactionPrompt.prunedOutput}) once
 * the newer tool outputs already fill the recent window. It changes only the projection: the
 * durable record and the transcript keep every output, and the model can run the tool again.
 *
 * Walking from the newest call back, outputs are kept while their running total stays within the
 * window; the first output that would cross it and every older one are pruned. So pruning only ever
 * moves forward as the session grows (an output once pruned stays pruned), which keeps the request
 * prefix stable between Steps. Outputs of the `skill` tool (instructions the model asked for) are
 * never pruned, nor are outputs already smaller than the marker.
 */

/** Tools whose output is never pruned. */
const protectedTools: ReadonlySet<string> = new Set(["skill"])

/** The recent window in tokens for a model with this usable context: half of it, at most 40,000. */
export const window = (usable: number | undefined): number =>
  usable === undefined ? 40_000 : Math.min(40_000, Math.floor(usable / 2))

const outputTokens = (content: ReadonlyArray<{ readonly type: string; readonly text?: string }>) =>
  content.reduce((sum, part) => sum + (part.type === "text" ? ContextBudget.estimate(part.text ?? "") : 0), 0)

const markerTokens = ContextBudget.estimate(CompactionPrompt.prunedOutput)

/** A message with some of its tool outputs pruned, by the positions pruned (`"2,5"`): the same copy while they stay so. */
const prunedCopies = LoweringMemo.make<SessionMessages.SessionMessageAssistant, SessionMessages.SessionMessage>()

/** `message` with the outputs of the tool calls at `positions` replaced by the marker. */
const withPruned = (
  message: SessionMessages.SessionMessageAssistant,
  positions: ReadonlyArray<number>
): SessionMessages.SessionMessage => {
  const content = [...message.content]
  for (const at of positions) {
    const item = content[at]!
    if (item.type !== "tool" || item.state.status !== "completed") continue
    content[at] = {
      ...item,
      state: { ...item.state, content: [{ type: "text", text: CompactionPrompt.prunedOutput }] }
    }
  }
  return { ...message, content }
}

/** A prunable output of a message: where it is in the message's content, and its tokens. */
interface Output {
  readonly at: number
  readonly tokens: number
}

/** Each message's prunable outputs, newest first (see LoweringMemo). */
const outputsOf = LoweringMemo.make<SessionMessages.SessionMessage, ReadonlyArray<Output>>()

const outputs = (message: SessionMessages.SessionMessage): ReadonlyArray<Output> => {
  const known = outputsOf.get(message, null)
  if (known !== undefined) return known
  const found: Array<Output> = []
  if (message.type === "assistant") {
    for (let at = message.content.length - 1; at >= 0; at--) {
      const item = message.content[at]!
      if (item.type !== "tool" || item.state.status !== "completed" || protectedTools.has(item.name)) continue
      found.push({ at, tokens: outputTokens(item.state.content) })
    }
  }
  return outputsOf.set(message, null, found)
}

/** `message` with the outputs at `positions` pruned: the same copy while they stay so; itself for none. */
const pruned = (message: SessionMessages.SessionMessage, positions: ReadonlyArray<number>) => {
  if (positions.length === 0 || message.type !== "assistant") return message
  const key = positions.join(",")
  return prunedCopies.get(message, key) ?? prunedCopies.set(message, key, withPruned(message, positions))
}

/** `message` with every output larger than the marker pruned (it is older than the window). */
const allPruned = (message: SessionMessages.SessionMessage) =>
  pruned(
    message,
    outputs(message)
      .filter((output) => output.tokens > markerTokens)
      .map((output) => output.at)
  )

// The running total of the outputs' tokens through each message, and the messages before the window
// all pruned, kept for the history that continues them (see PrefixMemo): a Step looks only at what
// is new, and at the message where the window begins.
const totals = PrefixMemo.make<SessionMessages.SessionMessage, number, number>()
const olders = PrefixMemo.make<SessionMessages.SessionMessage, SessionMessages.SessionMessage, undefined>()

/**
 * `history` with the outputs beyond the recent `windowTokens` replaced; the same array when nothing is
 * pruned. A message pruned the same way at an earlier Step is the same object again (see LoweringMemo),
 * so its lowering is reused too.
 */
export const prune = (
  history: ReadonlyArray<SessionMessages.SessionMessage>,
  windowTokens: number
): ReadonlyArray<SessionMessages.SessionMessage> => {
  const through = totals.lower(history, [], 0, (total, message, out) => {
    let next = total
    for (const output of outputs(message)) next += output.tokens
    out.push(next)
    return next
  })
  const total = through[through.length - 1] ?? 0
  if (total <= windowTokens) return history
  // The newest message whose outputs, with all newer ones, exceed the window: the window begins in it.
  const after = (index: number) => total - through[index]!
  let low = 0
  let high = history.length - 1
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (after(middle - 1) > windowTokens) low = middle
    else high = middle - 1
  }
  const start = low
  let kept = after(start)
  let crossed = false
  const positions: Array<number> = []
  for (const output of outputs(history[start]!)) {
    if (!crossed && kept + output.tokens <= windowTokens) {
      kept += output.tokens
      continue
    }
    crossed = true
    if (output.tokens > markerTokens) positions.push(output.at)
  }
  const result = olders.lower(history.slice(0, start), [], undefined, (_, message, out) => {
    out.push(allPruned(message))
    return undefined
  })
  result.push(pruned(history[start]!, positions))
  for (let index = start + 1; index < history.length; index++) result.push(history[index]!)
  return result.every((message, index) => message === history[index]) ? history : result
}
