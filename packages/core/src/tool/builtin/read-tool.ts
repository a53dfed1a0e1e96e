export * as ReadTool from "./read-tool.js"

import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { FileSystem } from "@effect/platform"
import type { ToolStructured } from "@opencode-ai/schema"
import { Effect, Option, Order, Schema, Stream } from "effect"
import { MediaTypes } from "../../fs/media-types.js"
import { Traced } from "../../observability/traced.js"
import type { ToolRegistry } from "../tool-registry.js"
import { BinaryFile } from "./binary-file.js"
import { BuiltinTool } from "./builtin-tool.js"
import { ToolPath } from "./tool-path.js"

/** Lines (or directory entries) read when the call gives no `limit`. */
export const defaultLimit = 2000
/** A longer line is cut to this many characters. */
export const maxLineLength = 2000
/**
 * The most text one read returns (UTF-8 bytes of the numbered lines). Reading stops at a line
 * boundary and says which offset continues, which serves the model better than a generic cut.
 */
export const maxBytes = 50 * 1024

export const Input = Schema.Struct({
  path: Schema.String.annotations({
    description: "The file or directory to read: an absolute path, or one relative to the working directory"
  }),
  offset: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1))).annotations({
    description: "The first line (or directory entry) to return, counting from 1. Default 1."
  }),
  limit: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1))).annotations({
    description: `How many lines (or directory entries) to return. Default ${defaultLimit}.`
  })
})
export type Input = typeof Input.Type

export interface Options {
  /** The Managed Tool Output directory: readable without an `external_directory` ask. */
  readonly toolOutputDir?: string | undefined
  /**
   * Called after each successful read of a file or directory (not for a failed one), before the
   * result is returned: e.g. NestedInstructions notes the AGENTS.md files near the target.
   */
  readonly onRead?:
    | ((context: ToolRegistry.CallContext, target: string, kind: "file" | "directory") => Effect.Effect<void>)
    | undefined
}

const description = `Reads a file or lists a directory.

- The path may be absolute or relative to the working directory.
- A text file comes back with its line numbers ("12: text"), from \`offset\` (1-based, default 1) for \`limit\` lines (default ${defaultLimit}). Lines longer than ${maxLineLength} characters are cut, and one read returns at most ${maxBytes / 1024} KiB: the output says which offset continues.
- A directory lists its entries (sub-directories end with "/"), with the same offset and limit over the entries.
- Images and PDFs are attached as files; other binary files cannot be read.
- Read a file before editing it, and prefer several reads of the relevant ranges over one huge read.`

/** The media type of a file returned as an attachment (images other than SVG, PDF), if it is one. */
export const attachmentType = (file: string): string | undefined => {
  const type = MediaTypes.byName(file)
  if (type === null) return undefined
  if (type === "application/pdf") return type
  return type.startsWith("image/") && type !== "image/svg+xml" ? type : undefined
}

/**
 * The media type of a file read as text, by its name: a textual type the name gives (`text/*`, JSON,
 * XML, JavaScript), else `text/plain` (a `.ts` file is not the MPEG stream its extension also names).
 */
const textType = (file: string): string => {
  const type = MediaTypes.byName(file)
  return type !== null &&
    (type.startsWith("text/") || /^application\/(json|xml|javascript|[\w.+-]+\+(json|xml))$/.test(type))
    ? type
    : "text/plain"
}

/** The largest image or PDF read attaches (its content is also the structured result, in base64). */
export const maxAttachmentBytes = 20 * 1024 * 1024

/** Up to three entries of `file`'s directory whose names resemble its name, for a not-found hint. */
const similar = (fs: FileSystem.FileSystem, file: string) =>
  fs.readDirectory(path.dirname(file)).pipe(
    Effect.map((names) => {
      const base = path.basename(file).toLowerCase()
      return names
        .filter((name) => name.toLowerCase().includes(base) || base.includes(name.toLowerCase()))
        .slice(0, 3)
        .map((name) => path.join(path.dirname(file), name))
    }),
    Effect.orElseSucceed(() => [] as Array<string>)
  )

/**
 * The listing of directory `target` as `read` returns it: its entries by name in code-unit order (as
 * `LC_ALL=C ls` orders them, whatever the host's locale), sub-directories with a trailing "/", from
 * `offset` for `limit` entries. Also what a directory attached to a prompt shows
 * the model (`PromptFiles`). No permission check: the caller has confined `target`.
 */
