/**
 * `pnpm bench:side-by-side`: the same scenarios (scenarios.ts) against our `opencode serve` (the
 * built bin) and upstream `opencode-ai` 1.18.33 (installed on demand from npm into a scratch dir,
 * upstream.ts), both against one loopback scripted LLM in this process, in interleaved rounds (ours,
 * upstream; then upstream, ours; …) so that the machine's noise hits both alike. Each round starts a
 * fresh server on a fresh data directory. Prints, per figure, the median over rounds of each and the
 * ratio ours ÷ upstream, plus `figure: value unit` lines (bench/README.md, "Convention").
 *
 *   node --import tsx bench/side-by-side.ts [--rounds 3] [--quick] [--cpu-prof] [--top 12]
 *
 * `--cpu-prof` adds one more round of ours (not counted in the figures) with the server under
 * `--cpu-prof`, and prints the top self-time functions and files of each scenario's window of that
 * profile (cpu-profile.ts).
 */

import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { format, read, summarise } from "./cpu-profile.js"
import { type Figure, median, numberFlag, runWhenMain } from "./figures.js"
import { check, defaults, type Measured, respond, type ScenarioOptions, scenarios, type Window } from "./scenarios.js"
import { type Implementation, rssMiB, sleep, startLlm, startServer } from "./servers.js"
import * as Upstream from "./upstream.js"

const args = process.argv.slice(2)

const quickOptions: ScenarioOptions = {
  creates: 10,
  turns: 5,
  historyTurns: 3,
  historyChunks: 50,
  historySteps: 4,
  replays: 3,
  pageSeconds: 1,
  concurrency: 10
}

interface Run {
  readonly implementation: Implementation
  readonly round: number
  readonly figures: ReadonlyArray<Measured>
}

/** Starts one server, measures start-up, idle RSS and every scenario, stops it. */
const oneRun = async (
  implementation: Implementation,
  root: string,
  llmUrl: string,
  options: ScenarioOptions,
  upstreamBinary: string | undefined,
  cpuProfileDir?: string
) => {
  const windows: Array<Window> = []
  const server = await startServer(implementation, { root, llmUrl, upstreamBinary, cpuProfileDir })
  try {
    const figures: Array<Measured> = [{ name: "cold-start", value: server.coldStartMs, unit: "ms", lower: true }]
    await sleep(1000)
    figures.push({ name: "rss-idle", value: rssMiB(server.pid), unit: "MiB", lower: true })
    const api = { url: server.url, directory: server.directory, pid: server.pid }
    await check(api)
    figures.push(...(await scenarios(api, options, windows)))
    return { figures, windows }
  } finally {
    await server.stop()
  }
}

export const run = async (): Promise<ReadonlyArray<Figure>> => {
  const rounds = numberFlag("rounds", 3)
  const options = args.includes("--quick") ? quickOptions : defaults
  const upstreamBinary = Upstream.binary()
  const llm = await startLlm(respond)
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-side-by-side-")))
  const runs: Array<Run> = []
  try {
    for (let round = 1; round <= rounds; round++) {
      const order: ReadonlyArray<Implementation> = round % 2 === 1 ? ["ours", "upstream"] : ["upstream", "ours"]
      for (const implementation of order) {
        console.error(`round ${round}: ${implementation}…`)
        const { figures } = await oneRun(
          implementation,
          path.join(root, `${implementation}-${round}`),
          llm.server.url,
          options,
          upstreamBinary
        )
        runs.push({ implementation, round, figures })
      }
    }
    if (args.includes("--cpu-prof")) {
      const profileDir = path.join(root, "profile")
      console.error("profiled round: ours under --cpu-prof (not counted)…")
      const { windows } = await oneRun(
        "ours",
        path.join(root, "ours-profiled"),
        llm.server.url,
        options,
        undefined,
        profileDir
      )
      const file = fs.existsSync(profileDir)
        ? fs.readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile"))
        : undefined
      if (file === undefined) console.log("no CPU profile was written")
      else {
        const profile = read(path.join(profileDir, file))
        const top = numberFlag("top", 12)
        console.log(`\nCPU profile of our server (${file}), per scenario window:\n`)
        for (const window of windows)
          console.log(
            `${format(summarise(profile, { top, from: window.fromUs, to: window.toUs }), `[${window.figure}]`)}\n`
          )
        console.log(`${format(summarise(profile, { top }), "[whole run, start-up included]")}\n`)
      }
    }
  } finally {
    await llm.close()
    fs.rmSync(root, { recursive: true, force: true })
  }

  // One line per figure: the median over rounds of each, and the ratio.
  const names = [...new Set(runs.flatMap((r) => r.figures.map((f) => f.name)))]
  const out: Array<Figure> = []
  const lines: Array<Array<string>> = [["figure", "ours", "upstream", "ours ÷ upstream", ""]]
  for (const name of names) {
    const pick = (implementation: Implementation) =>
      runs.filter((r) => r.implementation === implementation).flatMap((r) => r.figures.filter((f) => f.name === name))
    const ours = pick("ours")
    const theirs = pick("upstream")
    const unit = ours[0]?.unit ?? theirs[0]?.unit ?? ""
    const lower = ours[0]?.lower ?? theirs[0]?.lower ?? true
    const a = median(ours.map((f) => f.value))
    const b = median(theirs.map((f) => f.value))
    const ratio = a / b
    const better = !Number.isFinite(ratio)
      ? ""
      : lower
        ? ratio <= 1
          ? `ours ${(1 / ratio).toFixed(1)}× better`
          : `upstream ${ratio.toFixed(1)}× better`
        : ratio >= 1
          ? `ours ${ratio.toFixed(1)}× better`
          : `upstream ${(1 / ratio).toFixed(1)}× better`
    const cell = (v: number) => (Number.isFinite(v) ? (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2)) : "–")
    lines.push([
      name,
      `${cell(a)} ${unit}`,
      `${cell(b)} ${unit}`,
      Number.isFinite(ratio) ? ratio.toFixed(2) : "–",
      better
    ])
    if (Number.isFinite(a)) out.push({ name: `sbs-${name}-ours`, value: a, unit: unit.replace("/", "-per-") })
    if (Number.isFinite(b)) out.push({ name: `sbs-${name}-upstream`, value: b, unit: unit.replace("/", "-per-") })
    if (Number.isFinite(ratio)) out.push({ name: `sbs-${name}-ratio`, value: ratio, unit: "x" })
  }
  const cpus = os.cpus()
  console.log(
    `\nside by side: ours vs opencode-ai@${Upstream.version}, median of ${rounds} interleaved rounds each — ` +
      `${new Date().toISOString()}, node ${process.version}, ${os.platform()} ${os.arch()}, ${cpus.length} × ${cpus[0]?.model ?? "cpu"}, ` +
      `load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}\n`
  )
  const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)))
  for (const l of lines)
    console.log(l.map((c, i) => (i === 0 || i === 4 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "))
  console.log("")
  return out
}

runWhenMain(import.meta.url, run)
