/**
 * Issue 18's table, row by row: which figure answers the row (its key, printed by a bench script as
 * `<key>: <value> <unit>`, see figures.ts), which scripts may print it, and its target.
 */

import type { Figure } from "./figures.js"

export interface Target {
  readonly op: "<=" | ">=" | "print"
  /** In the row's unit; absent for "print" (the figure is only printed). */
  readonly value?: number
}

export interface Row {
  /** The figure name that answers the row. */
  readonly key: string
  /** The row's wording in the issue. */
  readonly label: string
  readonly unit: string
  readonly target: Target
  /** The figure as the issue found it, for the printout. */
  readonly before: string
  /** Scripts (relative to bench/) that print the figure, in the order they are looked at. */
  readonly scripts: ReadonlyArray<string>
}

export const rows: ReadonlyArray<Row> = [
  {
    key: "prompt-to-provider-http",
    label: "POST /prompt → provider request, over HTTP, p50",
    unit: "ms",
    target: { op: "<=", value: 3 },
    before: "11.4 ms",
    scripts: ["step-overhead.ts"]
  },
  {
    key: "prompt-to-provider-embedded",
    label: "the same, in process (embedded), p50",
    unit: "ms",
    target: { op: "<=", value: 1.5 },
    before: "~7 ms",
    scripts: ["step-overhead.ts"]
  },
  {
    key: "stream-end-to-idle",
    label: "provider stream end → session idle, p50",
    unit: "ms",
    target: { op: "<=", value: 2 },
    before: "7 ms",
    scripts: ["step-overhead.ts"]
  },
  {
    key: "cpu-per-text-turn",
    label: "server CPU per text turn",
    unit: "ms",
    target: { op: "<=", value: 5 },
    before: "23 ms",
    scripts: ["step-overhead.ts"]
  },
  {
    key: "commits-per-text-turn",
    label: "durable commits per short text turn (one provider chunk batch)",
    unit: "count",
    target: { op: "<=", value: 4 },
    before: "~14 appends",
    scripts: ["step-overhead.ts"]
  },
  {
    key: "tool-turn-3-step",
    label: "3-step tool turn (two `bash` calls), POST → idle, p50",
    unit: "ms",
    target: { op: "<=", value: 20 },
    before: "66 ms",
    scripts: ["step-overhead.ts"]
  },
  {
    key: "pages-rps",
    label: "GET /api/session?limit=50 and …/message?limit=50, c=10",
    unit: "req/s",
    target: { op: ">=", value: 6000 },
    before: "1,350 req/s",
    scripts: ["pages.ts"]
  },
  {
    key: "sse-replay",
    label: "SSE replay of a 5,742-event session",
    unit: "ms",
    target: { op: "<=", value: 40 },
    before: "461 ms (12k ev/s)",
    scripts: ["sse-replay.ts"]
  },
  {
    key: "sse-replay-first-event",
    label: "… its first event",
    unit: "ms",
    target: { op: "<=", value: 3 },
    before: "–",
    scripts: ["sse-replay.ts"]
  },
  {
    key: "rss-idle",
    label: "RSS idle",
    unit: "MiB",
    target: { op: "<=", value: 70 },
    before: "155 MiB",
    scripts: ["startup.ts"]
  },
  {
    key: "rss-after-1000",
    label: "RSS after 1,000 sessions and 1,000 prompts",
    unit: "MiB",
    target: { op: "<=", value: 110 },
    before: "215 MiB",
    scripts: ["startup.ts"]
  },
  {
    key: "cold-start",
    label: "cold start → first 200 on /api/health, p50",
    unit: "ms",
    target: { op: "<=", value: 150 },
    before: "436 ms",
    scripts: ["startup.ts"]
  },
  {
    key: "cold-start-25mb-ratio",
    label: "the same with a 25 MB database after 1,000 crash restarts, ÷ the empty-database figure",
    unit: "x",
    target: { op: "<=", value: 1.2 },
    before: "500 → 650 ms as it grew",
    scripts: ["startup-history.ts"]
  },
  {
    key: "concurrent-wall",
    label: "200 concurrent sessions × 20 Steps: wall time",
    unit: "s",
    target: { op: "print" },
    before: "not measured",
    scripts: ["concurrent-sessions.ts"]
  },
  {
    key: "concurrent-peak-rss",
    label: "200 concurrent sessions × 20 Steps: peak RSS",
    unit: "MiB",
    target: { op: "<=", value: 150 },
    before: "not measured",
    scripts: ["concurrent-sessions.ts"]
  },
  {
    key: "bounding-ratio",
    label: "bounding a 1 GiB tool output (`bench:bounding`), best round ÷ a plain file write's",
    unit: "x",
    target: { op: ">=", value: 0.8 },
    before: "0.35",
    scripts: ["tool-output-bounding.ts"]
  },
  {
    key: "client-root-gzip",
    label: "Promise client root, with its dependency, minified + gzip",
    unit: "B",
    target: { op: "<=", value: 4096 },
    before: "5.1 KB",
    scripts: ["client-size.ts"]
  }
]

