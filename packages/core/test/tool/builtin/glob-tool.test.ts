import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { call, context, failure, project, textOf } from "./harness.js"

/** Sets a file's modification time to `seconds` after the epoch. */
const touch = (file: string, seconds: number) => fs.utimesSync(file, seconds, seconds)

describe("glob", () => {
  it.live("matches paths, newest first, as absolute paths; asks glob with the pattern", () =>
    Effect.gen(function* () {
      const p = project({ "src/a.ts": "", "src/deep/b.ts": "", "src/c.js": "", "top.ts": "" })
      touch(p.file("src/a.ts"), 1000)
      touch(p.file("src/deep/b.ts"), 3000)
      touch(p.file("top.ts"), 2000)
      const { ctx, asks } = context(p.directory)
      const result = yield* call("glob", { pattern: "**/*.ts" }, ctx)
      expect(textOf(result)).toBe([p.file("src/deep/b.ts"), p.file("top.ts"), p.file("src/a.ts")].join("\n"))
      // Upstream's shape: the entries shown, relative to the Location.
      expect(result.structured).toEqual({
        value: [
          { path: path.join("src", "deep", "b.ts"), type: "file" },
          { path: "top.ts", type: "file" },
          { path: path.join("src", "a.ts"), type: "file" }
        ]
      })
      expect(asks).toEqual([
        { action: "glob", resources: ["**/*.ts"], metadata: { pattern: "**/*.ts", path: p.directory } }
      ])
      // Under a path; a pattern without "/" matches names at any depth, braces work.
      expect(
        textOf(yield* call("glob", { pattern: "*.{js,ts}", path: "src" }, ctx))
          .split("\n")
          .sort()
      ).toEqual([p.file("src/a.ts"), p.file("src/c.js"), p.file("src/deep/b.ts")].sort())
      expect(textOf(yield* call("glob", { pattern: "src/*.ts" }, ctx))).toBe(p.file("src/a.ts"))
    })
  )

  it.live("skips .gitignore'd files and .git, includes hidden files", () =>
    Effect.gen(function* () {
      const p = project({
        ".gitignore": "dist/\n*.log\n",
        "dist/out.js": "",
        "debug.log": "",
        "keep.js": "",
        ".hidden/x.js": "",
        ".git/config.js": "",
        "pkg/.gitignore": "gen.js\n",
        "pkg/gen.js": "",
        "pkg/src.js": ""
      })
      const { ctx } = context(p.directory)
      const found = textOf(yield* call("glob", { pattern: "**/*" }, ctx))
        .split("\n")
        .sort()
      expect(found).toEqual(
        [
          p.file(".gitignore"),
          p.file("keep.js"),
          p.file(".hidden/x.js"),
          p.file("pkg/.gitignore"),
          p.file("pkg/src.js")
        ].sort()
      )
    })
  )

  it.live("at most 100 results, saying so; no match; a missing directory; outside asks external_directory", () =>
    Effect.gen(function* () {
      const files: Record<string, string> = {}
      for (let i = 0; i < 120; i++) files[`f${i}.txt`] = ""
      const p = project(files)
      const { ctx } = context(p.directory)
      const many = yield* call("glob", { pattern: "*.txt" }, ctx)
      expect(
        textOf(many)
          .split("\n")
          .filter((line) => line.startsWith("/"))
      ).toHaveLength(100)
      expect(textOf(many)).toContain("Showing the 100 newest of 120 matches")
      expect((many.structured as { value: ReadonlyArray<unknown> }).value).toHaveLength(100)
      expect(textOf(yield* call("glob", { pattern: "*.md" }, ctx))).toBe("No files found")
      expect(yield* failure(call("glob", { pattern: "*", path: "missing" }, ctx))).toContain("not a directory")
      const outside = context(p.directory, (request) => (request.action === "external_directory" ? "deny" : "allow"))
      expect(yield* failure(call("glob", { pattern: "*", path: p.outside }, outside.ctx))).toContain(
        "external_directory"
      )
      expect(outside.asks[0]!.resources).toEqual([path.join(p.outside, "*")])
    })
  )
})
