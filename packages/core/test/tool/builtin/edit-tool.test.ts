import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { EditTool } from "../../../src/tool/builtin/edit-tool.js"
import { call, context, failure, project, textOf } from "./harness.js"

describe("edit", () => {
  it.live("replaces one exact, unique occurrence; asks edit with a unified diff", () =>
    Effect.gen(function* () {
      const p = project({ "src/a.ts": "const a = 1\nconst b = 2\n" })
      const { ctx, asks } = context(p.directory)
      const result = yield* call("edit", { path: "src/a.ts", oldString: "const b = 2", newString: "const b = 3" }, ctx)
      expect(fs.readFileSync(p.file("src/a.ts"), "utf8")).toBe("const a = 1\nconst b = 3\n")
      expect(textOf(result)).toContain("replaced 1 occurrence")
      expect(asks).toHaveLength(1)
      expect(asks[0]!.action).toBe("edit")
      expect(asks[0]!.resources).toEqual([path.join("src", "a.ts")])
      const diff = String(asks[0]!.metadata!.diff)
      expect(diff).toContain("--- src/a.ts")
      expect(diff).toContain("@@ -1,2 +1,2 @@")
      expect(diff).toContain("-const b = 2\n+const b = 3")
      // Upstream's shape: the file's diff with its line counts, and the replacements made.
      expect(result.structured).toEqual({
        files: [{ file: path.join("src", "a.ts"), patch: diff, additions: 1, deletions: 1, status: "modified" }],
        replacements: 1
      })
    })
  )

  it.live("an ambiguous oldString fails unless replaceAll; replaceAll replaces every occurrence", () =>
    Effect.gen(function* () {
      const p = project({ "a.txt": "x = 1\nx = 1\n" })
      const { ctx } = context(p.directory)
      const message = yield* failure(call("edit", { path: "a.txt", oldString: "x = 1", newString: "x = 2" }, ctx))
      expect(message).toContain("occurs 2 times")
      expect(message).toContain("replaceAll")
      expect(fs.readFileSync(p.file("a.txt"), "utf8")).toBe("x = 1\nx = 1\n")
      const result = yield* call(
        "edit",
        { path: "a.txt", oldString: "x = 1", newString: "x = 2", replaceAll: true },
        ctx
      )
      expect(fs.readFileSync(p.file("a.txt"), "utf8")).toBe("x = 2\nx = 2\n")
      expect(result.structured).toMatchObject({ replacements: 2, files: [{ status: "modified" }] })
    })
  )

  it.live("not found, identical strings, a missing file, a denied ask: readable failures, file unchanged", () =>
    Effect.gen(function* () {
      const p = project({ "a.txt": "hello\n" })
      const { ctx } = context(p.directory)
      expect(yield* failure(call("edit", { path: "a.txt", oldString: "bye", newString: "x" }, ctx))).toContain(
        "oldString was not found"
      )
      expect(yield* failure(call("edit", { path: "a.txt", oldString: "hello", newString: "hello" }, ctx))).toContain(
        "identical"
      )
      expect(yield* failure(call("edit", { path: "b.txt", oldString: "a", newString: "b" }, ctx))).toContain(
        "File not found"
      )
      const denied = context(p.directory, () => "deny")
      expect(
        yield* failure(call("edit", { path: "a.txt", oldString: "hello", newString: "bye" }, denied.ctx))
      ).toContain("Permission denied")
      expect(fs.readFileSync(p.file("a.txt"), "utf8")).toBe("hello\n")
    })
  )

  it.live("an empty oldString creates a new file, but never overwrites content", () =>
    Effect.gen(function* () {
      const p = project({ "a.txt": "content\n" })
      const { ctx } = context(p.directory)
      yield* call("edit", { path: "new/b.txt", oldString: "", newString: "fresh\n" }, ctx)
      expect(fs.readFileSync(p.file("new/b.txt"), "utf8")).toBe("fresh\n")
      expect(yield* failure(call("edit", { path: "a.txt", oldString: "", newString: "x" }, ctx))).toContain(
        "already has content"
      )
    })
  )

  it("replace: `$` patterns stay literal; LF strings edit a CRLF file without mixing endings", () => {
    expect(EditTool.replace("a b", "b", "$&$1", false)).toEqual({ _tag: "Replaced", content: "a $&$1", count: 1 })
    expect(EditTool.replace("one\r\ntwo\r\nthree\r\n", "one\ntwo", "uno\ndos", false)).toEqual({
      _tag: "Replaced",
      content: "uno\r\ndos\r\nthree\r\n",
      count: 1
    })
    expect(EditTool.replace("abc", "x", "y", false)).toEqual({ _tag: "NotFound" })
    expect(EditTool.replace("aa", "a", "b", false)).toEqual({ _tag: "Ambiguous", count: 2 })
  })
})