export const readDirectory = (fs: FileSystem.FileSystem, target: string, input: Input) =>
  Effect.gen(function* () {
    const names = yield* fs
      .readDirectory(target)
      .pipe(Effect.mapError(BuiltinTool.fileFailure("read the directory", target)))
    const entries = yield* Effect.forEach(
      names,
      (name) =>
        fs.stat(path.join(target, name)).pipe(
          Effect.map(
            (info): ToolStructured.Entry =>
              info.type === "Directory" ? { path: `${name}/`, type: "directory" } : { path: name, type: "file" }
          ),
          Effect.orElseSucceed((): ToolStructured.Entry => ({ path: name, type: "file" }))
        ),
      { concurrency: 16 }
    )
    entries.sort((a, b) => Order.string(a.path, b.path))
    const start = (input.offset ?? 1) - 1
    const shown = entries.slice(start, start + (input.limit ?? defaultLimit))
    const more = start + shown.length < entries.length
    const footer = more
      ? `(Showing entries ${start + 1}-${start + shown.length} of ${entries.length}. Use offset=${start + shown.length + 1} to continue.)`
      : `(${entries.length} entries)`
    const structured: ToolStructured.ListPage = {
      entries: shown,
      truncated: more,
      ...(more ? { next: start + shown.length + 1 } : {})
    }
    return BuiltinTool.text(
      [
        `<path>${target}</path>`,
        "<type>directory</type>",
        "<entries>",
        ...shown.map((entry) => entry.path),
        "",
        footer,
        "</entries>"
      ].join("\n"),
      structured
    )
  })

/**
 * The numbered lines of text file `target` as `read` returns them, from `offset` for `limit` lines
 * within the {@link maxBytes} budget, with the footer saying where to continue; a binary file is a
 * ToolFailure. Also the synthetic read of a text file attached to a prompt (`PromptFiles`). No
 * permission check: the caller has confined `target`.
 */
export const readText = (fs: FileSystem.FileSystem, target: string, input: Input) =>
  Effect.gen(function* () {
    const sample = yield* fs.stream(target, { bytesToRead: BinaryFile.sampleSize }).pipe(
      Stream.runFold(new Uint8Array(0), (acc, chunk) => {
        const next = new Uint8Array(acc.length + chunk.length)
        next.set(acc)
        next.set(chunk, acc.length)
        return next
      }),
      Effect.mapError(BuiltinTool.fileFailure("read", target))
    )
    if (BinaryFile.looksBinary(sample)) return yield* BuiltinTool.fail(`Cannot read binary file: ${target}`)

    const offset = input.offset ?? 1
    const limit = input.limit ?? defaultLimit
    const lines: Array<string> = []
    // The lines returned, unnumbered (a very long line cut as shown): the text page's content.
    const raw: Array<string> = []
    let lineNumber = 0
    let bytes = 0
    // Why reading stopped before the end: the line limit, the byte budget, or not at all.
    let stopped: "limit" | "bytes" | undefined
    yield* fs.stream(target).pipe(
      Stream.decodeText("utf-8"),
      Stream.splitLines,
      // Stops at the first line past what is returned: a huge file is never read to its end.
      Stream.runForEachWhile((line) =>
        Effect.sync(() => {
          lineNumber++
          if (lineNumber < offset) return true
          if (lines.length === limit) {
            stopped = "limit"
            return false
          }
          const shown =
            line.length > maxLineLength
              ? `${line.slice(0, maxLineLength)}... (line truncated to ${maxLineLength} characters)`
              : line
          const numbered = `${lineNumber}: ${shown}`
          const size = Buffer.byteLength(numbered, "utf8") + 1
          if (bytes + size > maxBytes && lines.length > 0) {
            stopped = "bytes"
            return false
          }
          lines.push(numbered)
          raw.push(shown)
          bytes += size
          return true
        })
      ),
      Effect.mapError(BuiltinTool.fileFailure("read", target))
    )
    // A whole file (no offset or limit, read to its end within the budget) is structured as its
    // content, a part of one as a text page, as upstream's read gives them.
    const whole = input.offset === undefined && input.limit === undefined && stopped === undefined
    const fileContent = Effect.map(
      fs.readFileString(target).pipe(Effect.mapError(BuiltinTool.fileFailure("read", target))),
      (content): ToolStructured.FileContent => ({
        uri: pathToFileURL(target).href,
        name: path.basename(target),
        content,
        encoding: "utf8",
        mime: textType(target)
      })
    )
    if (lines.length === 0 && lineNumber === 0) {
      return BuiltinTool.text(
        [`<path>${target}</path>`, "<type>file</type>", "<content>", "(The file is empty.)", "</content>"].join("\n"),
        yield* fileContent
      )
    }
    if (lines.length === 0) {
      return yield* BuiltinTool.fail(`Offset ${offset} is past the end of ${target}, which has ${lineNumber} lines`)
    }
    const last = offset + lines.length - 1
    const footer =
      stopped === undefined
        ? `(End of file - total ${lineNumber} lines)`
        : stopped === "bytes"
          ? `(Output capped at ${maxBytes / 1024} KiB: showing lines ${offset}-${last}. Use offset=${last + 1} to continue.)`
          : `(Showing lines ${offset}-${last}. The file has more lines: use offset=${last + 1} to continue.)`
    const page: ToolStructured.TextPage = {
      type: "text-page",
      content: raw.join("\n"),
      mime: textType(target),
      offset,
      truncated: stopped !== undefined,
      ...(stopped === undefined ? {} : { next: last + 1 })
    }
    return BuiltinTool.text(
      [`<path>${target}</path>`, "<type>file</type>", "<content>", ...lines, "", footer, "</content>"].join("\n"),
      whole ? yield* fileContent : page
    )
  })

