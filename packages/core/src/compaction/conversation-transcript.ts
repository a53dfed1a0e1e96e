export * as ConversationTranscript from "./conversation-transcript.js"

import { SessionError, type SessionMessages } from "@opencode-ai/schema"
import { ContextBudget } from "./context-budget.js"

/**
 * The conversation as plain text, for a compaction: what the compaction model summarizes, and the
 * newest part that is kept word for word (the compaction's `recent`).
 *
 * Each message becomes one block: `User:` and `Assistant:` turns, runtime-written input as
 * `User (runtime):`, a shell command the user ran with its output, and each tool call as
 * `Tool <name>` with its input and its result (or error). Reasoning, Instruction Updates and the
 * agent and model switch markers are left out: the summary is about the work, and the new
 * Instruction Baseline states the instructions in force. Long tool inputs and outputs are clipped
 * (their head and tail kept) so one large output cannot crowd out the rest of the conversation.
 */

/** The most characters of one tool input or output kept in the transcript. */
const clipChars = 2_000

const clip = (text: string, limit = clipChars): string =>
  text.length <= limit
    ? text
    : `${text.slice(0, Math.floor(limit / 2))}\n[… ${text.length - limit} characters left out …]\n${text.slice(-Math.floor(limit / 2))}`

const toolText = (content: ReadonlyArray<{ readonly type: string; readonly text?: string; readonly uri?: string }>) =>
  content.map((part) => (part.type === "text" ? (part.text ?? "") : `[file ${part.uri ?? ""}]`)).join("\n")

const assistantBlock = (message: SessionMessages.SessionMessageAssistant): string | undefined => {
  const lines: Array<string> = []
  for (const item of message.content) {
    if (item.type === "text") {
      if (item.text.length > 0) lines.push(`Assistant: ${item.text}`)
    } else if (item.type === "tool") {
      const state = item.state
      if (state.status === "pending") continue
      const input = clip(JSON.stringify(state.input))
      switch (state.status) {
        case "completed":
          lines.push(`Tool ${item.name} ${input}\nResult: ${clip(toolText(state.content))}`)
          break
        case "error":
          lines.push(`Tool ${item.name} ${input}\nError: ${clip(state.error.message)}`)
          break
        case "running":
          lines.push(`Tool ${item.name} ${input}\n(interrupted before it finished)`)
          break
      }
    }
  }
  if (message.error !== undefined) lines.push(`(the step failed: ${clip(SessionError.messageOf(message.error), 500)})`)
  return lines.length === 0 ? undefined : lines.join("\n")
}

/** One message as a transcript block, or undefined when it has nothing for the summary. */
export const block = (message: SessionMessages.SessionMessage): string | undefined => {
  switch (message.type) {
    case "user": {
      // Attachments are named, not inlined: the summary keeps what they were, the kept part refers to them.
      const files = (message.files ?? []).map((file) =>
        file.uri.startsWith("data:") ? (file.name ?? file.mime) : (file.name ?? file.uri)
      )
      return files.length === 0 ? `User: ${message.text}` : `User: ${message.text}\n(attached: ${files.join(", ")})`
    }
    case "synthetic":
      return `User (runtime): ${message.text}`
    case "shell":
      return `User ran a shell command: $ ${message.command}\n${clip(message.output)}`
    case "assistant":
      return assistantBlock(message)
    default:
      return undefined
  }
}

/** A message of the conversation proper: a prompt, a shell command, or an assistant turn with content. */
export const conversational = (message: SessionMessages.SessionMessage): boolean =>
  (message.type === "user" || message.type === "shell" || message.type === "assistant") && block(message) !== undefined

/** The transcript of `messages`: their blocks, separated by blank lines. */
export const render = (messages: ReadonlyArray<SessionMessages.SessionMessage>): string =>
  messages
    .map(block)
    .filter((text): text is string => text !== undefined)
    .join("\n\n")

/**
 * Splits the conversation at the compaction's cut: `tail` is the newest messages whose transcript
 * fits in `recentTokens` (whole messages only, so a tool call never loses its result), `head` is
 * everything before, which the summary replaces. The latest user prompt and what followed it stay in
 * the tail even beyond `recentTokens` when together they fit in `promptTokens`, so the request the
 * agent is working on is never paraphrased. When the whole conversation would fit in the tail, the
 * cut falls just before the latest prompt; with no earlier history than that, everything goes to the
 * head (there would be nothing to summarize) and the tail is empty.
 */
export const split = (
  messages: ReadonlyArray<SessionMessages.SessionMessage>,
  budget: { readonly recentTokens: number; readonly promptTokens: number }
): {
  readonly head: ReadonlyArray<SessionMessages.SessionMessage>
  readonly tail: ReadonlyArray<SessionMessages.SessionMessage>
} => {
  const tokens = messages.map((message) => {
    const text = block(message)
    return text === undefined ? 0 : ContextBudget.estimate(text)
  })
  let used = 0
  let cut = messages.length
  for (let index = messages.length - 1; index >= 0; index--) {
    if (used + tokens[index]! > budget.recentTokens) break
    used += tokens[index]!
    cut = index
  }
  let prompt = messages.length - 1
  while (prompt >= 0 && messages[prompt]!.type !== "user") prompt--
  if (prompt !== -1 && prompt < cut) {
    const fromPrompt = tokens.slice(prompt).reduce((sum, value) => sum + value, 0)
    if (fromPrompt <= budget.promptTokens) cut = prompt
  }
  if (cut === 0) cut = Math.max(prompt, 0)
  if (cut === 0) return { head: messages, tail: [] }
  return { head: messages.slice(0, cut), tail: messages.slice(cut) }
}

/**
 * The head's transcript within `maxTokens`: the newest blocks that fit, with a note of how many
 * older ones were left out (the prior summary covers what came before them). Unbounded when
 * `maxTokens` is undefined.
 */
export const bounded = (messages: ReadonlyArray<SessionMessages.SessionMessage>, maxTokens: number | undefined) => {
  const blocks = messages.map(block).filter((text): text is string => text !== undefined)
  if (maxTokens === undefined) return blocks.join("\n\n")
  // Even the newest block alone must fit.
  const fit = (text: string) => clip(text, Math.max(200, maxTokens * 4))
  let used = 0
  let first = blocks.length
  for (let index = blocks.length - 1; index >= 0; index--) {
    blocks[index] = fit(blocks[index]!)
    const tokens = ContextBudget.estimate(blocks[index]!) + 1
    if (used + tokens > maxTokens && first < blocks.length) break
    used += tokens
    first = index
  }
  const kept = blocks.slice(first)
  return first === 0 ? kept.join("\n\n") : [`[${first} earlier messages left out]`, ...kept].join("\n\n")
}
