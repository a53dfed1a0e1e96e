export * as CommandFile from "./command-file.js"

/**
 * A command file: a Markdown file (`<name>.md`) in a `command/` or `commands/` folder. It may start
 * with YAML front matter between two `---` lines (parsed with the `yaml` library, YAML 1.2, duplicate
 * keys rejected); the rest of the file, without surrounding blank space, is the command's template.
 * A file without front matter is all template.
 *
 * Front matter keys, all optional:
 * - `description`: a string, shown in command lists;
 * - `agent`: a string, the agent the command runs with;
 * - `model`: a string, `provider/model`, the model it runs with;
 * - `subtask`: a boolean, whether it runs as a subagent task.
 * Other keys are accepted and ignored. A UTF-8 byte order mark and CRLF line ends are accepted.
 * Pure: nothing is read here.
 */

import { Data, Either } from "effect"
import { parseDocument } from "yaml"

/** The extension a command file is discovered by. */
export const extension = ".md"

/** What a valid file says. */
export interface Parsed {
  readonly description?: string
  readonly agent?: string
  readonly model?: string
  readonly subtask?: boolean
  /** Everything after the front matter, trimmed. */
  readonly template: string
}

/** Why a file is not a valid command; `line` (1-based, in the whole file) when one can be named. */
export class Invalid extends Data.TaggedError("CommandFileInvalid")<{
  readonly reason: string
  readonly line?: number
}> {
  override get message(): string {
    return this.line === undefined ? this.reason : `line ${this.line}: ${this.reason}`
  }
}

const fence = /^---[ \t]*$/

const invalid = (reason: string, line?: number): Either.Either<never, Invalid> =>
  Either.left(new Invalid(line === undefined ? { reason } : { reason, line }))

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Parses a command file's text (see the module doc). Pure. */
export const parse = (text: string): Either.Either<Parsed, Invalid> => {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/)
  if (!fence.test(lines[0] ?? "")) return Either.right({ template: lines.join("\n").trim() })
  const close = lines.findIndex((line, index) => index > 0 && fence.test(line))
  if (close === -1) return invalid("the front matter is not closed by a `---` line")

  const document = parseDocument(lines.slice(1, close).join("\n"), { prettyErrors: true })
  const error = document.errors[0]
  if (error !== undefined) {
    // The library's line is within the front matter, which starts on the file's second line.
    const reason = error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "")
    return invalid(
      `invalid YAML front matter: ${reason}`,
      error.linePos === undefined ? undefined : error.linePos[0].line + 1
    )
  }
  const raw: unknown = document.toJS()
  // Empty front matter (`---` then `---`) is no keys.
  const data: unknown = raw === null || raw === undefined ? {} : raw
  if (!isRecord(data)) return invalid("the front matter must be a mapping of keys to values")

  const strings: Record<string, string> = {}
  for (const key of ["description", "agent", "model"] as const) {
    const value = data[key]
    if (value === undefined || value === null) continue
    if (typeof value !== "string") return invalid(`\`${key}\` must be a string`)
    if (value.trim() !== "") strings[key] = value.trim()
  }
  const subtask = data.subtask
  if (subtask !== undefined && subtask !== null && typeof subtask !== "boolean") {
    return invalid("`subtask` must be true or false")
  }
  return Either.right({
    ...strings,
    ...(typeof subtask === "boolean" ? { subtask } : {}),
    template: lines
      .slice(close + 1)
      .join("\n")
      .trim()
  })
}
