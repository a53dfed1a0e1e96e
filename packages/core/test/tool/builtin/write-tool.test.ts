import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { call, context, failure, project, textOf } from "./harness.js"

describe("write", () => {
  it.live("creates a file and its missing parent directories; asks edit with the relative path and a diff", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx, asks } = context(p.directory)
      const result = yield* call("write", { path: "deep/er/new.txt", content: "hello\n" }, ctx)
      expect(fs.readFileSync(p.file("deep/er/new.txt"), "utf8")).toBe("hello\n")
      expect(textOf(result)).toContain(`Created ${p.file("deep/er/new.txt")}`)
      // Upstream's shape: the file written, by real path and as the Location names it.
      expect(result.structured).toEqual({
        operation: "write",
        target: p.file("deep/er/new.txt"),
        resource: path.join("deep", "er", "new.txt"),
        existed: false
      })
      expect(asks).toHaveLength(1)
      expect(asks[0]!.action).toBe("edit")
      expect(asks[0]!.resources).toEqual([path.join("deep", "er", "new.txt")])
      expect(asks[0]!.metadata!.diff).toContain("+hello")
    })
  )

  it.live("overwrites an existing file; the diff shows the change", () =>
    Effect.gen(function* () {
      const p = project({ "a.txt": "old\n" })
      const { ctx, asks } = context(p.directory)
      const result = yield* call("write", { path: p.file("a.txt"), content: "new\n" }, ctx)
      expect(fs.readFileSync(p.file("a.txt"), "utf8")).toBe("new\n")
      expect(result.structured).toEqual({
        operation: "write",
        target: p.file("a.txt"),
        resource: "a.txt",
        existed: true
      })
      expect(asks[0]!.metadata!.diff).toContain("-old")
      expect(asks[0]!.metadata!.diff).toContain("+new")
    })
  )

  it.live("denied: nothing is written; a directory cannot be written; outside asks external_directory", () =>
    Effect.gen(function* () {
      const p = project({ "sub/x.txt": "x" })
      const denied = context(p.directory, () => "deny")
      expect(yield* failure(call("write", { path: "a.txt", content: "x" }, denied.ctx))).toContain(
        "Permission denied: edit"
      )
      expect(fs.existsSync(p.file("a.txt"))).toBe(false)
      const { ctx } = context(p.directory)
      expect(yield* failure(call("write", { path: "sub", content: "x" }, ctx))).toContain("it is a directory")
      const outside = context(p.directory, (request) => (request.action === "external_directory" ? "deny" : "allow"))
      expect(yield* failure(call("write", { path: "../outside/o.txt", content: "x" }, outside.ctx))).toContain(
        "external_directory"
      )
      expect(outside.asks[0]!.resources).toEqual([path.join(p.outside, "*")])
      expect(fs.existsSync(path.join(p.outside, "o.txt"))).toBe(false)
    })
  )
})
