export * as ApplyPatchTool from "./apply-patch-tool.js"

import * as path from "node:path"
import { FileSystem } from "@effect/platform"
import type { ToolStructured } from "@opencode-ai/schema"
import { Effect, Either, Option, Schema } from "effect"
import { Traced } from "../../observability/traced.js"
import type { ToolRegistry } from "../tool-registry.js"
import { BuiltinTool } from "./builtin-tool.js"
import { PatchText } from "./patch-text.js"
import { ToolPath } from "./tool-path.js"
import { WriteTool } from "./write-tool.js"

export const Input = Schema.Struct({
  patchText: Schema.String.annotations({
    description: 'The whole patch, from "*** Begin Patch" to "*** End Patch"'
  })
})
export type Input = typeof Input.Type

const description = `Applies a patch that adds, updates, moves and deletes files, all or nothing.

The patch format:
*** Begin Patch
*** Add File: path/to/new.txt
+every line of the new file, each starting with "+"
*** Update File: path/to/existing.ts
*** Move to: path/to/renamed.ts      (optional)
@@ a line near the change, to find the right place (optional)
 an unchanged context line (starts with a space)
-a removed line
+an added line
*** Delete File: path/to/obsolete.txt
*** End Patch

- Give about three lines of context around each change; context and removed lines must match the file.
- Paths are relative to the working directory (or absolute).
- Every change is checked before any file is written: if one hunk does not apply, nothing changes.`

/** One file's planned change: its content before (absent: new) and after (absent: deleted). */
interface Change {
  readonly path: string
  readonly before: string | undefined
  after: string | undefined
  /** For a moved file's destination: where it came from. */
  movedFrom?: string
}

