export * as FrontMatter from "./front-matter.js"

/**
 * Front matter: the YAML block between two `---` lines at the very top of a Markdown definition file
 * (a command file, a `SKILL.md`), and the body after it. The block is parsed with the `yaml` library
 * (YAML 1.2, duplicate keys rejected) and must be a mapping of keys to values; an empty block is no
 * keys. A UTF-8 byte order mark and CRLF line ends are accepted. What the keys mean, and whether a
 * file may go without front matter, is each file format's own business. Pure: nothing is read here.
 */

import { Either } from "effect"
import { parseDocument } from "yaml"

/** A file that starts with front matter: its keys (`undefined` for an empty block) and its body, trimmed. */
export interface Found {
  readonly _tag: "Found"
  readonly data: Readonly<Record<string, unknown>> | undefined
  readonly body: string
}

/** A file that does not start with a `---` line: all of it is body, trimmed. */
export interface Absent {
  readonly _tag: "Absent"
  readonly body: string
}

/** Why the front matter cannot be read; `line` (1-based, in the whole file) when one can be named. */
export interface Problem {
  readonly reason: string
  readonly line?: number
}

const fence = /^---[ \t]*$/

const problem = (reason: string, line?: number): Either.Either<never, Problem> =>
  Either.left(line === undefined ? { reason } : { reason, line })

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Splits a file's text into its front matter and body (see the module doc). Pure. */
export const parse = (text: string): Either.Either<Found | Absent, Problem> => {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/)
  if (!fence.test(lines[0] ?? "")) return Either.right({ _tag: "Absent", body: lines.join("\n").trim() })
  const close = lines.findIndex((line, index) => index > 0 && fence.test(line))
  if (close === -1) return problem("the front matter is not closed by a `---` line")

  const document = parseDocument(lines.slice(1, close).join("\n"), { prettyErrors: true })
  const error = document.errors[0]
  if (error !== undefined) {
    // The library's line is within the front matter, which starts on the file's second line.
    const reason = error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "")
    return problem(
      `invalid YAML front matter: ${reason}`,
      error.linePos === undefined ? undefined : error.linePos[0].line + 1
    )
  }
  const data: unknown = document.toJS()
  if (data !== null && data !== undefined && !isRecord(data)) {
    return problem("the front matter must be a mapping of keys to values")
  }
  return Either.right({
    _tag: "Found",
    data: data === null || data === undefined ? undefined : data,
    body: lines
      .slice(close + 1)
      .join("\n")
      .trim()
  })
}
