export * as RunOutput from "./run-output.js"

import type { Session, ToolContent } from "@opencode-ai/schema"
import { TerminalStyle } from "./terminal-style.js"
import { ToolCallSummary } from "./tool-call-summary.js"

/**
 * What `opencode run` prints while a session works, in its default format: streamed text as it
 * arrives, reasoning folded into one dimmed line, each tool call as a line with its bounded output,
 * retries and failures, and, while something runs, one transient status line at the bottom (a
 * spinner with the running tools, or a permission question).
 *
 * The status line exists only with ANSI on (a terminal, no `NO_COLOR`): it is erased before any other
 * output and drawn again after it, and only when the cursor is at the start of a line (never in the
 * middle of streaming text). With ANSI off nothing transient is written: the output is the plain
 * transcript, and a permission question is written once, on its own line.
 */
export interface RunOutput {
  readonly textStarted: (id: string) => void
  readonly textDelta: (id: string, delta: string) => void
  /** `text` is the whole block: what the deltas did not show is written now. */
  readonly textEnded: (id: string, text: string) => void
  readonly reasoningStarted: (id: string) => void
  readonly reasoningEnded: (id: string, text: string) => void
  readonly toolInputStarted: (callID: string, name: string) => void
  readonly toolCalled: (callID: string, name: string, input: Readonly<Record<string, unknown>>) => void
  readonly toolSucceeded: (
    callID: string,
    content: ReadonlyArray<ToolContent.ToolTextContent | ToolContent.ToolFileContent>,
    outputPaths: ReadonlyArray<string> | undefined
  ) => void
  readonly toolFailed: (callID: string, message: string) => void
  /** A dimmed line (retries, compactions, permission outcomes). */
  readonly note: (text: string) => void
  /** A red line. */
  readonly error: (text: string) => void
  /** Shows a question as the status line (ANSI) or on its own line (plain); it stays until {@link endQuestion}. */
  readonly question: (text: string) => void
  /** Removes the question and prints `outcome` in its place. */
  readonly endQuestion: (outcome: string) => void
  /** The run's total: cost and tokens. */
  readonly summary: (sessionID: string, cost: number, tokens: Session.Tokens) => void
  /** Advances the spinner (called on a timer while the run waits). */
  readonly tick: () => void
  /** Erases the status line and ends the last line. */
  readonly close: () => void
}

const spinnerFrames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

