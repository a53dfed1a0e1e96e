export * as ToolOutputPrune from "./tool-output-prune.js"

import type { SessionMessages } from "@opencode-ai/schema"
import { LoweringMemo } from "../llm/lowering-memo.js"
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

/**
 * `history` with the outputs beyond the recent `windowTokens` replaced; the same array when nothing is
 * pruned. A message pruned the same way at an earlier Step is the same object again (see LoweringMemo),
 * so its lowering is reused too.
 */
export const prune = (
  history: ReadonlyArray<SessionMessages.SessionMessage>,
  windowTokens: number
): ReadonlyArray<SessionMessages.SessionMessage> => {
  let kept = 0
  let crossed = false
  let result: Array<SessionMessages.SessionMessage> | undefined
  for (let index = history.length - 1; index >= 0; index--) {
    const message = history[index]!
    if (message.type !== "assistant") continue
    const positions: Array<number> = []
    for (let at = message.content.length - 1; at >= 0; at--) {
      const item = message.content[at]!
      if (item.type !== "tool" || item.state.status !== "completed" || protectedTools.has(item.name)) continue
      const tokens = outputTokens(item.state.content)
      if (!crossed && kept + tokens <= windowTokens) {
        kept += tokens
        continue
      }
      crossed = true
      if (tokens > markerTokens) positions.push(at)
    }
    if (positions.length > 0) {
      result ??= [...history]
      const key = positions.join(",")
      result[index] = prunedCopies.get(message, key) ?? prunedCopies.set(message, key, withPruned(message, positions))
    }
  }
  return result ?? history
}
