import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import { afterAll, beforeAll } from "vitest"
import { FileWalk } from "../../../src/tool/builtin/file-walk.js"
import { GlobTool } from "../../../src/tool/builtin/glob-tool.js"
import { GrepTool } from "../../../src/tool/builtin/grep-tool.js"
import { call, context, tempDir, textOf } from "./harness.js"

/**
 * glob and grep over a generated tree of 200,000 files (200 directories of 1,000), with a
 * `.gitignore` that prunes a directory and a file pattern. The walk is streamed: a search that
 * reaches its result limit stops without listing or reading the rest, which the assertions observe
 * by counting (files the walk listed, files grep read), never by timing.
 */

const directories = 200
const perDirectory = 1000
const total = directories * perDirectory

let root = ""

/** Building the tree, or a test that walks all of it, may take a while on a loaded machine (a bound, not an assertion). */
const wholeWalk = 180_000

beforeAll(() => {
  root = path.join(tempDir("opencode-scale-"), "project")
  fs.mkdirSync(root)
  for (let d = 0; d < directories; d++) {
    const dir = path.join(root, `d${String(d).padStart(3, "0")}`)
    fs.mkdirSync(dir)
    for (let f = 0; f < perDirectory; f++) fs.writeFileSync(path.join(dir, `f${f}.txt`), `hello ${d}/${f}\n`)
  }
  fs.writeFileSync(path.join(root, ".gitignore"), "build/\n*.tmp\n")
  fs.mkdirSync(path.join(root, "build"))
  for (let f = 0; f < 50; f++) fs.writeFileSync(path.join(root, "build", `needle${f}.md`), "NEEDLE in build\n")
  fs.writeFileSync(path.join(root, "d199", "needle.tmp"), "NEEDLE in a tmp file\n")
  fs.mkdirSync(path.join(root, "docs"))
  fs.writeFileSync(path.join(root, "docs", "needle.md"), "NEEDLE here\n")
}, 600_000)

afterAll(() => {
  if (root !== "") fs.rmSync(path.dirname(root), { recursive: true, force: true })
}, wholeWalk)

describe(`search over ${total.toLocaleString("en")} files`, () => {
  it.live(
    "the whole walk lists every file except what .gitignore excludes, pruning ignored directories",
    () =>
      Effect.gen(function* () {
        const listed: Array<string> = []
        const files = yield* FileWalk.files({
          root,
          match: (relative) => {
            listed.push(relative)
            return true
          }
        })
        // the 200,000 files, the .gitignore and docs/needle.md
        expect(files).toHaveLength(total + 2)
        expect(listed.some((relative) => relative.startsWith("build/"))).toBe(false)
        expect(files.some((file) => file.endsWith(".tmp"))).toBe(false)
      }),
    wholeWalk
  )

  it.live("taking a few files from the stream stops the walk: the rest of the tree is never listed", () =>
    Effect.gen(function* () {
      let listed = 0
      const first = yield* Stream.runCollect(
        FileWalk.stream({
          root,
          match: () => {
            listed++
            return true
          }
        }).pipe(Stream.take(10))
      )
      expect(Chunk.size(first)).toBe(10)
      // At most one directory's batch beyond what was taken.
      expect(listed).toBeLessThanOrEqual(512)
    })
  )

  it.live("glob stops at its candidate limit and says the result is truncated", () =>
    Effect.gen(function* () {
      const { ctx } = context(root)
      const result = yield* call("glob", { pattern: "**/*.txt" }, ctx)
      expect((result.structured as { value: ReadonlyArray<unknown> }).value).toHaveLength(GlobTool.maxResults)
      expect(textOf(result).split("\n")).toHaveLength(GlobTool.maxResults + 2)
      expect(textOf(result)).toContain(`more than ${GlobTool.maxCandidates} matches`)
    })
  )

  it.live("grep of a line every file has stops at its match limit after reading about that many files", () =>
    Effect.gen(function* () {
      const { ctx } = context(root)
      const result = yield* call("grep", { pattern: "^hello" }, ctx)
      expect((result.structured as { value: ReadonlyArray<unknown> }).value).toHaveLength(GrepTool.maxResults)
      const searched = (result.structured as { searched: number }).searched
      // One match per file: the search read about maxCandidates files (plus those in flight), not 200,000.
      expect(searched).toBeGreaterThanOrEqual(GrepTool.maxCandidates)
      expect(searched).toBeLessThan(GrepTool.maxCandidates + 100)
      expect(textOf(result).split("\n")[0]).toContain(`more than ${GrepTool.maxCandidates} matches`)
    })
  )

  it.live(
    "grep over the whole tree respects .gitignore (an ignored directory and an ignored pattern)",
    () =>
      Effect.gen(function* () {
        const { ctx } = context(root)
        const grep = yield* call("grep", { pattern: "NEEDLE", include: "*.{md,tmp}" }, ctx)
        expect(textOf(grep)).toBe(`Found 1 match\n${path.join(root, "docs", "needle.md")}:1: NEEDLE here`)
        // Only the one file the include admits and .gitignore does not exclude was read.
        expect(grep.structured).toEqual({
          value: [{ entry: { path: path.join("docs", "needle.md"), type: "file" }, line: 1, text: "NEEDLE here" }],
          searched: 1
        })
      }),
    wholeWalk
  )

  it.live(
    "glob over the whole tree respects .gitignore",
    () =>
      Effect.gen(function* () {
        const { ctx } = context(root)
        const glob = yield* call("glob", { pattern: "needle*" }, ctx)
        expect(textOf(glob)).toBe(path.join(root, "docs", "needle.md"))
      }),
    wholeWalk
  )
})
