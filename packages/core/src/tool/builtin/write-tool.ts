export * as WriteTool from "./write-tool.js"

import * as path from "node:path"
import { FileSystem } from "@effect/platform"
import type { ToolStructured } from "@opencode-ai/schema"
import { createTwoFilesPatch } from "diff"
import { Effect, Option, Schema } from "effect"
import { Traced } from "../../observability/traced.js"
import type { ToolRegistry } from "../tool-registry.js"
import { BuiltinTool } from "./builtin-tool.js"
import { ToolPath } from "./tool-path.js"

export const Input = Schema.Struct({
  path: Schema.String.annotations({
    description: "The file to write: an absolute path, or one relative to the working directory"
  }),
  content: Schema.String.annotations({ description: "The complete new content of the file" })
})
export type Input = typeof Input.Type

const description = `Writes a file, replacing it completely if it exists.

- Missing parent directories are created.
- Prefer the edit tool for changing part of an existing file; read a file before overwriting it.
- Do not create documentation or README files unless asked to.`

/** A unified diff of one file's change, named by its path relative to the working directory. Pure. */
export const unifiedDiff = (name: string, before: string, after: string): string =>
  createTwoFilesPatch(name, name, before, after)

/**
 * One file's change as a tool's structured result reports it: its unified diff (see
 * {@link unifiedDiff}) and the lines it adds and removes. Pure.
 */
export const fileDiff = (
  name: string,
  before: string,
  after: string,
  status: ToolStructured.FileDiff["status"]
): ToolStructured.FileDiff => {
  const patch = unifiedDiff(name, before, after)
  let additions = 0
  let deletions = 0
  // The first two lines after the "===" separator are the file headers ("--- a", "+++ b").
  for (const line of patch.split("\n").slice(4)) {
    if (line.startsWith("+")) additions++
    else if (line.startsWith("-")) deletions++
  }
  return { file: name, patch, additions, deletions, status }
}

export const make = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  return BuiltinTool.define({
    name: "write",
    description,
    input: Input,
    execute: Traced.fn("WriteTool.execute")(function* (input: Input, context: ToolRegistry.CallContext) {
      // The real path (symlinks resolved; a new file's nearest existing parent) is what is confined,
      // named in the edit ask, and written.
      const resolved = yield* ToolPath.target(context, input.path)
      const target = resolved.path
      yield* ToolPath.authorize(context, resolved, { kind: "file" })
      const info = yield* fs.stat(target).pipe(Effect.option)
      if (Option.isSome(info) && info.value.type === "Directory") {
        return yield* BuiltinTool.fail(`Cannot write ${target}: it is a directory`)
      }
      const before = Option.isSome(info)
        ? yield* fs.readFileString(target).pipe(Effect.mapError(BuiltinTool.fileFailure("read", target)))
        : ""
      const name = resolved.name
      const diff = unifiedDiff(name, before, input.content)
      yield* context.ask({ action: "edit", resources: [name], metadata: { filepath: target, diff } })
      yield* fs
        .makeDirectory(path.dirname(target), { recursive: true })
        .pipe(Effect.mapError(BuiltinTool.fileFailure("create the directory of", target)))
      yield* fs.writeFileString(target, input.content).pipe(Effect.mapError(BuiltinTool.fileFailure("write", target)))
      const created = Option.isNone(info)
      const structured: ToolStructured.Write = { operation: "write", target, resource: name, existed: !created }
      return BuiltinTool.text(
        `${created ? "Created" : "Overwrote"} ${target} (${Buffer.byteLength(input.content, "utf8")} bytes).`,
        structured
      )
    })
  })
})
