/**
 * Summarises a V8 CPU profile (`node --cpu-prof`): the functions and the source files with the most
 * self time, optionally only over a window of the profile's clock (the monotonic clock that
 * `process.hrtime` reads, in µs, so another process on the same machine can mark the window).
 * Positions in a bundled file with a source map next to it (`dist/bin.js.map`) are mapped back to the
 * original source file; files under `node_modules` are grouped by package.
 *
 *   node --import tsx bench/cpu-profile.ts <file.cpuprofile> [--top 15] [--from <µs> --to <µs>]
 */

import * as fs from "node:fs"
import { SourceMap } from "node:module"
import { fileURLToPath } from "node:url"
import { isMain } from "./figures.js"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
  readonly columnNumber: number
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
}

export interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly startTime: number
  readonly endTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

export interface Entry {
  readonly name: string
  readonly ms: number
  readonly share: number
}

export interface Summary {
  /** Sampled time inside the window, ms. */
  readonly totalMs: number
  readonly functions: ReadonlyArray<Entry>
  readonly files: ReadonlyArray<Entry>
}

const maps = new Map<string, SourceMap | undefined>()
const sourceMapOf = (url: string): SourceMap | undefined => {
  if (!maps.has(url)) {
    let map: SourceMap | undefined
    try {
      const file = url.startsWith("file:") ? fileURLToPath(url) : url
      const mapFile = `${file}.map`
      if (url !== "" && fs.existsSync(mapFile)) map = new SourceMap(JSON.parse(fs.readFileSync(mapFile, "utf8")))
    } catch {
      map = undefined
    }
    maps.set(url, map)
  }
  return maps.get(url)
}

/**
 * A short name for a source file: `<package> <path in it>` under node_modules (`effect
 * dist/esm/internal/fiberRuntime.js`), else the path from `packages/`. With `group`, only the package
 * for node_modules files.
 */
export const fileName = (url: string, group = false): string => {
  if (url === "") return "(native / V8)"
  const file = url.replace(/^file:\/\//, "")
  const modules = file.lastIndexOf("/node_modules/")
  if (modules !== -1) {
    const rest = file.slice(modules + "/node_modules/".length).split("/")
    const scoped = rest[0]!.startsWith("@")
    const pkg = scoped ? `${rest[0]}/${rest[1]}` : rest[0]!
    return group ? pkg : `${pkg} ${rest.slice(scoped ? 2 : 1).join("/")}`
  }
  const packages = file.indexOf("/packages/")
  if (packages !== -1) return file.slice(packages + 1)
  if (file.startsWith("node:")) return file
  return file.split("/").slice(-2).join("/")
}

const locate = (frame: CallFrame): { file: string; group: string; line: number } => {
  const map = sourceMapOf(frame.url)
  if (map !== undefined && frame.lineNumber >= 0) {
    const entry = map.findEntry(frame.lineNumber, frame.columnNumber) as {
      originalSource?: string
      originalLine?: number
    }
    if (entry?.originalSource !== undefined)
      return {
        file: fileName(entry.originalSource),
        group: fileName(entry.originalSource, true),
        line: (entry.originalLine ?? 0) + 1
      }
  }
  return { file: fileName(frame.url), group: fileName(frame.url, true), line: frame.lineNumber + 1 }
}

/** Self time per function and per file over `[from, to]` (µs on the profile's clock), largest first. */
export const summarise = (
  profile: Profile,
  options: { top?: number | undefined; from?: number | undefined; to?: number | undefined } = {}
): Summary => {
  const top = options.top ?? 15
  const from = options.from ?? Number.NEGATIVE_INFINITY
  const to = options.to ?? Number.POSITIVE_INFINITY
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const selfUs = new Map<number, number>()
  let at = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0
    // A sample stands for the time until the next one.
    const next = at + (profile.timeDeltas[i + 1] ?? 0)
    if (at < from || at > to) continue
    const id = profile.samples[i]!
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, next - at))
  }
  const functions = new Map<string, number>()
  const files = new Map<string, number>()
  let total = 0
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame
    if (frame === undefined) continue
    total += us
    const { file, group, line } = locate(frame)
    const name =
      frame.url === ""
        ? `${frame.functionName || "(anonymous)"}`
        : `${frame.functionName || "(anonymous)"} ${file}:${line}`
    functions.set(name, (functions.get(name) ?? 0) + us)
    files.set(group, (files.get(group) ?? 0) + us)
  }
  const entries = (map: Map<string, number>) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: us / 1000, share: total === 0 ? 0 : us / total }))
  return { totalMs: total / 1000, functions: entries(functions), files: entries(files) }
}

export const read = (file: string): Profile => JSON.parse(fs.readFileSync(file, "utf8")) as Profile

export const format = (summary: Summary, title: string): string => {
  const row = (entry: Entry) =>
    `  ${(entry.share * 100).toFixed(1).padStart(5)}%  ${entry.ms.toFixed(1).padStart(8)} ms  ${entry.name}`
  return [
    `${title}: ${summary.totalMs.toFixed(1)} ms sampled`,
    "  self time by function:",
    ...summary.functions.map(row),
    "  self time by source file (node_modules: by package):",
    ...summary.files.map(row)
  ].join("\n")
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2)
  const option = (name: string) => {
    const at = args.indexOf(`--${name}`)
    return at === -1 ? undefined : Number(args[at + 1])
  }
  const file = args.find((arg, i) => !arg.startsWith("--") && !args[i - 1]?.startsWith("--"))
  if (file === undefined) {
    console.error("usage: bench/cpu-profile.ts <file.cpuprofile> [--top 15] [--from µs --to µs]")
    process.exit(2)
  }
  console.log(format(summarise(read(file), { top: option("top"), from: option("from"), to: option("to") }), file))
}
