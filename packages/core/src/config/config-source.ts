export * as ConfigSource from "./config-source.js"

/**
 * A Config Source: one config document (a file, or the inline `OPENCODE_CONFIG_CONTENT`) parsed,
 * substituted and validated on its own, so that every failure points at the document, line and key
 * it comes from. Merging documents is `Config`'s job.
 *
 * Reading a document:
 * 1. JSONC parse (comments and trailing commas allowed, in `.json` files too, as upstream). A syntax
 *    error fails with the line and column jsonc-parser reports. An empty document is `{}`.
 * 2. Substitution in every string value (never in keys): `{env:VAR}` becomes the variable's value (an
 *    unset variable becomes "" and logs a warning); then `{file:path}` becomes the trimmed content of
 *    that file, relative to the document's directory (`~/` is `$HOME`); an unreadable file fails.
 *    Substituting values rather than the raw text (as upstream does) keeps positions exact and cannot
 *    break the JSON; the price is that `{env:…}` must sit inside a string.
 * 3. Validation against `ConfigInfo.Info`. A key the schema does not know logs a warning naming the
 *    document and the key path and is dropped; a value of the wrong shape fails with the key path and
 *    the line of the value.
 */

import * as nodePath from "node:path"
import { FileSystem } from "@effect/platform"
import { Effect, Either, ParseResult, Schema } from "effect"
import * as Jsonc from "jsonc-parser"
import { Traced } from "../observability/traced.js"
import * as ConfigErrors from "./config-error.js"
import * as ConfigInfo from "./config-info.js"

/** A validated document, with what is needed to point back into it. */
export interface Source {
  /** The file's absolute path, or {@link inlineName} for the inline source. */
  readonly file: string
  /** The directory `{file:…}` references are resolved against. */
  readonly directory: string
  /** The document as written. */
  readonly text: string
  /** The document after substitution, unknown keys dropped. */
  readonly info: ConfigInfo.Info
  /** The syntax tree of `text`; absent for an empty document. */
  readonly tree: Jsonc.Node | undefined
}

/** The name the inline `OPENCODE_CONFIG_CONTENT` source goes by in errors and warnings. */
export const inlineName = "OPENCODE_CONFIG_CONTENT"

export interface Input {
  readonly file: string
  readonly directory: string
  readonly text: string
  readonly env: Readonly<Record<string, string | undefined>>
}

type Path = ReadonlyArray<string | number>

/** A key path as written in messages: `agent.build.steps`, `instructions[2]`. */
export const formatPath = (path: Path): string =>
  path.reduce<string>(
    (out, segment) => (typeof segment === "number" ? `${out}[${segment}]` : out === "" ? segment : `${out}.${segment}`),
    ""
  )

/** 1-based line and column of `offset` in `text`. */
export const lineColumn = (text: string, offset: number): { readonly line: number; readonly column: number } => {
  let line = 1
  let start = 0
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++
      start = i + 1
    }
  }
  return { line, column: offset - start + 1 }
}

/** A document as far as positions go. */
export interface Document {
  readonly file: string
  readonly text: string
  readonly tree: Jsonc.Node | undefined
}

/**
 * Where exactly `path` is written in a document: the value's position, or with `key: true` the
 * property name's; `undefined` when the document does not contain the path.
 */
export const locate = (
  document: Document,
  path: Path,
  options?: { readonly key?: boolean }
): ConfigErrors.Position | undefined => {
  if (document.tree === undefined) return undefined
  const node = Jsonc.findNodeAtLocation(document.tree, [...path])
  if (node === undefined) return undefined
  const keyNode = options?.key === true && node.parent?.type === "property" ? node.parent.children?.[0] : undefined
  return { file: document.file, ...lineColumn(document.text, (keyNode ?? node).offset) }
}

/**
 * Where `path`, or failing that its nearest ancestor, is written in one of `documents`, preferring
 * later documents (the ones whose values won the merge); position 0/0 in the last document when none
 * has even the first segment.
 */
