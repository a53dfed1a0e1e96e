export * as InstructionLowering from "./instruction-lowering.js"

/**
 * Instruction Update lowering for protocols without a native chronological instruction role
 * (OpenAI-compatible chat completions, Anthropic Messages and the Gemini API: their system prompt is a
 * prefix, not a message that can sit in the middle of the conversation).
 *
 * Each update becomes a wrapped text block:
 *
 * ```
 * <instruction-update>
 * …the update text, unchanged…
 * </instruction-update>
 * ```
 *
 * placed in the user turn of the step it was admitted for, keeping chronology:
 * - the blocks of all updates since the previous user turn open the next user message, in order,
 *   before that message's own parts;
 * - when an assistant message (or the end of the history) comes before any user message, a synthetic
 *   user message holding just the blocks is inserted there;
 * - tool results are never separated from the assistant message that called them: pending blocks
 *   wait until after them.
 *
 * The result contains no `instruction-update` messages.
 */

import type * as LLMRequest from "./llm-request.js"
import * as PrefixMemo from "./prefix-memo.js"

export const openTag = "<instruction-update>"
export const closeTag = "</instruction-update>"

/** The wrapped block one Instruction Update lowers to. */
export const wrap = (text: string): string => `${openTag}\n${text}\n${closeTag}`

export type Lowered = LLMRequest.UserMessage | LLMRequest.AssistantMessage | LLMRequest.ToolMessage

/** Updates waiting for the next user turn: none, most of the time. */
const nonePending: ReadonlyArray<LLMRequest.TextPart> = []

const lowerings = PrefixMemo.make<LLMRequest.Message, Lowered, ReadonlyArray<LLMRequest.TextPart>>()

const step = (pending: ReadonlyArray<LLMRequest.TextPart>, message: LLMRequest.Message, out: Array<Lowered>) => {
  switch (message.role) {
    case "instruction-update":
      return [...pending, { type: "text" as const, text: wrap(message.text) }]
    case "user":
      out.push(pending.length === 0 ? message : { role: "user", content: [...pending, ...message.content] })
      return nonePending
    case "assistant":
      if (pending.length > 0) out.push({ role: "user", content: pending })
      out.push(message)
      return nonePending
    case "tool":
      out.push(message)
      return pending
  }
}

const end = (pending: ReadonlyArray<LLMRequest.TextPart>, out: Array<Lowered>) => {
  if (pending.length > 0) out.push({ role: "user", content: pending })
}

/**
 * The history with every Instruction Update lowered into a user turn (see the module comment). The
 * lowering of a history that continues one lowered before is reused as far as it is the same (see
 * PrefixMemo): a merged user turn stays the same object.
 */
export const lower = (messages: ReadonlyArray<LLMRequest.Message>): ReadonlyArray<Lowered> =>
  lowerings.lower(messages, [], nonePending, step, end)
