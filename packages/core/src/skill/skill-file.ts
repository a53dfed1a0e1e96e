export * as SkillFile from "./skill-file.js"

/**
 * A `SKILL.md` file: YAML front matter at the very top (see {@link FrontMatter}; an empty block is
 * invalid here), then the skill's instructions in Markdown. The front matter must be a mapping with:
 * - `name`: a non-empty, single-line string: how the skill is listed, permitted (`skill` rules match
 *   it as the resource) and loaded;
 * - `description`: a non-empty string: when to use the skill (the model reads it to decide);
 * - `slash` (optional): a boolean, repeated in the skill's API record.
 * Other keys (`license`, `allowed-tools`, `metadata`, …) are accepted and ignored.
 *
 * The content is everything after the closing `---` line, without surrounding blank space. Pure:
 * nothing is read here.
 */

import { Data, Either } from "effect"
import { FrontMatter } from "../config/front-matter.js"

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

const invalid = (reason: string, line?: number): Either.Either<never, Invalid> =>
  Either.left(new Invalid(line === undefined ? { reason } : { reason, line }))

/** Parses a `SKILL.md` text (see the module doc). Pure. */
export const parse = (text: string): Either.Either<Parsed, Invalid> => {
  const split = FrontMatter.parse(text)
  if (Either.isLeft(split)) return Either.left(new Invalid(split.left))
  if (split.right._tag === "Absent") return invalid("no front matter: the file must start with a `---` line", 1)
  const data = split.right.data
  if (data === undefined) return invalid("the front matter must be a mapping of keys to values")

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
    content: split.right.body
  })
}
