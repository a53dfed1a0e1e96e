export * as GrepTool from "./grep-tool.js"

import * as path from "node:path"
import { FileSystem } from "@effect/platform"
import type { ToolStructured } from "@opencode-ai/schema"
import { Chunk, Duration, Effect, Option, Order, Schema, Stream } from "effect"
import { Traced } from "../../observability/traced.js"
import type { ToolRegistry } from "../tool-registry.js"
import { BinaryFile } from "./binary-file.js"
import { BuiltinTool } from "./builtin-tool.js"
import { FileWalk } from "./file-walk.js"
import { RegexSearch } from "./regex-search.js"
import { ToolPath } from "./tool-path.js"

/** The most matching lines one call returns. */
export const maxResults = 100
/** Searching stops once this many lines matched (the newest files' matches are then shown). */
export const maxCandidates = 1000
/** A matching line longer than this is cut. */
export const maxLineLength = 2000
/** Walked files are confined in batches of this many (one external_directory ask per batch at most). */
const walkBatch = 256
/** Files up to this size are read whole; larger ones (e.g. managed tool output) are streamed by line. */
const wholeFileBytes = 1024 * 1024

export interface Options {
  /** The Managed Tool Output directory: searchable without an `external_directory` ask. */
  readonly toolOutputDir?: string | undefined
  /**
   * The time matching may take in one call (default `RegexSearch.defaultTimeLimit`, 15 s). Matching
   * runs in a worker thread; past the limit the worker is terminated and the call fails readably.
   */
  readonly timeLimit?: Duration.DurationInput | undefined
}

export const Input = Schema.Struct({
  pattern: Schema.String.annotations({
    description: 'The regular expression (JavaScript syntax) to search file contents for, e.g. "function\\s+\\w+"'
  }),
  path: Schema.optional(Schema.String).annotations({
    description:
      "The directory or file to search (absolute, or relative to the working directory). Default: the working directory."
  }),
  include: Schema.optional(Schema.String).annotations({
    description: 'Only search files matching this glob, e.g. "*.ts" or "*.{ts,tsx}"'
  })
})
export type Input = typeof Input.Type

const description = `Searches file contents with a regular expression (JavaScript syntax).

- Returns matching lines as "path:line: text", files modified most recently first, at most ${maxResults} lines.
- Narrow the files with \`include\` (a glob such as "*.ts") and \`path\`.
- Files excluded by .gitignore, .git folders and binary files are skipped; hidden files are searched.
- Searching stops after ${maxCandidates} matching lines: a pattern that matches everywhere returns quickly, but only some of the matches.
- Use glob to find files by name.`

interface Match {
  readonly file: string
  readonly line: number
  readonly text: string
}

