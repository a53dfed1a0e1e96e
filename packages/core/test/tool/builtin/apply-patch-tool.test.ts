import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import type { ToolStructured } from "@opencode-ai/schema"
import { Effect, Either } from "effect"
import { PatchText } from "../../../src/tool/builtin/patch-text.js"
import { call, context, failure, project, textOf } from "./harness.js"

const patch = (...lines: Array<string>) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n")

describe("apply_patch", () => {
  it.live("adds, updates (with context), deletes and moves files in one call; asks edit for every path", () =>
    Effect.gen(function* () {
      const p = project({
        "src/app.ts": "import a from 'a'\n\nfunction main() {\n  console.log('hi')\n  return 1\n}\n\nmain()\n",
        "old.txt": "bye\n",
        "docs/guide.md": "# Guide\nstep one\n"
      })
      const { ctx, asks } = context(p.directory)
      const result = yield* call(
        "apply_patch",
        {
          patchText: patch(
            "*** Add File: src/new.ts",
            "+export const x = 1",
            "+export const y = 2",
            "*** Update File: src/app.ts",
            "@@ function main() {",
            "-  console.log('hi')",
            "+  console.log('hello')",
            "   return 1",
            "*** Delete File: old.txt",
            "*** Update File: docs/guide.md",
            "*** Move to: docs/manual.md",
            "@@",
            " # Guide",
            "-step one",
            "+step two"
          )
        },
        ctx
      )
      expect(fs.readFileSync(p.file("src/new.ts"), "utf8")).toBe("export const x = 1\nexport const y = 2\n")
      expect(fs.readFileSync(p.file("src/app.ts"), "utf8")).toBe(
        "import a from 'a'\n\nfunction main() {\n  console.log('hello')\n  return 1\n}\n\nmain()\n"
      )
      expect(fs.existsSync(p.file("old.txt"))).toBe(false)
      expect(fs.existsSync(p.file("docs/guide.md"))).toBe(false)
      expect(fs.readFileSync(p.file("docs/manual.md"), "utf8")).toBe("# Guide\nstep two\n")
      const text = textOf(result)
      expect(text).toContain("Success. Updated the following files:")
      expect(text).toContain(`A ${path.join("src", "new.ts")}`)
      expect(text).toContain(`M ${path.join("src", "app.ts")}`)
      expect(text).toContain("D old.txt")
      expect(text).toContain(`R ${path.join("docs", "guide.md")} -> ${path.join("docs", "manual.md")}`)
      expect(asks).toHaveLength(1)
      expect(asks[0]!.action).toBe("edit")
      expect([...asks[0]!.resources].sort()).toEqual(
        [
          path.join("src", "new.ts"),
          path.join("src", "app.ts"),
          "old.txt",
          path.join("docs", "guide.md"),
          path.join("docs", "manual.md")
        ].sort()
      )
      expect(String(asks[0]!.metadata!.diff)).toContain("+  console.log('hello')")
      // Upstream's shape: the operations as applied (a move is its destination's add and its source's
      // delete, deletions last) and each file's diff.
      const structured = result.structured as ToolStructured.ApplyPatch
      expect(structured.applied.map((op) => `${op.type} ${op.resource}`)).toEqual([
        `add ${path.join("src", "new.ts")}`,
        `update ${path.join("src", "app.ts")}`,
        `add ${path.join("docs", "manual.md")}`,
        "delete old.txt",
        `delete ${path.join("docs", "guide.md")}`
      ])
      expect(structured.applied[0]!.target).toBe(p.file("src/new.ts"))
      expect(structured.files.map((file) => [file.file, file.status, file.additions, file.deletions])).toEqual([
        [path.join("src", "new.ts"), "added", 2, 0],
        [path.join("src", "app.ts"), "modified", 1, 1],
        ["old.txt", "deleted", 0, 1],
        [path.join("docs", "guide.md"), "deleted", 0, 2],
        [path.join("docs", "manual.md"), "added", 2, 0]
      ])
    })
  )

  it.live("atomic: one hunk that does not apply leaves every file untouched", () =>
    Effect.gen(function* () {
      const p = project({ "a.txt": "one\ntwo\n", "b.txt": "three\n" })
      const { ctx, asks } = context(p.directory)
      const message = yield* failure(
        call(
          "apply_patch",
          {
            patchText: patch(
              "*** Update File: a.txt",
              "-one",
              "+uno",
              "*** Add File: c.txt",
              "+new",
              "*** Update File: b.txt",
              "-not in the file",
              "+x"
            )
          },
          ctx
        )
      )
      expect(message).toContain("Patch does not apply")
      expect(message).toContain("not in the file")
      expect(fs.readFileSync(p.file("a.txt"), "utf8")).toBe("one\ntwo\n")
      expect(fs.existsSync(p.file("c.txt"))).toBe(false)
      expect(asks).toEqual([])
    })
  )

  it.live("missing files, malformed patches and a denied ask are readable failures", () =>
    Effect.gen(function* () {
      const p = project({ "a.txt": "a\n" })
      const { ctx } = context(p.directory)
      expect(yield* failure(call("apply_patch", { patchText: patch("*** Delete File: gone.txt") }, ctx))).toContain(
        "no such file"
      )
      expect(
        yield* failure(call("apply_patch", { patchText: patch("*** Update File: gone.txt", "-a", "+b") }, ctx))
      ).toContain("no such file")
      expect(yield* failure(call("apply_patch", { patchText: "*** Update File: a.txt\n-a\n+b" }, ctx))).toContain(
        'must start with "*** Begin Patch"'
      )
      expect(yield* failure(call("apply_patch", { patchText: patch("*** Frobnicate: a.txt") }, ctx))).toContain(
        "Invalid patch"
      )
      const denied = context(p.directory, () => "deny")
      expect(
        yield* failure(call("apply_patch", { patchText: patch("*** Update File: a.txt", "-a", "+b") }, denied.ctx))
      ).toContain("Permission denied: edit")
      expect(fs.readFileSync(p.file("a.txt"), "utf8")).toBe("a\n")
    })
  )

  it.live("a path outside the Location asks external_directory before anything else", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx, asks } = context(p.directory, (request) =>
        request.action === "external_directory" ? "deny" : "allow"
      )
      expect(
        yield* failure(call("apply_patch", { patchText: patch("*** Add File: ../outside/x.txt", "+x") }, ctx))
      ).toContain("external_directory")
      expect(asks).toEqual([
        {
          action: "external_directory",
          resources: [path.join(p.outside, "*")],
          metadata: { filepath: path.join(p.outside, "x.txt"), parentDir: p.outside }
        }
      ])
      expect(fs.existsSync(path.join(p.outside, "x.txt"))).toBe(false)
    })
  )
})

