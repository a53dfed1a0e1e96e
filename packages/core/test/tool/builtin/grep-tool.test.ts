import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import type { ToolStructured } from "@opencode-ai/schema"
import { Effect, Exit, Fiber } from "effect"
import { RegexSearch } from "../../../src/tool/builtin/regex-search.js"
import { call, context, failure, loopTurnsDuring, project, tempDir, textOf, tool } from "./harness.js"

const touch = (file: string, seconds: number) => fs.utimesSync(file, seconds, seconds)

/**
 * `^(a+)+$` backtracks exponentially over this line: 29 `a`s took about 14 s on the main thread, where
 * they froze the server; each one more doubles it, so 40 never finish within a test.
 */
const catastrophic = { pattern: "^(a+)+$", line: `${"a".repeat(40)}b` }

/** Worker threads grep has leased and not yet returned or terminated. */
const busyWorkers = () => RegexSearch.workers().live - RegexSearch.workers().idle

describe("grep", () => {
  it.live("returns file:line: text for each matching line, newest files first; asks grep with the pattern", () =>
    Effect.gen(function* () {
      const p = project({
        "src/a.ts": "function alpha() {}\nconst x = 1\nfunction beta() {}\n",
        "src/b.ts": "// nothing\nfunction gamma() {}\n",
        "README.md": "no functions here\n"
      })
      touch(p.file("src/a.ts"), 1000)
      touch(p.file("src/b.ts"), 2000)
      const { ctx, asks } = context(p.directory)
      const result = yield* call("grep", { pattern: "function\\s+\\w+\\(" }, ctx)
      expect(textOf(result)).toBe(
        [
          "Found 3 matches",
          `${p.file("src/b.ts")}:2: function gamma() {}`,
          `${p.file("src/a.ts")}:1: function alpha() {}`,
          `${p.file("src/a.ts")}:3: function beta() {}`
        ].join("\n")
      )
      // Upstream's shape: the matches shown, their files relative to the Location.
      expect(result.structured).toEqual({
        value: [
          { entry: { path: path.join("src", "b.ts"), type: "file" }, line: 2, text: "function gamma() {}" },
          { entry: { path: path.join("src", "a.ts"), type: "file" }, line: 1, text: "function alpha() {}" },
          { entry: { path: path.join("src", "a.ts"), type: "file" }, line: 3, text: "function beta() {}" }
        ],
        searched: (result.structured as ToolStructured.Grep).searched
      })
      // Every file of the small tree was read (the walk only stops early at the match limit).
      expect((result.structured as ToolStructured.Grep).searched).toBeGreaterThanOrEqual(2)
      expect(asks).toEqual([
        {
          action: "grep",
          resources: ["function\\s+\\w+\\("],
          metadata: { pattern: "function\\s+\\w+\\(", path: p.directory }
        }
      ])
    })
  )

  it.live("include filters files by glob; path narrows to a directory or one file", () =>
    Effect.gen(function* () {
      const p = project({ "src/a.ts": "needle\n", "src/b.js": "needle\n", "lib/c.ts": "needle\n" })
      const { ctx } = context(p.directory)
      const included = textOf(yield* call("grep", { pattern: "needle", include: "*.ts" }, ctx))
      expect(included).toContain(`${p.file("src/a.ts")}:1: needle`)
      expect(included).toContain(`${p.file("lib/c.ts")}:1: needle`)
      expect(included).not.toContain("b.js")
      const underSrc = textOf(yield* call("grep", { pattern: "needle", path: "src", include: "*.{js,ts}" }, ctx))
      expect(underSrc).toContain("Found 2 matches")
      expect(underSrc).not.toContain(p.file("lib/c.ts"))
      expect(textOf(yield* call("grep", { pattern: "needle", path: "src/b.js" }, ctx))).toBe(
        `Found 1 match\n${p.file("src/b.js")}:1: needle`
      )
    })
  )

  it.live("skips .gitignore'd files, .git and binary files", () =>
    Effect.gen(function* () {
      const p = project({
        ".gitignore": "build/\n",
        "build/out.js": "needle\n",
        ".git/HEAD": "needle\n",
        "bin.dat": new Uint8Array([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0x00, 0x01]),
        "archive.zip": "needle\n",
        "src.js": "needle\n"
      })
      const { ctx } = context(p.directory)
      expect(textOf(yield* call("grep", { pattern: "needle" }, ctx))).toBe(
        `Found 1 match\n${p.file("src.js")}:1: needle`
      )
    })
  )

  it.live("bounded: at most 100 lines shown, saying how many matched; long lines cut", () =>
    Effect.gen(function* () {
      const p = project({ "many.txt": "hit\n".repeat(150), "long.txt": `hit ${"z".repeat(3000)}\n` })
      const { ctx } = context(p.directory)
      const result = yield* call("grep", { pattern: "hit" }, ctx)
      const text = textOf(result)
      expect(text.split("\n")[0]).toBe("Found 151 matches (showing 100; narrow the pattern, path or include)")
      expect(text.split("\n")).toHaveLength(101)
      expect((result.structured as ToolStructured.Grep).value).toHaveLength(100)
      const long = textOf(yield* call("grep", { pattern: "hit z", path: "long.txt" }, ctx))
      expect(long).toContain(`:1: hit ${"z".repeat(1996)}...`)
      expect(long).not.toContain("z".repeat(2000))
    })
  )

  it.live("no match; an invalid regex; a missing path: readable results and failures", () =>
    Effect.gen(function* () {
      const p = project({ "a.txt": "a\n" })
      const { ctx } = context(p.directory)
      expect(textOf(yield* call("grep", { pattern: "zzz" }, ctx))).toBe("No matches found")
      expect(yield* failure(call("grep", { pattern: "(unclosed" }, ctx))).toContain(
        'Invalid regular expression "(unclosed"'
      )
      expect(yield* failure(call("grep", { pattern: "a", path: "missing" }, ctx))).toContain(
        "no such file or directory"
      )
    })
  )

  it.live(
    "a large file (managed tool output) is searched line by line; the managed directory needs no external ask",
    () =>
      Effect.gen(function* () {
        const p = project()
        const toolOutputDir = path.join(tempDir(), "tool-output")
        fs.mkdirSync(toolOutputDir)
        const managed = path.join(toolOutputDir, "tool_0190000000000abcdefghijklmn")
        const line = `${"x".repeat(99)}\n`
        fs.writeFileSync(managed, `${line.repeat(20_000)}the needle line\n${line.repeat(100)}`)
        const { ctx, asks } = context(p.directory, (request) =>
          request.action === "external_directory" ? "deny" : "allow"
        )
        const result = yield* call("grep", { pattern: "needle", path: managed }, ctx, { toolOutputDir })
        expect(textOf(result)).toBe(`Found 1 match\n${managed}:20001: the needle line`)
        expect(asks.map((ask) => ask.action)).toEqual(["grep"])
        // Any other outside directory asks.
        expect(yield* failure(call("grep", { pattern: "needle", path: p.outside }, ctx, { toolOutputDir }))).toContain(
          "external_directory"
        )
        expect(asks[1]).toMatchObject({ action: "external_directory", resources: [path.join(p.outside, "*")] })
      })
  )

  it.live("a large file's streamed lines stop at the candidate bound like small files do", () =>
    Effect.gen(function* () {
      const p = project({ "big.log": `${"x".repeat(1023)}\n`.repeat(1100) + "hit\n".repeat(1500) })
      const { ctx } = context(p.directory)
      const result = yield* call("grep", { pattern: "^hit$" }, ctx)
      expect(textOf(result).split("\n")[0]).toBe(
        "Found more than 1000 matches (showing 100; narrow the pattern, path or include)"
      )
      expect(textOf(result).split("\n")[1]).toBe(`${p.file("big.log")}:1101: hit`)
      expect((result.structured as ToolStructured.Grep).value[0]).toEqual({
        entry: { path: "big.log", type: "file" },
        line: 1101,
        text: "hit"
      })
    })
  )

  it.live(
    "a catastrophic pattern fails readably once the time limit is spent, and the event loop stays free meanwhile",
    () =>
      Effect.gen(function* () {
        const p = project({ "evil.txt": `${catastrophic.line}\n`, "fine.txt": "aaa\n" })
        const { ctx } = context(p.directory)
        const grep = yield* tool("grep", { grep: { timeLimit: "2 seconds" } })
        // The event loop is watched while a worker matches (before the fix: never, the regex froze it).
        // The match never ends by itself, so the call returning at all means the limit stopped it.
        const { exit, ticks } = yield* loopTurnsDuring(
          () => failure(grep.execute({ pattern: catastrophic.pattern }, ctx)),
          () => busyWorkers() > 0
        )
        // The message says the limit was reached: a search that ended any other way says otherwise.
        expect(exit).toEqual(
          Exit.succeed(
            'The pattern "^(a+)+$" took longer than 2s to match, so the search was stopped. Simplify it (nested quantifiers such as (a+)+ can backtrack without end) or narrow path and include.'
          )
        )
        // Matching on the main thread would let no tick fire while it ran; a free loop ticks every
        // 10 ms of those 2 s, far more than 10 times even on a loaded machine.
        expect(ticks).toBeGreaterThan(10)
        // The stuck worker was terminated, not returned to the pool.
        expect(busyWorkers()).toBe(0)
        // The next search gets a fresh worker and works.
        expect(textOf(yield* call("grep", { pattern: "^a+$" }, ctx))).toBe(
          `Found 1 match\n${p.file("fine.txt")}:1: aaa`
        )
      })
  )

  it.live("interrupting a call mid-match terminates its worker before the interruption returns", () =>
    Effect.gen(function* () {
      const p = project({ "evil.txt": `${catastrophic.line}\n` })
      const { ctx } = context(p.directory)
      // A limit far beyond the test's timeout: only the interruption can end this match.
      const grep = yield* tool("grep", { grep: { timeLimit: "1 hour" } })
      const before = RegexSearch.workers().live
      const { exit } = yield* loopTurnsDuring(
        (ticks) =>
          Effect.gen(function* () {
            const fiber = yield* Effect.fork(grep.execute({ pattern: catastrophic.pattern }, ctx))
            // Wait until a worker is matching, then until the event loop has turned five times meanwhile
            // (a loop the match held would never get there).
            while (busyWorkers() === 0) yield* Effect.sleep("10 millis")
            while (ticks() < 5) yield* Effect.sleep("10 millis")
            const busy = busyWorkers()
            yield* Fiber.interrupt(fiber)
            return { busy, after: busyWorkers() }
          }),
        () => busyWorkers() > 0
      )
      // One worker was matching; the interruption returned (the match alone would run for an hour)
      // with that worker gone: terminated, not returned to the pool.
      expect(yield* exit).toEqual({ busy: 1, after: 0 })
      expect(RegexSearch.workers().live).toBeLessThanOrEqual(before)
    })
  )
})
