/**
 * The bench runner's convention (bench/figures.ts, bench/rows.ts): how figure lines are printed and
 * read back, and how a row of issue 18's table is judged from the scripts' results. No timings here:
 * the figures are made up and only their handling is checked.
 */

import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { type Profile, summarise } from "../../bench/cpu-profile.js"
import { type Figure, line, parse } from "../../bench/figures.js"
import { judge, rows, type ScriptResult } from "../../bench/rows.js"

const row = (key: string) => rows.find((r) => r.key === key)!

describe("figure lines", () => {
  it("print and parse back", () => {
    const figures: ReadonlyArray<Figure> = [
      { name: "prompt-to-provider-http", value: 2.75, unit: "ms" },
      { name: "pages-rps", value: 6123.456, unit: "req/s" },
      { name: "client-root-gzip", value: 4002, unit: "B" },
      { name: "tiny", value: 0.0004, unit: "ms" }
    ]
    const output = ["some table", ...figures.map(line), "  of (a): client → server: 0.5 ms"].join("\n")
    expect(parse(output)).toEqual([
      { name: "prompt-to-provider-http", value: 2.75, unit: "ms" },
      { name: "pages-rps", value: 6123.5, unit: "req/s" },
      { name: "client-root-gzip", value: 4002, unit: "B" },
      { name: "tiny", value: 0, unit: "ms" }
    ])
  })

  it("skip lines that are not figure lines, and keep the last value of a repeated name", () => {
    const output = [
      "bound/plain (median of the per-round ratios): 0.83 (target ≥ 0.8: met)",
      "Prompt-Time: 3 ms",
      "cold-start: fast ms",
      "cold-start: 140 ms",
      "cold-start: 120.5 ms  ",
      "rss-idle:   64 MiB\r"
    ].join("\n")
    expect(parse(output)).toEqual([
      { name: "cold-start", value: 120.5, unit: "ms" },
      { name: "rss-idle", value: 64, unit: "MiB" }
    ])
  })

  it("refuse names, values and units the parser could not read back", () => {
    expect(() => line({ name: "Prompt Time", value: 1, unit: "ms" })).toThrow()
    expect(() => line({ name: "prompt", value: Number.NaN, unit: "ms" })).toThrow()
    expect(() => line({ name: "prompt", value: 1, unit: "milli seconds" })).toThrow()
  })
})

describe("judging a row", () => {
  const ran = (...figures: ReadonlyArray<Figure>): ScriptResult => ({ _tag: "Ran", figures })

  it("every row has a key, a unit, a target and at least one script", () => {
    expect(new Set(rows.map((r) => r.key)).size).toBe(rows.length)
    for (const r of rows) {
      expect(r.scripts.length).toBeGreaterThan(0)
      if (r.target.op !== "print") expect(r.target.value).toBeTypeOf("number")
    }
  })

  it("meets or misses an upper bound, a lower bound, or only prints", () => {
    const http = row("prompt-to-provider-http")
    const at = (value: number) => new Map([["step-overhead.ts", ran({ name: http.key, value, unit: "ms" })]])
    expect(judge(http, at(3))._tag).toBe("Met")
    expect(judge(http, at(3.01))._tag).toBe("Missed")
    const pages = row("pages-rps")
    const rps = (value: number) => new Map([["pages.ts", ran({ name: pages.key, value, unit: "req/s" })]])
    expect(judge(pages, rps(6000))._tag).toBe("Met")
    expect(judge(pages, rps(5999))._tag).toBe("Missed")
    const wall = row("concurrent-wall")
    expect(judge(wall, new Map([["concurrent-sessions.ts", ran({ name: wall.key, value: 42, unit: "s" })]]))._tag).toBe(
      "Printed"
    )
  })

  it("says a script is missing, printed nothing for the row, failed, or printed another unit", () => {
    const replay = row("sse-replay")
    expect(judge(replay, new Map())).toEqual({ _tag: "ScriptMissing", scripts: ["sse-replay.ts"] })
    expect(judge(replay, new Map([["sse-replay.ts", { _tag: "Missing" } as const]]))._tag).toBe("ScriptMissing")
    expect(judge(replay, new Map([["sse-replay.ts", ran({ name: "other", value: 1, unit: "ms" })]]))._tag).toBe(
      "NotPrinted"
    )
    expect(judge(replay, new Map([["sse-replay.ts", { _tag: "Failed", reason: "exit status 1" } as const]]))).toEqual({
      _tag: "Failed",
      script: "sse-replay.ts",
      reason: "exit status 1"
    })
    expect(judge(replay, new Map([["sse-replay.ts", ran({ name: "sse-replay", value: 30, unit: "s" })]]))._tag).toBe(
      "WrongUnit"
    )
  })

  it("takes the figure from the first of the row's scripts that printed it", () => {
    const http = { ...row("prompt-to-provider-http"), scripts: ["other.ts", "step-overhead.ts"] }
    const results = new Map<string, ScriptResult>([
      ["other.ts", ran({ name: "other", value: 1, unit: "ms" })],
      ["step-overhead.ts", ran({ name: http.key, value: 2, unit: "ms" })]
    ])
    expect(judge(http, results)).toEqual({ _tag: "Met", figure: { name: http.key, value: 2, unit: "ms" } })
  })
})

describe("the scripts behind the rows", () => {
  // A row whose scripts never print its key is "not measured" in every `pnpm bench` run: each row's
  // key must be printed, as a figure's name, by one of its scripts that is in the tree.
  it("every row's key is a figure name in one of its scripts", () => {
    const bench = path.join(import.meta.dirname, "..", "..", "bench")
    for (const r of rows) {
      const printing = r.scripts.filter((script) => {
        const file = path.join(bench, script)
        return fs.existsSync(file) && fs.readFileSync(file, "utf8").includes(`name: "${r.key}"`)
      })
      expect(printing, r.key).not.toEqual([])
    }
  })
})

describe("CPU profile summary", () => {
  const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 9, columnNumber: 0 })
  // Three nodes; samples every 1,000 µs from 10,000: a, a, b, c, a (the last sample counts nothing).
  const profile: Profile = {
    nodes: [
      { id: 1, callFrame: frame("a", "file:///x/node_modules/effect/dist/esm/Effect.js") },
      { id: 2, callFrame: frame("b", "file:///x/packages/core/src/event/event-log.ts") },
      { id: 3, callFrame: frame("(garbage collector)", "") }
    ],
    startTime: 10_000,
    endTime: 15_000,
    samples: [1, 1, 2, 3, 1],
    timeDeltas: [0, 1_000, 1_000, 1_000, 1_000]
  }

  it("adds self time per function and per file or package", () => {
    const summary = summarise(profile)
    expect(summary.totalMs).toBe(4)
    expect(summary.functions.map((f) => [f.name, f.ms])).toEqual([
      ["a effect dist/esm/Effect.js:10", 2],
      ["b packages/core/src/event/event-log.ts:10", 1],
      ["(garbage collector)", 1]
    ])
    expect(summary.files.map((f) => [f.name, f.share])).toEqual([
      ["effect", 0.5],
      ["packages/core/src/event/event-log.ts", 0.25],
      ["(native / V8)", 0.25]
    ])
  })

  it("counts only the samples inside a window", () => {
    const summary = summarise(profile, { from: 11_500, to: 13_500 })
    expect(summary.functions.map((f) => [f.name, f.ms])).toEqual([
      ["b packages/core/src/event/event-log.ts:10", 1],
      ["(garbage collector)", 1]
    ])
  })
})
