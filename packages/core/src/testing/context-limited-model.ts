export * as ContextLimitedModel from "./context-limited-model.js"

/**
 * A scripted model with a real context limit, for long sessions: a `respond` function for the
 * ScriptedLLMServer (OpenAI-compatible wire format) that reads each request as a model would.
 *
 * - A request counts about one token per four characters of its JSON `messages` and `tools`. One
 *   larger than `context` gets the provider's context-overflow error, as a real model would answer.
 * - A compaction request (no tools, its one user turn holding a `<conversation>`) is answered with a
 *   summary in the template's sections, naming how many compactions it has written.
 * - Otherwise, a request whose last message is the user's (a prompt or a runtime continuation) is
 *   answered with one call of `tool` with `input(n)` for the `n`-th such request; a request ending
 *   with tool results is answered with the text `done <n>`.
 * Every answer reports the request's counted tokens as its input usage, so the runtime's projection
 * works from what the "provider" counted.
 */

import * as LLMScript from "./llm-script.js"
import type { RecordedRequest } from "./scripted-llm-server.js"

export interface Options {
  /** The model's context limit in tokens. */
  readonly context: number
  /** The tool called for each user turn. */
  readonly tool: string
  /** The tool's input for the `n`-th user turn (1-based). */
  readonly input: (n: number) => Readonly<Record<string, unknown>>
}

export interface Model {
  readonly respond: (request: RecordedRequest) => LLMScript.Turn | undefined
  /** What it has seen so far. */
  readonly stats: () => {
    readonly overflows: number
    readonly compactions: number
    readonly toolCalls: number
    readonly answers: number
    /** The largest request it accepted, in counted tokens. */
    readonly largest: number
  }
}

export const make = (options: Options): Model => {
  let overflows = 0
  let compactions = 0
  let toolCalls = 0
  let answers = 0
  let largest = 0
  const respond = (request: RecordedRequest): LLMScript.Turn | undefined => {
    const body = request.body
    if (body === undefined || !Array.isArray(body.messages)) return undefined
    const tokens = Math.ceil((JSON.stringify(body.messages) + JSON.stringify(body.tools ?? [])).length / 4)
    if (tokens > options.context) {
      overflows++
      return LLMScript.overflow()
    }
    largest = Math.max(largest, tokens)
    const messages = body.messages as ReadonlyArray<{ readonly role: string; readonly content?: unknown }>
    const last = messages[messages.length - 1]
    const content = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content ?? "")
    const usage = LLMScript.usage({ input: tokens, output: 20 })
    if (body.tools === undefined && content.includes("<conversation>")) {
      compactions++
      return LLMScript.reply(
        LLMScript.text(
          `## Objective\n- Answer prompt after prompt (summary ${compactions})\n\n## Important Details\n- (none)\n\n## Work State\n### Completed\n- ${answers} answers so far\n\n### Active\n- (none)\n\n### Blocked\n- (none)\n\n## Next Move\n1. Answer the next prompt\n\n## Relevant Files\n- (none)`
        ),
        usage,
        LLMScript.finish("stop")
      )
    }
    if (last?.role === "tool") {
      answers++
      return LLMScript.reply(LLMScript.text(`done ${answers}`), usage, LLMScript.finish("stop"))
    }
    toolCalls++
    return LLMScript.reply(
      LLMScript.toolCall(`call_${toolCalls}`, options.tool, options.input(toolCalls)),
      usage,
      LLMScript.finish("tool-calls")
    )
  }
  return { respond, stats: () => ({ overflows, compactions, toolCalls, answers, largest }) }
}
