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

export const openTag = "<instruction-update>"
export const closeTag = "</instruction-update>"

/** The wrapped block one Instruction Update lowers to. */
export const wrap = (text: string): string => `${openTag}\n${text}\n${closeTag}`

export type Lowered = LLMRequest.UserMessage | LLMRequest.AssistantMessage | LLMRequest.ToolMessage

/** The history with every Instruction Update lowered into a user turn (see the module comment). */
export const lower = (messages: ReadonlyArray<LLMRequest.Message>): ReadonlyArray<Lowered> => {
  const out: Array<Lowered> = []
  let pending: Array<LLMRequest.TextPart> = []
  const flush = () => {
    if (pending.length === 0) return
    out.push({ role: "user", content: pending })
    pending = []
  }
  for (const message of messages) {
    switch (message.role) {
      case "instruction-update":
        pending.push({ type: "text", text: wrap(message.text) })
        break
      case "user":
        out.push(pending.length === 0 ? message : { role: "user", content: [...pending, ...message.content] })
        pending = []
        break
      case "assistant":
        flush()
        out.push(message)
        break
      case "tool":
        out.push(message)
        break
    }
  }
  flush()
  return out
}
