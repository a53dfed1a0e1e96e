import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AgentCatalog } from "../../../src/config/agent-catalog.js"
import { Permission } from "../../../src/permission/permission.js"
import { call, context, failure, project, tempDir, textOf } from "./harness.js"

const lines = (n: number) => `${Array.from({ length: n }, (_, i) => `line ${i + 1}`).join("\n")}\n`

describe("read", () => {
  it.live("a text file: numbered lines, the path, the end of the file", () =>
    Effect.gen(function* () {
      const p = project({ "src/a.ts": "const a = 1\nconst b = 2\n" })
      const { ctx, asks } = context(p.directory)
      const result = yield* call("read", { path: "src/a.ts" }, ctx)
      const text = textOf(result)
      expect(text).toContain(`<path>${p.file("src/a.ts")}</path>`)
      expect(text).toContain("1: const a = 1\n2: const b = 2")
      expect(text).toContain("(End of file - total 2 lines)")
      // A whole file is structured as upstream's file content: the text as it is on disk.
      expect(result.structured).toEqual({
        uri: pathToFileURL(p.file("src/a.ts")).href,
        name: "a.ts",
        content: "const a = 1\nconst b = 2\n",
        encoding: "utf8",
        mime: "text/plain"
      })
      // Every read asks `read` with the absolute path (the agents' rules allow it).
      expect(asks).toEqual([
        { action: "read", resources: [p.file("src/a.ts")], metadata: { filepath: p.file("src/a.ts") } }
      ])
    })
  )

  it.live("offset (1-based) and limit select lines; the footer says which offset continues", () =>
    Effect.gen(function* () {
      const p = project({ "big.txt": lines(10) })
      const { ctx } = context(p.directory)
      const text = textOf(yield* call("read", { path: "big.txt", offset: 3, limit: 4 }, ctx))
      expect(text).toContain("3: line 3\n4: line 4\n5: line 5\n6: line 6\n")
      expect(text).not.toContain("7: line 7")
      expect(text).not.toContain("2: line 2")
      expect(text).toContain("use offset=7 to continue")
      // The last lines: the end of the file.
      const tail = textOf(yield* call("read", { path: "big.txt", offset: 9 }, ctx))
      expect(tail).toContain("9: line 9\n10: line 10")
      expect(tail).toContain("(End of file - total 10 lines)")
    })
  )

  it.live("the default limit is 2000 lines; long lines are cut; output stops at 50 KiB on a line boundary", () =>
    Effect.gen(function* () {
      const p = project({
        "many.txt": lines(2500),
        "long.txt": `${"x".repeat(5000)}\nshort\n`,
        "wide.txt": `${"y".repeat(1000)}\n`.repeat(200)
      })
      const { ctx } = context(p.directory)
      const many = textOf(yield* call("read", { path: "many.txt" }, ctx))
      expect(many).toContain("2000: line 2000")
      expect(many).not.toContain("2001: line 2001")
      expect(many).toContain("offset=2001")
      const long = textOf(yield* call("read", { path: "long.txt" }, ctx))
      expect(long).toContain(`1: ${"x".repeat(2000)}... (line truncated to 2000 characters)`)
      expect(long).not.toContain("x".repeat(2001))
      expect(long).toContain("2: short")
      const wide = yield* call("read", { path: "wide.txt" }, ctx)
      expect(Buffer.byteLength(textOf(wide))).toBeLessThan(52 * 1024)
      expect(textOf(wide)).toMatch(/Output capped at 50 KiB: showing lines 1-\d+\. Use offset=\d+ to continue/)
      // A part of a file is a text page, which says where the next one starts.
      expect(wide.structured).toMatchObject({ type: "text-page", offset: 1, truncated: true, mime: "text/plain" })
      const next = (wide.structured as { next: number }).next
      expect(textOf(wide)).toContain(`Use offset=${next} to continue`)
    })
  )

  it.live("an empty file; an offset past the end is a readable failure", () =>
    Effect.gen(function* () {
      const p = project({ "empty.txt": "", "two.txt": "a\nb\n" })
      const { ctx } = context(p.directory)
      expect(textOf(yield* call("read", { path: "empty.txt" }, ctx))).toContain("(The file is empty.)")
      expect(yield* failure(call("read", { path: "two.txt", offset: 5 }, ctx))).toContain("past the end")
    })
  )

  it.live("a directory lists its entries, sub-directories with a slash, with offset and limit", () =>
    Effect.gen(function* () {
      const p = project({ "b.txt": "", "a.txt": "", "sub/c.txt": "" })
      const { ctx } = context(p.directory)
      const result = yield* call("read", { path: "." }, ctx)
      expect(textOf(result)).toContain("<type>directory</type>")
      expect(textOf(result)).toContain("a.txt\nb.txt\nsub/\n")
      expect(result.structured).toEqual({
        entries: [
          { path: "a.txt", type: "file" },
          { path: "b.txt", type: "file" },
          { path: "sub/", type: "directory" }
        ],
        truncated: false
      })
      const paged = yield* call("read", { path: p.directory, offset: 2, limit: 1 }, ctx)
      const page = textOf(paged)
      expect(page).toContain("b.txt")
      expect(page).not.toContain("a.txt")
      expect(paged.structured).toEqual({ entries: [{ path: "b.txt", type: "file" }], truncated: true, next: 3 })
      expect(page).toContain("Use offset=3 to continue")
    })
  )

  it.live("a directory's entries are in code-unit order, whatever the host's locale", () =>
    Effect.gen(function* () {
      const p = project({ "b.txt": "", "Z.txt": "", "a.txt": "", "_x.txt": "" })
      const { ctx } = context(p.directory)
      // A collator would give "_x.txt", "a.txt", "b.txt", "Z.txt".
      expect((yield* call("read", { path: "." }, ctx)).structured).toEqual({
        entries: ["Z.txt", "_x.txt", "a.txt", "b.txt"].map((path) => ({ path, type: "file" })),
        truncated: false
      })
    })
  )

  it.live("a missing file fails readably, naming similar files", () =>
    Effect.gen(function* () {
      const p = project({ "config.json": "{}" })
      const { ctx } = context(p.directory)
      const message = yield* failure(call("read", { path: "config" }, ctx))
      expect(message).toContain(`File not found: ${p.file("config")}`)
      expect(message).toContain(p.file("config.json"))
    })
  )

  it.live("binary files are refused: NUL bytes, or a binary extension", () =>
    Effect.gen(function* () {
      const p = project({ "data.dat2": new Uint8Array([0x41, 0x00, 0x42, 0x43]), "lib.so": "text really" })
      const { ctx } = context(p.directory)
      expect(yield* failure(call("read", { path: "data.dat2" }, ctx))).toBe(
        `Cannot read binary file: ${p.file("data.dat2")}`
      )
      expect(yield* failure(call("read", { path: "lib.so" }, ctx))).toBe(`Cannot read binary file: ${p.file("lib.so")}`)
    })
  )

  it.live("images and PDFs come back as a file part", () =>
    Effect.gen(function* () {
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0])
      const p = project({ "logo.png": png, "doc.pdf": "%PDF-1.4\n" })
      const { ctx } = context(p.directory)
      const image = yield* call("read", { path: "logo.png" }, ctx)
      expect(image.content[1]).toEqual({
        type: "file",
        uri: pathToFileURL(p.file("logo.png")).href,
        mime: "image/png",
        name: "logo.png"
      })
      // Structured as upstream's image read: the file's content in base64.
      expect(image.structured).toEqual({
        uri: pathToFileURL(p.file("logo.png")).href,
        name: "logo.png",
        content: Buffer.from(png).toString("base64"),
        encoding: "base64",
        mime: "image/png"
      })
      const pdf = yield* call("read", { path: "doc.pdf" }, ctx)
      expect(pdf.content[1]).toMatchObject({ type: "file", mime: "application/pdf" })
    })
  )

  it.live(".env files ask `read` and the build agent's rules make it ask; .env.example does not", () =>
    Effect.gen(function* () {
      const p = project({ ".env": "SECRET=1\n", ".env.local": "X=1\n", ".env.example": "SECRET=\n", "a.txt": "a\n" })
      const rules = AgentCatalog.builtins().build.rules
      // The context answers as the build agent's rules say; an `ask` verdict is refused here.
      const { ctx, asks } = context(p.directory, (request) =>
        request.resources.every((resource) => Permission.evaluate(rules, request.action, resource) === "allow")
          ? "allow"
          : "deny"
      )
      expect(yield* failure(call("read", { path: ".env" }, ctx))).toContain("Permission denied: read")
      expect(yield* failure(call("read", { path: ".env.local" }, ctx))).toContain("Permission denied: read")
      expect(textOf(yield* call("read", { path: ".env.example" }, ctx))).toContain("1: SECRET=")
      expect(textOf(yield* call("read", { path: "a.txt" }, ctx))).toContain("1: a")
      expect(asks.map((ask) => [ask.action, ask.resources[0]])).toEqual([
        ["read", p.file(".env")],
        ["read", p.file(".env.local")],
        ["read", p.file(".env.example")],
        ["read", p.file("a.txt")]
      ])
      expect(Permission.evaluate(rules, "read", p.file(".env"))).toBe("ask")
      expect(Permission.evaluate(rules, "read", p.file(".env.example"))).toBe("allow")
      // Answered "allow", the .env file is read.
      const allowed = context(p.directory)
      expect(textOf(yield* call("read", { path: ".env" }, allowed.ctx))).toContain("1: SECRET=1")
    })
  )

  it.live("outside the Location asks external_directory with the containing directory; denied, nothing is read", () =>
    Effect.gen(function* () {
      const p = project()
      fs.writeFileSync(path.join(p.outside, "notes.txt"), "outside\n")
      const allowed = context(p.directory)
      const text = textOf(yield* call("read", { path: "../outside/notes.txt" }, allowed.ctx))
      expect(text).toContain("1: outside")
      expect(allowed.asks[0]).toEqual({
        action: "external_directory",
        resources: [path.join(p.outside, "*")],
        metadata: { filepath: path.join(p.outside, "notes.txt"), parentDir: p.outside }
      })
      // A directory outside: the directory itself is the resource's base.
      const listing = context(p.directory)
      yield* call("read", { path: p.outside }, listing.ctx)
      expect(listing.asks[0]!.resources).toEqual([path.join(p.outside, "*")])
      const denied = context(p.directory, (request) => (request.action === "external_directory" ? "deny" : "allow"))
      expect(yield* failure(call("read", { path: path.join(p.outside, "notes.txt") }, denied.ctx))).toContain(
        "Permission denied: external_directory"
      )
      expect(denied.asks.map((ask) => ask.action)).toEqual(["external_directory"])
    })
  )

  it.live("the managed tool-output directory is readable without an external_directory ask", () =>
    Effect.gen(function* () {
      const p = project()
      const toolOutputDir = path.join(tempDir(), "tool-output")
      fs.mkdirSync(toolOutputDir)
      const managed = path.join(toolOutputDir, "tool_0190000000000abcdefghijklmn")
      fs.writeFileSync(managed, "full output\n")
      const { ctx, asks } = context(p.directory, (request) =>
        request.action === "external_directory" ? "deny" : "allow"
      )
      expect(textOf(yield* call("read", { path: managed }, ctx, { toolOutputDir }))).toContain("1: full output")
      expect(asks.map((ask) => ask.action)).toEqual(["read"])
      // Without the managed directory configured, the same path is external.
      expect(yield* failure(call("read", { path: managed }, ctx))).toContain("external_directory")
    })
  )

  it.live("invalid input is a readable failure naming the field", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx, asks } = context(p.directory)
      const missing = yield* failure(call("read", {}, ctx))
      expect(missing).toContain("Invalid input for the read tool")
      expect(missing).toContain("path")
      const badOffset = yield* failure(call("read", { path: "a", offset: 0 }, ctx))
      expect(badOffset).toContain("offset")
      expect(asks).toEqual([])
    })
  )
})