export const nearest = (
  documents: ReadonlyArray<Document>,
  path: Path,
  options?: { readonly key?: boolean }
): ConfigErrors.Position => {
  for (let length = path.length; length >= 0; length--) {
    for (let index = documents.length - 1; index >= 0; index--) {
      const document = documents[index]
      const found =
        document === undefined
          ? undefined
          : locate(document, path.slice(0, length), length === path.length ? options : undefined)
      if (found !== undefined) return found
    }
  }
  return { file: documents.at(-1)?.file ?? "<config>", line: 0, column: 0 }
}

const parseErrorText: Record<string, string> = {
  InvalidSymbol: "invalid symbol",
  InvalidNumberFormat: "invalid number",
  PropertyNameExpected: "property name expected",
  ValueExpected: "value expected",
  ColonExpected: "colon expected",
  CommaExpected: "comma expected",
  CloseBraceExpected: "closing brace expected",
  CloseBracketExpected: "closing bracket expected",
  EndOfFileExpected: "end of file expected",
  InvalidCommentToken: "invalid comment",
  UnexpectedEndOfComment: "unterminated comment",
  UnexpectedEndOfString: "unterminated string",
  UnexpectedEndOfNumber: "unterminated number",
  InvalidUnicode: "invalid unicode escape",
  InvalidEscapeCharacter: "invalid escape character",
  InvalidCharacter: "invalid character"
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const envPattern = /\{env:([^}]+)\}/g
const filePattern = /\{file:([^}]+)\}/g

const decode = Schema.decodeUnknownEither(ConfigInfo.Info, { errors: "all", onExcessProperty: "ignore" })

/** Parses, substitutes and validates one document. */
export const parse = Traced.fn("ConfigSource.parse")(function* (input: Input) {
  const fs = yield* FileSystem.FileSystem
  const position = (path: Path, key?: boolean): ConfigErrors.Position =>
    nearest([{ file: input.file, text: input.text, tree }], path, key === undefined ? undefined : { key })

  // 1. syntax
  const errors: Array<Jsonc.ParseError> = []
  const tree = Jsonc.parseTree(input.text, errors, { allowTrailingComma: true, disallowComments: false })
  const empty = tree === undefined && Jsonc.stripComments(input.text).trim() === ""
  const first = errors[0]
  if (first !== undefined && !empty) {
    const code = Jsonc.printParseErrorCode(first.error)
    return yield* Effect.fail(
      ConfigErrors.at(
        { file: input.file, ...lineColumn(input.text, first.offset) },
        `invalid JSONC: ${parseErrorText[code] ?? code}`
      )
    )
  }
  const parsed: unknown = tree === undefined ? {} : Jsonc.getNodeValue(tree)
  if (!isObject(parsed)) {
    return yield* Effect.fail(ConfigErrors.at(position([]), "a config document must be a JSON object"))
  }

  // 2. substitution, in string values only
  const substitute = (value: string, path: Path): Effect.Effect<string, ConfigErrors.ConfigError> =>
    Effect.gen(function* () {
      const unset: Array<string> = []
      let out = value.replace(envPattern, (_, name: string) => {
        const found = input.env[name]
        if (found === undefined) unset.push(name)
        return found ?? ""
      })
      for (const name of unset) {
        const where = position(path)
        yield* Effect.logWarning(
          `Config ${where.file}:${where.line}:${where.column}: ${formatPath(path)}: {env:${name}} is not set; using ""`
        ).pipe(Effect.annotateLogs({ file: where.file, key: formatPath(path) }))
      }
      const references = [...out.matchAll(filePattern)].map((match) => match[1] ?? "")
      if (references.length === 0) return out
      const contents = new Map<string, string>()
      for (const reference of references) {
        if (contents.has(reference)) continue
        const home = input.env.HOME
        const resolved =
          reference.startsWith("~/") && home !== undefined
            ? nodePath.join(home, reference.slice(2))
            : nodePath.resolve(input.directory, reference)
        const content = yield* fs
          .readFileString(resolved)
          .pipe(
            Effect.mapError(() =>
              ConfigErrors.at(position(path), `{file:${reference}} cannot be read (${resolved})`, formatPath(path))
            )
          )
        contents.set(reference, content.trim())
      }
      out = out.replace(filePattern, (_, reference: string) => contents.get(reference) ?? "")
      return out
    })

  const walk = (value: unknown, path: Path): Effect.Effect<unknown, ConfigErrors.ConfigError> => {
    if (typeof value === "string") return value.includes("{") ? substitute(value, path) : Effect.succeed(value)
    if (Array.isArray(value)) return Effect.forEach(value, (item, index) => walk(item, [...path, index]))
    if (isObject(value)) {
      return Effect.gen(function* () {
        const out: Record<string, unknown> = {}
        for (const [key, item] of Object.entries(value)) out[key] = yield* walk(item, [...path, key])
        return out
      })
    }
    return Effect.succeed(value)
  }
  const substituted = yield* walk(parsed, [])

  // 3. validation: a value of the wrong shape fails; unknown keys (what decoding dropped) warn
  const decoded = decode(substituted)
  if (Either.isLeft(decoded)) {
    const issue = describe(ParseResult.ArrayFormatter.formatErrorSync(decoded.left))
    return yield* Effect.fail(ConfigErrors.at(position(issue.path), issue.message, formatPath(issue.path)))
  }
  for (const path of dropped(substituted, decoded.right, [])) {
    const where = position(path, true)
    yield* Effect.logWarning(
      `Config ${where.file}:${where.line}:${where.column}: unknown key "${formatPath(path)}" is ignored`
    ).pipe(Effect.annotateLogs({ file: where.file, key: formatPath(path) }))
  }
  return {
    file: input.file,
    directory: input.directory,
    text: input.text,
    info: decoded.right,
    tree
  } satisfies Source
})

