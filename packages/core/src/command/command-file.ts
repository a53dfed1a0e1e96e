export * as CommandFile from "./command-file.js"

/**
 * A command file: a Markdown file (`<name>.md`) in a `command/` or `commands/` folder. It may start
 * with YAML front matter (see {@link FrontMatter}); the rest of the file, without surrounding blank
 * space, is the command's template. A file without front matter is all template.
 *
 * Front matter keys, all optional:
 * - `description`: a string, shown in command lists;
 * - `agent`: a string, the agent the command runs with;
 * - `model`: a string, `provider/model`, the model it runs with;
 * - `subtask`: a boolean, whether it runs as a subagent task.
 * Other keys are accepted and ignored. Pure: nothing is read here.
 */

import { Data, Either } from "effect"
import { FrontMatter } from "../config/front-matter.js"

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

const invalid = (reason: string): Either.Either<never, Invalid> => Either.left(new Invalid({ reason }))

/** Parses a command file's text (see the module doc). Pure. */
export const parse = (text: string): Either.Either<Parsed, Invalid> => {
  const split = FrontMatter.parse(text)
  if (Either.isLeft(split)) return Either.left(new Invalid(split.left))
  if (split.right._tag === "Absent") return Either.right({ template: split.right.body })
  // Empty front matter (`---` then `---`) is no keys.
  const data = split.right.data ?? {}

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
    template: split.right.body
  })
}