export type Verdict =
  | { readonly _tag: "Met"; readonly figure: Figure }
  | { readonly _tag: "Missed"; readonly figure: Figure }
  | { readonly _tag: "Printed"; readonly figure: Figure }
  | { readonly _tag: "WrongUnit"; readonly figure: Figure }
  | { readonly _tag: "ScriptMissing"; readonly scripts: ReadonlyArray<string> }
  | { readonly _tag: "NotPrinted"; readonly scripts: ReadonlyArray<string> }
  | { readonly _tag: "Failed"; readonly script: string; readonly reason: string }

/** What a script run gave: its figures, or why it gave none. */
export type ScriptResult =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Ran"; readonly figures: ReadonlyArray<Figure> }
  | { readonly _tag: "Failed"; readonly reason: string }

/** The verdict of one row, from the results of the scripts that were run (keyed by script name). */
export const judge = (row: Row, results: ReadonlyMap<string, ScriptResult>): Verdict => {
  const present = row.scripts.filter((script) => (results.get(script)?._tag ?? "Missing") !== "Missing")
  if (present.length === 0) return { _tag: "ScriptMissing", scripts: row.scripts }
  for (const script of present) {
    const result = results.get(script)!
    if (result._tag !== "Ran") continue
    const figure = result.figures.find((f) => f.name === row.key)
    if (figure === undefined) continue
    if (figure.unit !== row.unit) return { _tag: "WrongUnit", figure }
    const { op, value } = row.target
    if (op === "print" || value === undefined) return { _tag: "Printed", figure }
    const met = op === "<=" ? figure.value <= value : figure.value >= value
    return { _tag: met ? "Met" : "Missed", figure }
  }
  const failed = present.map((script) => [script, results.get(script)!] as const).find(([, r]) => r._tag === "Failed")
  if (failed !== undefined && failed[1]._tag === "Failed")
    return { _tag: "Failed", script: failed[0], reason: failed[1].reason }
  return { _tag: "NotPrinted", scripts: present }
}

export const describeTarget = (row: Row): string =>
  row.target.op === "print" ? "printed" : `${row.target.op === "<=" ? "≤" : "≥"} ${row.target.value} ${row.unit}`

export const describeVerdict = (verdict: Verdict): string => {
  switch (verdict._tag) {
    case "Met":
      return `${verdict.figure.value} ${verdict.figure.unit}  met`
    case "Missed":
      return `${verdict.figure.value} ${verdict.figure.unit}  NOT met`
    case "Printed":
      return `${verdict.figure.value} ${verdict.figure.unit}  (printed)`
    case "WrongUnit":
      return `${verdict.figure.value} ${verdict.figure.unit}  (unit differs from the row's: not judged)`
    case "ScriptMissing":
      return `not measured (script missing: ${verdict.scripts.map((s) => `bench/${s}`).join(" or ")})`
    case "NotPrinted":
      return `not measured (${verdict.scripts.map((s) => `bench/${s}`).join(", ")} printed no figure with this key)`
    case "Failed":
      return `not measured (bench/${verdict.script} failed: ${verdict.reason})`
  }
}