export const make = (options: Options = {}) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem

    return BuiltinTool.define({
      name: "read",
      description,
      input: Input,
      execute: Traced.fn("ReadTool.execute")(function* (input: Input, context: ToolRegistry.CallContext) {
        // The real path (symlinks resolved) is what is confined, asked about and read.
        const resolved = yield* ToolPath.target(context, input.path)
        const target = resolved.path
        const info = yield* fs.stat(target).pipe(Effect.option)
        const isDirectory = Option.isSome(info) && info.value.type === "Directory"
        yield* ToolPath.authorize(context, resolved, {
          kind: isDirectory ? "directory" : "file",
          managedDir: options.toolOutputDir
        })
        // Every read asks: the agents' rules allow reads, except `.env` files, which ask (a symlink
        // to a `.env` file asks as that file does).
        yield* context.ask({ action: "read", resources: [target], metadata: { filepath: target } })
        if (Option.isNone(info)) {
          const hints = yield* similar(fs, target)
          return yield* BuiltinTool.fail(
            hints.length === 0
              ? `File not found: ${target}`
              : `File not found: ${target}\nDid you mean one of these?\n${hints.join("\n")}`
          )
        }
        const read =
          (kind: "file" | "directory") =>
          <A>(result: A) =>
            options.onRead === undefined
              ? Effect.succeed(result)
              : Effect.as(options.onRead(context, target, kind), result)
        if (isDirectory) return yield* readDirectory(fs, target, input).pipe(Effect.flatMap(read("directory")))
        const type = attachmentType(target)
        if (type !== undefined) {
          const size = Number(info.value.size)
          if (size > maxAttachmentBytes) {
            return yield* BuiltinTool.fail(
              `Cannot read ${target}: it has ${size} bytes, more than the ${maxAttachmentBytes} bytes a file attachment may have`
            )
          }
          const bytes = yield* fs.readFile(target).pipe(Effect.mapError(BuiltinTool.fileFailure("read", target)))
          const structured: ToolStructured.FileContent = {
            uri: pathToFileURL(target).href,
            name: path.basename(target),
            content: Buffer.from(bytes).toString("base64"),
            encoding: "base64",
            mime: type
          }
          return yield* read("file")({
            content: [
              {
                type: "text",
                text: `Read ${type === "application/pdf" ? "PDF" : "image"} file ${target} (${type}, ${size} bytes); it is attached.`
              },
              { type: "file", uri: pathToFileURL(target).href, mime: type, name: path.basename(target) }
            ],
            structured
          } satisfies ToolRegistry.Result)
        }
        if (BinaryFile.hasBinaryExtension(target)) return yield* BuiltinTool.fail(`Cannot read binary file: ${target}`)
        return yield* readText(fs, target, input).pipe(Effect.flatMap(read("file")))
      })
    })
  })
