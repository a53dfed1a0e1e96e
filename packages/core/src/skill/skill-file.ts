export * as SkillFile from "./skill-file.js"

/**
 * A `SKILL.md` file: YAML front matter between two `---` lines at the very top, then the skill's
 * instructions in Markdown. The front matter is parsed with the `yaml` library (YAML 1.2, duplicate
 * keys rejected) and must be a mapping with:
 * - `name`: a non-empty, single-line string: how the skill is listed, permitted (`skill` rules match
 *   it as the resource) and loaded;
 * - `description`: a non-empty string: when to use the skill (the model reads it to decide);
 * - `slash` (optional): a boolean, repeated in the skill's API record.
 * Other keys (`license`, `allowed-tools`, `metadata`, …) are accepted and ignored.
 *
 * The content is everything after the closing `---` line, without surrounding blank space. A UTF-8
 * byte order mark and CRLF line ends are accepted. Pure: nothing is read here.
 */

import { Data, Either } from "effect"
import { parseDocument } from "yaml"

/** The file name a skill is discovered by. */
export const fileName = "SKILL.md"

/** What a valid file says. */
export interface Parsed {
  readonly name: string
  readonly description: string
  readonly slash?: boolean
  /** The instructions after the front matter, trimmed. */
  readonly content: string
}

/** Why a file is not a valid skill; `line` (1-based, in the whole file) when one can be named. */
export class Invalid extends Data.TaggedError("SkillFileInvalid")<{
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

/** Parses a `SKILL.md` text (see the module doc). Pure. */
export const parse = (text: string): Either.Either<Parsed, Invalid> => {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/)
  if (lines.length === 0 || !fence.test(lines[0]!)) {
    return invalid("no front matter: the file must start with a `---` line", 1)
  }
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
  const data: unknown = document.toJS()
  if (!isRecord(data)) return invalid("the front matter must be a mapping of keys to values")

  const name = data.name
  if (typeof name !== "string" || name.trim() === "") return invalid("`name` must be a non-empty string")
  if (/[\r\n]/.test(name)) return invalid("`name` must be a single line")
  const description = data.description
  if (typeof description !== "string" || description.trim() === "") {
    return invalid("`description` must be a non-empty string")
  }
  const slash = data.slash
  if (slash !== undefined && typeof slash !== "boolean") return invalid("`slash` must be true or false")

  return Either.right({
    name: name.trim(),
    description: description.trim(),
    ...(slash === undefined ? {} : { slash }),
    content: lines
      .slice(close + 1)
      .join("\n")
      .trim()
  })
}