export const make = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem

  const exists = (target: string) =>
    fs.stat(target).pipe(
      Effect.map((info) => Option.some(info.type)),
      Effect.catchAll(() => Effect.succeed(Option.none()))
    )

  return BuiltinTool.define({
    name: "apply_patch",
    description,
    input: Input,
    execute: Traced.fn("ApplyPatchTool.execute")(function* (input: Input, context: ToolRegistry.CallContext) {
      const parsed = PatchText.parse(input.patchText)
      if (Either.isLeft(parsed)) return yield* BuiltinTool.fail(`Invalid patch: ${parsed.left}`)
      const hunks = parsed.right

      // Every path is resolved to its real path (symlinks followed; a new file's nearest existing
      // parent), and outside directories are authorized before anything is read. Changes are keyed,
      // named in the edit ask and written by real path.
      const named = hunks.flatMap((hunk) =>
        hunk.type === "update" && hunk.movePath !== undefined ? [hunk.path, hunk.movePath] : [hunk.path]
      )
      const realDir = yield* ToolPath.locationDir(context)
      const resolved = new Map<string, ToolPath.Target>()
      for (const file of new Set(named)) {
        resolved.set(file, yield* ToolPath.classify(context, realDir, ToolPath.resolve(context, file)))
      }
      const names = new Map<string, string>()
      const authorized = new Set<string>()
      for (const target of resolved.values()) {
        names.set(target.path, target.name)
        if (authorized.has(target.path)) continue
        authorized.add(target.path)
        yield* ToolPath.authorize(context, target, { kind: "file" })
      }
      const real = (file: string) => resolved.get(file)!.path
      const nameOf = (target: string) => names.get(target)!

      // Plan every change in memory; a later hunk on the same file sees the earlier one's result.
      const changes = new Map<string, Change>()
      const current = (target: string) =>
        Effect.gen(function* () {
          const planned = changes.get(target)
          if (planned !== undefined) return planned.after
          const type = yield* exists(target)
          if (Option.isNone(type)) return undefined
          if (type.value === "Directory") return yield* BuiltinTool.fail(`Cannot patch ${target}: it is a directory`)
          return yield* fs.readFileString(target).pipe(Effect.mapError(BuiltinTool.fileFailure("read", target)))
        })
      const plan = (target: string, after: string | undefined) =>
        Effect.gen(function* () {
          const planned = changes.get(target)
          if (planned !== undefined) {
            planned.after = after
            return planned
          }
          const change: Change = { path: target, before: yield* current(target), after }
          changes.set(target, change)
          return change
        })

      for (const hunk of hunks) {
        const target = real(hunk.path)
        switch (hunk.type) {
          case "add": {
            yield* current(target)
            yield* plan(target, hunk.contents)
            break
          }
          case "delete": {
            if ((yield* current(target)) === undefined)
              return yield* BuiltinTool.fail(`Cannot delete ${target}: no such file`)
            yield* plan(target, undefined)
            break
          }
          case "update": {
            const before = yield* current(target)
            if (before === undefined) return yield* BuiltinTool.fail(`Cannot update ${target}: no such file`)
            const applied = PatchText.applyChunks(nameOf(target), before, hunk.chunks)
            if (Either.isLeft(applied)) return yield* BuiltinTool.fail(`Patch does not apply: ${applied.left}`)
            if (hunk.movePath === undefined) {
              yield* plan(target, applied.right)
            } else {
              const destination = real(hunk.movePath)
              if (destination !== target) {
                yield* plan(target, undefined)
                const moved = yield* plan(destination, applied.right)
                moved.movedFrom = target
              } else {
                yield* plan(target, applied.right)
              }
            }
            break
          }
        }
      }

      const files = [...changes.values()]
        .filter((change) => change.before !== change.after || change.movedFrom !== undefined)
        .map((change) => {
          const name = nameOf(change.path)
          const type: ToolStructured.AppliedOperation["type"] =
            change.after === undefined ? "delete" : change.before === undefined ? "add" : "update"
          return {
            change,
            name,
            type,
            diff: WriteTool.unifiedDiff(name, change.before ?? "", change.after ?? "")
          }
        })
      if (files.length === 0) return yield* BuiltinTool.fail("The patch changes nothing")

      yield* context.ask({
        action: "edit",
        resources: files.map((file) => file.name),
        metadata: {
          files: files.map((file) => ({ filepath: file.change.path, type: file.type })),
          diff: files.map((file) => file.diff).join("\n")
        }
      })

      // Write everything; if a write fails, restore what was already written (best effort).
      const done: Array<Change> = []
      const restore = () =>
        Effect.forEach(
          [...done].reverse(),
          (change) =>
            change.before === undefined
              ? fs.remove(change.path).pipe(Effect.ignore)
              : fs.writeFileString(change.path, change.before).pipe(Effect.ignore),
          { discard: true }
        )
      const write = (change: Change) =>
        (change.after === undefined
          ? fs.remove(change.path).pipe(Effect.mapError(BuiltinTool.fileFailure("delete", change.path)))
          : fs
              .makeDirectory(path.dirname(change.path), { recursive: true })
              .pipe(
                Effect.zipRight(fs.writeFileString(change.path, change.after)),
                Effect.mapError(BuiltinTool.fileFailure("write", change.path))
              )
        ).pipe(Effect.tap(() => Effect.sync(() => done.push(change))))
      // Deletions last, so a move writes its destination before removing its source.
      const ordered = [
        ...files.filter((f) => f.change.after !== undefined),
        ...files.filter((f) => f.change.after === undefined)
      ]
      yield* Effect.forEach(ordered, (file) => write(file.change), { discard: true }).pipe(
        Effect.tapError(restore),
        Effect.uninterruptible
      )

      // A move reads as one entry (its source's deletion is part of it).
      const movedSources = new Set(
        files.flatMap((file) => (file.change.movedFrom !== undefined ? [file.change.movedFrom] : []))
      )
      const reported = files.filter((file) => !(file.type === "delete" && movedSources.has(file.change.path)))
      const summary = reported.map((file) =>
        file.change.movedFrom !== undefined
          ? `R ${nameOf(file.change.movedFrom)} -> ${file.name}`
          : `${file.type === "add" ? "A" : file.type === "delete" ? "D" : "M"} ${file.name}`
      )
      // Structured as upstream's apply_patch: the operations in the order they were applied (a move
      // is its destination's write and its source's deletion), and each file's diff.
      const structured: ToolStructured.ApplyPatch = {
        applied: ordered.map((file) => ({ type: file.type, resource: file.name, target: file.change.path })),
        files: files.map((file) =>
          WriteTool.fileDiff(
            file.name,
            file.change.before ?? "",
            file.change.after ?? "",
            file.type === "add" ? "added" : file.type === "delete" ? "deleted" : "modified"
          )
        )
      }
      return BuiltinTool.text(`Success. Updated the following files:\n${summary.join("\n")}`, structured)
    })
  })
})