describe("PatchText", () => {
  it("parses every operation; the first chunk may omit @@; End of File marks the chunk", () => {
    const parsed = PatchText.parse(
      patch(
        "*** Add File: a",
        "+1",
        "*** Delete File: b",
        "*** Update File: c",
        " ctx",
        "-old",
        "+new",
        "*** End of File"
      )
    )
    expect(Either.getOrThrow(parsed)).toEqual([
      { type: "add", path: "a", contents: "1\n" },
      { type: "delete", path: "b" },
      { type: "update", path: "c", chunks: [{ oldLines: ["ctx", "old"], newLines: ["ctx", "new"], endOfFile: true }] }
    ])
  })

  it("tolerates a heredoc wrapper and CRLF patch text", () => {
    const parsed = PatchText.parse(`<<'EOF'\r\n${patch("*** Delete File: x")}\r\nEOF`.replace(/\n/g, "\r\n"))
    expect(Either.getOrThrow(parsed)).toEqual([{ type: "delete", path: "x" }])
  })

  it("applies chunks in order, after their @@ context line, tolerating trailing whitespace", () => {
    const file = "a\nx\nb\nx\nc\n"
    const chunks = [{ context: "b", oldLines: ["x  "], newLines: ["y"], endOfFile: false }]
    expect(Either.getOrThrow(PatchText.applyChunks("f", file, chunks))).toBe("a\nx\nb\ny\nc\n")
  })

  it("a pure addition goes at the end; an End of File chunk matches the last lines; CRLF is kept", () => {
    expect(
      Either.getOrThrow(PatchText.applyChunks("f", "a\n", [{ oldLines: [], newLines: ["b"], endOfFile: false }]))
    ).toBe("a\nb\n")
    expect(
      Either.getOrThrow(
        PatchText.applyChunks("f", "x\ny\nx\n", [{ oldLines: ["x"], newLines: ["z"], endOfFile: true }])
      )
    ).toBe("x\ny\nz\n")
    expect(
      Either.getOrThrow(
        PatchText.applyChunks("f", "a\r\nb\r\n", [{ oldLines: ["b"], newLines: ["c"], endOfFile: false }])
      )
    ).toBe("a\r\nc\r\n")
  })

  it("names the lines that do not match", () => {
    const applied = PatchText.applyChunks("f.txt", "a\n", [{ oldLines: ["zzz"], newLines: [], endOfFile: false }])
    expect(Either.isLeft(applied) && applied.left).toContain("Cannot find these lines in f.txt:\nzzz")
  })
})
