export * as SessionTranscript from "./session-transcript.js"

import { type Session, SessionError, type SessionMessages } from "@opencode-ai/schema"
import type { TerminalStyle } from "./terminal-style.js"
import { ToolCallSummary } from "./tool-call-summary.js"

/**
 * A session as readable text (`opencode session show`): a header with its title, agent, model, cost
 * and tokens, then every message oldest first: what the user said, each Step's text, its reasoning
 * folded to one line, its tool calls with their bounded output, failures, instruction updates,
 * switches, shell commands and compactions. Pure: it formats what it is given.
 */

const time = (ms: number) => {
  const date = new Date(ms)
  const pad = (n: number) => String(n).padStart(2, "0")
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`
}

/** `provider/model`, with `:variant` when there is one. */
export const modelName = (model: {
  readonly providerID: string
  readonly id: string
  readonly variant?: string | undefined
}) => `${model.providerID}/${model.id}${model.variant === undefined ? "" : `:${model.variant}`}`

/** The local date and minute of a millisecond timestamp: `2026-12-02 09:07`. */
export const localTime = time

const indent = (text: string, prefix = "  ") =>
  text
    .split("\n")
    .map((line) => `${prefix}${line}`)
    .join("\n")

const firstLine = (text: string, max = 100) => {
  const line =
    text
      .split("\n")
      .find((candidate) => candidate.trim() !== "")
      ?.trim() ?? ""
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

const toolLines = (tool: SessionMessages.SessionMessageAssistantTool, style: TerminalStyle.Style) => {
  const state = tool.state
  const input = state.status === "pending" ? {} : state.input
  const head = `${tool.name} ${ToolCallSummary.title(input)}`.trimEnd()
  switch (state.status) {
    case "pending":
    case "running":
      return [`${style.yellow("…")} ${style.bold(head)} (${state.status})`]
    case "completed":
      return [
        `${style.green("✓")} ${style.bold(head)}`,
        ...ToolCallSummary.outputLines(state.content).map((line) => style.dim(`  │ ${line}`)),
        ...(state.outputPaths ?? []).map((file) => style.dim(`  │ full output: ${file}`))
      ]
    case "error":
      return [`${style.red("✗")} ${style.bold(head)}`, style.red(`  │ ${state.error.message}`)]
  }
}

const messageLines = (message: SessionMessages.SessionMessage, style: TerminalStyle.Style): ReadonlyArray<string> => {
  switch (message.type) {
    case "user":
      return [
        style.bold(`── user · ${time(message.time.created)}`),
        message.text,
        ...(message.files ?? []).map((file) => style.dim(`[file ${file.name ?? file.uri} (${file.mime})]`))
      ]
    case "assistant": {
      const lines = [
        style.bold(`── assistant · ${message.agent} · ${modelName(message.model)} · ${time(message.time.created)}`)
      ]
      for (const part of message.content) {
        if (part.type === "text") lines.push(part.text)
        else if (part.type === "reasoning") {
          const line = firstLine(part.text)
          if (line !== "") lines.push(style.dim(`thinking: ${line}`))
        } else lines.push(...toolLines(part, style))
      }
      if (message.error !== undefined) lines.push(style.red(`error: ${SessionError.messageOf(message.error)}`))
      if (message.cost !== undefined && message.tokens !== undefined) {
        lines.push(
          style.dim(
            `step ${message.finish ?? "ended"} · cost ${ToolCallSummary.cost(message.cost)} · tokens ${ToolCallSummary.count(message.tokens.input)} in, ${ToolCallSummary.count(message.tokens.output)} out`
          )
        )
      }
      return lines
    }
    case "system":
      return [style.dim("── instruction update"), style.dim(indent(message.text))]
    case "synthetic":
      return [style.dim("── note from the runtime"), style.dim(indent(message.text))]
    case "shell":
      return [style.bold(`── shell · $ ${message.command}`), indent(message.output)]
    case "agent-switched":
      return [style.dim(`── agent switched to ${message.agent}`)]
    case "model-switched":
      return [style.dim(`── model switched to ${modelName(message.model)}`)]
    case "compaction":
      return [style.dim(`── compaction (${message.reason})`), style.dim(indent(message.summary))]
  }
}

/** The whole transcript, ending with a newline. */
export const render = (
  info: Session.SessionV2Info,
  messages: ReadonlyArray<SessionMessages.SessionMessage>,
  style: TerminalStyle.Style
): string => {
  const header = [
    style.bold(`${info.title} (${info.id})`),
    style.dim(
      [
        info.location.directory,
        ...(info.agent === undefined ? [] : [`agent ${info.agent}`]),
        ...(info.model === undefined ? [] : [`model ${modelName(info.model)}`]),
        `cost ${ToolCallSummary.cost(info.cost)}`,
        `tokens ${ToolCallSummary.count(info.tokens.input)} in, ${ToolCallSummary.count(info.tokens.output)} out`,
        `updated ${time(info.time.updated)}`
      ].join(" · ")
    )
  ]
  const body = messages.flatMap((message) => ["", ...messageLines(message, style)])
  return `${[...header, ...body].join("\n")}\n`
}