export const make = (options: {
  readonly write: (text: string) => void
  readonly style: TerminalStyle.Style
  /** The terminal's width, for cutting the status line; default 80. */
  readonly columns?: () => number | undefined
}): RunOutput => {
  const { write, style } = options
  let atLineStart = true
  let statusShown = false
  let questionText: string | undefined
  let frame = 0
  let thinking = false
  const texts = new Map<string, string>()
  const tools = new Map<string, { readonly name: string; title: string }>()

  const put = (text: string) => {
    if (text === "") return
    write(text)
    atLineStart = text.endsWith("\n")
  }
  const clearStatus = () => {
    if (statusShown) write(TerminalStyle.eraseLine)
    statusShown = false
  }
  const statusText = (): string | undefined => {
    if (questionText !== undefined) return questionText
    const running = [...tools.values()]
    const spinner = spinnerFrames[frame % spinnerFrames.length]
    if (running.length > 0) return `${spinner} ${running.map((tool) => `${tool.name} ${tool.title}`.trim()).join(", ")}`
    if (thinking) return `${spinner} thinking`
    return undefined
  }
  const drawStatus = () => {
    if (!style.ansi || !atLineStart) return
    const text = statusText()
    if (text === undefined) return
    const width = Math.max(20, (options.columns?.() ?? 80) - 1)
    const shown = text.length > width ? `${text.slice(0, width - 1)}…` : text
    write(`${TerminalStyle.eraseLine}${questionText === undefined ? style.dim(shown) : style.bold(shown)}`)
    statusShown = true
  }
  const endLine = () => {
    if (!atLineStart) put("\n")
  }
  /** Permanent lines: erase the status line, write them on lines of their own, draw the status line again. */
  const print = (...lines: ReadonlyArray<string>) => {
    clearStatus()
    endLine()
    for (const line of lines) put(`${line}\n`)
    drawStatus()
  }

  return {
    textStarted: (id) => {
      clearStatus()
      endLine()
      texts.set(id, "")
    },
    textDelta: (id, delta) => {
      clearStatus()
      if (!texts.has(id)) endLine()
      texts.set(id, (texts.get(id) ?? "") + delta)
      put(delta)
    },
    textEnded: (id, text) => {
      const shown = texts.get(id) ?? ""
      texts.delete(id)
      clearStatus()
      if (text.startsWith(shown)) put(text.slice(shown.length))
      else if (shown === "") put(text)
      endLine()
      drawStatus()
    },
    reasoningStarted: () => {
      thinking = true
      clearStatus()
      drawStatus()
    },
    reasoningEnded: (_id, text) => {
      thinking = false
      const lines = text.split("\n").filter((line) => line.trim() !== "")
      if (lines.length === 0) return print()
      const first = lines[0]!.trim()
      const cut = first.length > 100 ? `${first.slice(0, 99)}…` : first
      const more = lines.length > 1 ? ` (+${lines.length - 1} line${lines.length === 2 ? "" : "s"})` : ""
      print(style.dim(`thinking: ${cut}${more}`))
    },
    toolInputStarted: (callID, name) => {
      tools.set(callID, { name, title: "" })
      clearStatus()
      drawStatus()
    },
    toolCalled: (callID, name, input) => {
      tools.set(callID, { name, title: ToolCallSummary.title(input) })
      clearStatus()
      drawStatus()
    },
    toolSucceeded: (callID, content, outputPaths) => {
      const tool = tools.get(callID) ?? { name: "tool", title: "" }
      tools.delete(callID)
      const output = ToolCallSummary.outputLines(content).map((line) => style.dim(`  │ ${line}`))
      const files = (outputPaths ?? []).map((file) => style.dim(`  │ full output: ${file}`))
      print(`${style.green("✓")} ${style.bold(tool.name)} ${tool.title}`.trimEnd(), ...output, ...files)
    },
    toolFailed: (callID, message) => {
      const tool = tools.get(callID) ?? { name: "tool", title: "" }
      tools.delete(callID)
      print(`${style.red("✗")} ${style.bold(tool.name)} ${tool.title}`.trimEnd(), style.red(`  │ ${message}`))
    },
    note: (text) => print(style.dim(text)),
    error: (text) => print(style.red(text)),
    question: (text) => {
      clearStatus()
      endLine()
      questionText = text
      if (style.ansi) drawStatus()
      else put(`${text}\n`)
    },
    endQuestion: (outcome) => {
      questionText = undefined
      print(outcome)
    },
    summary: (sessionID, cost, tokens) => {
      const parts = [
        `${ToolCallSummary.count(tokens.input)} in`,
        `${ToolCallSummary.count(tokens.output)} out`,
        ...(tokens.reasoning > 0 ? [`${ToolCallSummary.count(tokens.reasoning)} reasoning`] : []),
        ...(tokens.cache.read + tokens.cache.write > 0
          ? [
              `cache ${ToolCallSummary.count(tokens.cache.read)} read / ${ToolCallSummary.count(tokens.cache.write)} write`
            ]
          : [])
      ]
      print(style.dim(`${sessionID} · cost ${ToolCallSummary.cost(cost)} · tokens ${parts.join(", ")}`))
    },
    tick: () => {
      frame++
      if (statusShown || (atLineStart && statusText() !== undefined)) {
        clearStatus()
        drawStatus()
      }
    },
    close: () => {
      clearStatus()
      endLine()
    }
  }
}