export const make = (options: Options = {}) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem

    const timeLimit = options.timeLimit ?? RegexSearch.defaultTimeLimit

    /**
     * The matching lines of one file, up to `room` of them; binary and unreadable files have none.
     * The file is read here; the matching runs in `searcher`'s worker (a whole file, or a batch of
     * streamed lines, per request).
     */
    const search = (file: string, size: number, searcher: RegexSearch.Searcher, room: number) =>
      Effect.gen(function* () {
        const matches: Array<Match> = []
        const add = (text: string, line: number) =>
          matches.push({ file, line, text: text.length > maxLineLength ? `${text.slice(0, maxLineLength)}...` : text })
        if (size <= wholeFileBytes) {
          const bytes = yield* fs.readFile(file)
          if (BinaryFile.looksBinary(bytes.subarray(0, BinaryFile.sampleSize))) return matches
          for (const found of yield* searcher.file(bytes, room)) add(found.text, found.line)
          return matches
        }
        const sample = yield* fs
          .stream(file, { bytesToRead: BinaryFile.sampleSize })
          .pipe(Stream.runHead, Effect.map(Option.getOrElse(() => new Uint8Array(0))))
        if (BinaryFile.looksBinary(sample)) return matches
        let line = 0
        yield* fs.stream(file).pipe(
          Stream.decodeText("utf-8"),
          Stream.splitLines,
          Stream.chunks,
          Stream.runForEachWhile((chunk) =>
            Effect.map(searcher.lines(Array.from(chunk), room - matches.length), (found) => {
              for (const index of found) add(Chunk.unsafeGet(chunk, index), line + index + 1)
              line += chunk.length
              return matches.length < room
            })
          )
        )
        return matches
      }).pipe(
        Effect.catchTags({
          BadArgument: () => Effect.succeed([] as Array<Match>),
          SystemError: () => Effect.succeed([] as Array<Match>)
        })
      )

    return BuiltinTool.define({
      name: "grep",
      description,
      input: Input,
      execute: Traced.fn("GrepTool.execute")(function* (input: Input, context: ToolRegistry.CallContext) {
        try {
          new RegExp(input.pattern)
        } catch (error) {
          return yield* BuiltinTool.fail(
            `Invalid regular expression ${JSON.stringify(input.pattern)}: ${(error as Error).message}`
          )
        }
        // The real path (symlinks resolved) is what is confined and searched.
        const resolved = yield* ToolPath.target(context, input.path ?? ".")
        const root = resolved.path
        const info = yield* fs.stat(root).pipe(Effect.option)
        const isFile = Option.isSome(info) && info.value.type === "File"
        yield* ToolPath.authorize(context, resolved, {
          kind: isFile ? "file" : "directory",
          managedDir: options.toolOutputDir
        })
        yield* context.ask({
          action: "grep",
          resources: [input.pattern],
          metadata: {
            pattern: input.pattern,
            path: root,
            ...(input.include !== undefined ? { include: input.include } : {})
          }
        })
        if (Option.isNone(info)) return yield* BuiltinTool.fail(`Cannot search ${root}: no such file or directory`)

        // The walk is streamed: files are searched as they are found, and once `maxCandidates` lines
        // matched the walk stops, so the rest of the tree is neither listed nor read. A batch's
        // symlinked files that lead out of the Location and the root ask external_directory (one ask
        // per batch that has any); refused, they are left out and the output says so.
        let skipped = 0
        const files: Stream.Stream<string, ToolRegistry.ToolFailure> = isFile
          ? Stream.make(root)
          : FileWalk.stream({
              root,
              ...(input.include !== undefined ? { match: FileWalk.matcher(input.include) } : {})
            }).pipe(
              Stream.filter((file) => !BinaryFile.hasBinaryExtension(file)),
              Stream.grouped(walkBatch),
              Stream.mapEffect((batch) =>
                ToolPath.confineWalk(context, Chunk.toReadonlyArray(batch), {
                  root,
                  managedDir: options.toolOutputDir
                })
              ),
              Stream.mapConcat((walked) => {
                skipped += walked.skipped
                return walked.files
              })
            )

        const matches: Array<Match> = []
        let searched = 0
        yield* Effect.gen(function* () {
          const searcher = yield* RegexSearch.make(input.pattern, { timeLimit })
          yield* files.pipe(
            Stream.mapEffect(
              (file) =>
                Effect.gen(function* () {
                  const room = maxCandidates - matches.length
                  if (room <= 0) return
                  const stat = yield* fs.stat(file).pipe(Effect.option)
                  if (Option.isNone(stat) || stat.value.type !== "File") return
                  searched++
                  const found = yield* search(file, Number(stat.value.size), searcher, room)
                  matches.push(...found.slice(0, maxCandidates - matches.length))
                }),
              { concurrency: 8, unordered: true }
            ),
            Stream.takeUntil(() => matches.length >= maxCandidates),
            Stream.runDrain
          )
        }).pipe(
          Effect.scoped,
          Effect.catchTags({
            "RegexSearch.TimeLimitExceeded": (error) =>
              BuiltinTool.fail(
                `The pattern ${JSON.stringify(input.pattern)} took longer than ${Duration.format(Duration.millis(error.limitMs))} to match, so the search was stopped. Simplify it (nested quantifiers such as (a+)+ can backtrack without end) or narrow path and include.`
              ),
            "RegexSearch.MatchFailed": (error) =>
              BuiltinTool.fail(`Searching for ${JSON.stringify(input.pattern)} failed: ${error.message}`)
          })
        )
        const skippedNote =
          skipped === 0
            ? ""
            : `\n\n(${skipped} symlinked file${skipped === 1 ? "" : "s"} leading outside the working directory ${skipped === 1 ? "was" : "were"} not searched: permission refused.)`
        if (matches.length === 0) return BuiltinTool.text(`No matches found${skippedNote}`, { value: [], searched })

        // Newest files first, lines in order within a file.
        const mtimes = new Map<string, number>()
        yield* Effect.forEach(
          new Set(matches.map((match) => match.file)),
          (file) =>
            fs.stat(file).pipe(
              Effect.map((stat) =>
                mtimes.set(file, Option.match(stat.mtime, { onNone: () => 0, onSome: (d) => d.getTime() }))
              ),
              Effect.ignore
            ),
          { concurrency: 32, discard: true }
        )
        matches.sort(
          (a, b) =>
            (mtimes.get(b.file) ?? 0) - (mtimes.get(a.file) ?? 0) || Order.string(a.file, b.file) || a.line - b.line
        )
        const shown = matches.slice(0, maxResults)
        const truncated = matches.length > shown.length
        const header =
          matches.length >= maxCandidates
            ? `Found more than ${maxCandidates} matches (showing ${shown.length}; narrow the pattern, path or include)`
            : truncated
              ? `Found ${matches.length} matches (showing ${shown.length}; narrow the pattern, path or include)`
              : `Found ${matches.length} match${matches.length === 1 ? "" : "es"}`
        // Structured as upstream's grep: the matches shown, their files relative to the Location.
        const structured: ToolStructured.Grep = {
          value: shown.map((match) => ({
            entry: { path: path.relative(context.directory, match.file) || ".", type: "file" },
            line: match.line,
            text: match.text
          })),
          searched
        }
        return BuiltinTool.text(
          [header, ...shown.map((match) => `${match.file}:${match.line}: ${match.text}`)].join("\n") + skippedNote,
          structured
        )
      })
    })
  })
