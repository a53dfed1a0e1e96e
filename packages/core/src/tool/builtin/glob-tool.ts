export * as GlobTool from "./glob-tool.js"

import * as path from "node:path"
import { FileSystem } from "@effect/platform"
import type { ToolStructured } from "@opencode-ai/schema"
import { Effect, Option, Order, Schema } from "effect"
import { Traced } from "../../observability/traced.js"
import type { ToolRegistry } from "../tool-registry.js"
import { BuiltinTool } from "./builtin-tool.js"
import { FileWalk } from "./file-walk.js"
import { ToolPath } from "./tool-path.js"

/** The most paths one call returns (the newest). */
export const maxResults = 100
/** The most matches considered for the newest-first ordering; a walk stops there. */
export const maxCandidates = 10_000

export const Input = Schema.Struct({
  pattern: Schema.String.annotations({
    description:
      'The glob to match file paths against, relative to the search directory, e.g. "**/*.ts" or "src/**/*.{js,jsx}"'
  }),
  path: Schema.optional(Schema.String).annotations({
    description:
      "The directory to search in (absolute, or relative to the working directory). Default: the working directory."
  })
})
export type Input = typeof Input.Type

const description = `Finds files by name with a glob pattern ("**/*.ts", "src/**/test-*.js", "*.{json,yaml}").

- Returns absolute paths, the most recently modified first, at most ${maxResults}.
- Files excluded by .gitignore and .git folders are skipped; hidden files are included.
- Use grep to search file contents.`

export const make = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  return BuiltinTool.define({
    name: "glob",
    description,
    input: Input,
    execute: Traced.fn("GlobTool.execute")(function* (input: Input, context: ToolRegistry.CallContext) {
      // The real path (symlinks resolved) is what is confined and walked. The walk lists symlinked
      // entries by name (inside the directory) and does not descend into symlinked directories.
      const resolved = yield* ToolPath.target(context, input.path ?? ".")
      const root = resolved.path
      yield* ToolPath.authorize(context, resolved, { kind: "directory" })
      yield* context.ask({
        action: "glob",
        resources: [input.pattern],
        metadata: { pattern: input.pattern, path: root }
      })
      const info = yield* fs.stat(root).pipe(Effect.option)
      if (Option.isNone(info) || info.value.type !== "Directory") {
        return yield* BuiltinTool.fail(`Cannot search ${root}: it is not a directory`)
      }
      const matches = FileWalk.matcher(input.pattern)
      const found = yield* FileWalk.files({ root, match: matches, limit: maxCandidates })
      const dated = yield* Effect.forEach(
        found,
        (file) =>
          fs.stat(file).pipe(
            Effect.map((stat) => ({
              file,
              mtime: Option.match(stat.mtime, { onNone: () => 0, onSome: (date) => date.getTime() })
            })),
            Effect.orElseSucceed(() => ({ file, mtime: 0 }))
          ),
        { concurrency: 32 }
      )
      dated.sort((a, b) => b.mtime - a.mtime || Order.string(a.file, b.file))
      const shown = dated.slice(0, maxResults).map((entry) => entry.file)
      // Structured as upstream's glob: the entries shown, relative to the Location.
      const structured: ToolStructured.Glob = {
        value: shown.map((file) => ({ path: path.relative(context.directory, file) || ".", type: "file" }))
      }
      if (shown.length === 0) return BuiltinTool.text("No files found", structured)
      const truncated = found.length > shown.length
      const note = !truncated
        ? ""
        : found.length >= maxCandidates
          ? `\n\n(Showing the ${maxResults} newest of more than ${maxCandidates} matches: use a more specific pattern or path.)`
          : `\n\n(Showing the ${maxResults} newest of ${found.length} matches: use a more specific pattern or path.)`
      return BuiltinTool.text(`${shown.join("\n")}${note}`, structured)
    })
  })
})