/** The key paths present in `raw` but not in `decoded`: the keys the schema does not know. */
const dropped = (raw: unknown, decoded: unknown, path: Path): ReadonlyArray<Path> => {
  if (Array.isArray(raw) && Array.isArray(decoded)) {
    return raw.flatMap((item, index) => dropped(item, decoded[index], [...path, index]))
  }
  if (!isObject(raw) || !isObject(decoded)) return []
  return Object.entries(raw).flatMap(([key, value]) =>
    Object.hasOwn(decoded, key) ? dropped(value, decoded[key], [...path, key]) : [[...path, key]]
  )
}

const toPath = (path: ReadonlyArray<PropertyKey>): Path =>
  path.map((segment) => (typeof segment === "number" ? segment : String(segment)))

const startsWith = (path: Path, prefix: Path): boolean => prefix.every((segment, index) => path[index] === segment)

/**
 * One readable reason from a decoding failure: the first issue, narrowed to the deepest issue under
 * it (a union reports every member at every level), with the alternatives at that path joined:
 * `Expected "allow" | "ask" | "deny", actual "maybe"`.
 */
const describe = (
  issues: ReadonlyArray<ParseResult.ArrayFormatterIssue>
): { readonly path: Path; readonly message: string } => {
  const first = issues[0]
  if (first === undefined) return { path: [], message: "invalid" }
  const related = issues.filter((issue) => startsWith(toPath(issue.path), toPath(first.path)))
  const deepest = related.reduce((best, issue) => (issue.path.length > best.path.length ? issue : best), first)
  const path = toPath(deepest.path)
  const here = related.filter((issue) => issue.path.length === path.length && startsWith(toPath(issue.path), path))
  const expectations = here.map((issue) => /^Expected (.+), actual (.+)$/s.exec(issue.message))
  if (here.length < 2 || expectations.some((match) => match === null)) return { path, message: deepest.message }
  const alternatives = [
    ...new Set(expectations.map((match) => (match?.[1]?.startsWith("{") ? "an object of those" : match?.[1])))
  ]
  return { path, message: `Expected ${alternatives.join(" | ")}, actual ${expectations[0]?.[2] ?? ""}` }
}
