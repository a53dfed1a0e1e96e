export * as ToolCallSummary from "./tool-call-summary.js"

import type { ToolContent } from "@opencode-ai/schema"

/**
 * How the CLI shows a tool call in a terminal: a one-line title made from its input, and its
 * output bounded to a few lines (the whole output stays in the session and its managed files).
 */

/** Input fields that name what a call does, in the order they are looked for. */
const titleKeys = ["command", "filePath", "path", "pattern", "url", "query", "description", "prompt", "name"]

const oneLine = (text: string, max: number) => {
  const line = text.replace(/\s+/g, " ").trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/** The call's title: the first of its naming fields, else its input as compact JSON; at most `max` characters. */
export const title = (input: Readonly<Record<string, unknown>>, max = 80): string => {
  for (const key of titleKeys) {
    const value = input[key]
    if (typeof value === "string" && value.trim() !== "") return oneLine(value, max)
  }
  const json = JSON.stringify(input)
  return json === "{}" ? "" : oneLine(json, max)
}

export interface Limits {
  /** At most this many lines are shown; default 8. */
  readonly lines: number
  /** Each shown line is cut to this many characters; default 160. */
  readonly width: number
}

export const defaultLimits: Limits = { lines: 8, width: 160 }

/**
 * The output lines to show for a call's content: text as lines, files as `[file name (mime)]`,
 * trailing blank lines dropped, at most `limits.lines` of them (then `… N more lines`), each cut to
 * `limits.width`.
 */
export const outputLines = (
  content: ReadonlyArray<ToolContent.ToolTextContent | ToolContent.ToolFileContent>,
  limits: Limits = defaultLimits
): ReadonlyArray<string> => {
  const lines: Array<string> = []
  for (const part of content) {
    if (part.type === "text") lines.push(...part.text.split("\n"))
    else lines.push(`[file ${part.name ?? part.uri} (${part.mime})]`)
  }
  while (lines.length > 0 && lines[lines.length - 1]!.trim() === "") lines.pop()
  const shown = lines
    .slice(0, limits.lines)
    .map((line) => (line.length > limits.width ? `${line.slice(0, limits.width - 1)}…` : line))
  const rest = lines.length - shown.length
  return rest > 0 ? [...shown, `… ${rest} more line${rest === 1 ? "" : "s"}`] : shown
}

/** A token count with thousands separators. */
export const count = (n: number): string => Math.round(n).toLocaleString("en-US")

/** A cost in USD, to four decimals. */
export const cost = (usd: number): string => `$${usd.toFixed(4)}`
