export * as EditTool from "./edit-tool.js"

import * as path from "node:path"
import { FileSystem } from "@effect/platform"
import type { ToolStructured } from "@opencode-ai/schema"
import { Effect, Option, Schema } from "effect"
import { Traced } from "../../observability/traced.js"
import type { ToolRegistry } from "../tool-registry.js"
import { BuiltinTool } from "./builtin-tool.js"
import { ToolPath } from "./tool-path.js"
import { WriteTool } from "./write-tool.js"

export const Input = Schema.Struct({
  path: Schema.String.annotations({
    description: "The file to edit: an absolute path, or one relative to the working directory"
  }),
  oldString: Schema.String.annotations({
    description: "The exact text to replace, whitespace and indentation included (empty only to create a new file)"
  }),
  newString: Schema.String.annotations({ description: "The text to put in its place (must differ from oldString)" }),
  replaceAll: Schema.optional(Schema.Boolean).annotations({
    description: "Replace every occurrence of oldString instead of exactly one. Default false."
  })
})
export type Input = typeof Input.Type

const description = `Replaces exact text in a file.

- oldString must match the file exactly, including whitespace and indentation, and occur exactly once, unless replaceAll is true: include enough surrounding lines to make it unique.
- Read the file first, and copy the text from the read output without its line-number prefix.
- An empty oldString creates a file that does not exist yet (or fills an empty one) with newString.`

/** How a replacement in `content` turned out. Pure. */
export type Replacement =
  | { readonly _tag: "Replaced"; readonly content: string; readonly count: number }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "Ambiguous"; readonly count: number }

const occurrences = (content: string, search: string): number => content.split(search).length - 1

/**
 * Replaces `oldString` in `content`: exactly one occurrence, or all with `replaceAll`. When the file
 * uses CRLF line endings and the strings were written with LF, the strings are matched (and
 * replaced) with CRLF, so a model's LF text still edits a Windows file without mixing endings. Pure.
 */
export const replace = (content: string, oldString: string, newString: string, replaceAll: boolean): Replacement => {
  const candidates: Array<readonly [string, string]> = [[oldString, newString]]
  if (content.includes("\r\n") && oldString.includes("\n") && !oldString.includes("\r\n")) {
    candidates.push([oldString.replace(/\n/g, "\r\n"), newString.replace(/\r?\n/g, "\r\n")])
  }
  for (const [search, replacement] of candidates) {
    const count = occurrences(content, search)
    if (count === 0) continue
    if (count > 1 && !replaceAll) return { _tag: "Ambiguous", count }
    if (replaceAll) return { _tag: "Replaced", content: content.split(search).join(replacement), count }
    const at = content.indexOf(search)
    // Slicing, not String.replace: `$&` and friends in newString must stay literal.
    return {
      _tag: "Replaced",
      content: content.slice(0, at) + replacement + content.slice(at + search.length),
      count: 1
    }
  }
  return { _tag: "NotFound" }
}

export const make = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  return BuiltinTool.define({
    name: "edit",
    description,
    input: Input,
    execute: Traced.fn("EditTool.execute")(function* (input: Input, context: ToolRegistry.CallContext) {
      if (input.oldString === input.newString) {
        return yield* BuiltinTool.fail("oldString and newString are identical: there is nothing to change")
      }
      // The real path (symlinks resolved) is what is confined, named in the edit ask, and written.
      const resolved = yield* ToolPath.target(context, input.path)
      const target = resolved.path
      yield* ToolPath.authorize(context, resolved, { kind: "file" })
      const info = yield* fs.stat(target).pipe(Effect.option)
      if (Option.isSome(info) && info.value.type === "Directory") {
        return yield* BuiltinTool.fail(`Cannot edit ${target}: it is a directory`)
      }
      const exists = Option.isSome(info)
      const before = exists
        ? yield* fs.readFileString(target).pipe(Effect.mapError(BuiltinTool.fileFailure("read", target)))
        : ""
      let after: string
      let count: number
      if (input.oldString === "") {
        if (before !== "") {
          return yield* BuiltinTool.fail(
            `oldString is empty, which only creates a new file, but ${target} already has content: give the exact text to replace`
          )
        }
        after = input.newString
        count = 1
      } else {
        if (!exists)
          return yield* BuiltinTool.fail(
            `File not found: ${target} (to create a file, use write or an empty oldString)`
          )
        const result = replace(before, input.oldString, input.newString, input.replaceAll ?? false)
        if (result._tag === "NotFound") {
          return yield* BuiltinTool.fail(
            `oldString was not found in ${target}. It must match the file exactly, including whitespace and indentation: read the file again and copy the text to replace.`
          )
        }
        if (result._tag === "Ambiguous") {
          return yield* BuiltinTool.fail(
            `oldString occurs ${result.count} times in ${target}. Include more surrounding lines to make it unique, or set replaceAll to replace every occurrence.`
          )
        }
        after = result.content
        count = result.count
      }
      const name = resolved.name
      const diff = WriteTool.unifiedDiff(name, before, after)
      yield* context.ask({ action: "edit", resources: [name], metadata: { filepath: target, diff } })
      if (!exists) {
        yield* fs
          .makeDirectory(path.dirname(target), { recursive: true })
          .pipe(Effect.mapError(BuiltinTool.fileFailure("create the directory of", target)))
      }
      yield* fs.writeFileString(target, after).pipe(Effect.mapError(BuiltinTool.fileFailure("write", target)))
      const structured: ToolStructured.Edit = {
        files: [WriteTool.fileDiff(name, before, after, exists ? "modified" : "added")],
        replacements: count
      }
      return BuiltinTool.text(
        exists ? `Edited ${target}: replaced ${count} occurrence${count === 1 ? "" : "s"}.` : `Created ${target}.`,
        structured
      )
    })
  })
})
