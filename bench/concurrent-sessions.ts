/**
 * 200 concurrent sessions × 20 Steps against `opencode serve` (the built bin, a child process) and the
 * loopback scripted LLM (zero latency) in this process: the wall time and the server's peak RSS.
 *
 *   node --import tsx bench/concurrent-sessions.ts [--sessions 200] [--steps 20] [--cpu-prof] [--top 15]
 *     [--node-flags "--max-semi-space-size=8 …"] [--heap-snapshot file.heapsnapshot]
 *
 * The sessions are created first (not timed); then every session gets one prompt at once, and the
 * model answers each session's first `steps - 1` requests with a `read` tool call (of a small file in
 * the project) and the last with text, so each prompt runs `steps` Steps. The wall time runs from
 * sending the prompts to the last `wait` resolving. Peak RSS is the kernel's high-water mark of the
 * server process (`VmHWM`), start-up included; RSS at the end and the server's CPU time are printed
 * too. The number of provider requests is checked against sessions × steps.
 * `--cpu-prof` runs the server under `node --cpu-prof` and prints its top self-time functions and files
 * over the concurrent window (cpu-profile.ts). `--node-flags` starts the server's `node` with those
 * flags (one argument, split on spaces), to compare V8 heap settings. `--heap-snapshot` writes a V8
 * heap snapshot of the server once every session is idle (what the load left live), to that file.
 * Figures are printed, never asserted.
 */

import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { format, read, summarise } from "./cpu-profile.js"
import { type Figure, numberFlag, runWhenMain } from "./figures.js"
import { respond } from "./scenarios.js"
import { cpuMs, createSession, peakRssMiB, prompt, rssMiB, startLlm, startServer, waitIdle } from "./servers.js"

const args = process.argv.slice(2)

export const run = async (): Promise<ReadonlyArray<Figure>> => {
  const sessions = numberFlag("sessions", 200, (value) => value >= 1)
  const steps = numberFlag("steps", 20, (value) => value >= 1)
  const profile = args.includes("--cpu-prof")
  const flagsAt = args.indexOf("--node-flags")
  const snapshotAt = args.indexOf("--heap-snapshot")
  const snapshotFile = snapshotAt === -1 ? undefined : path.resolve(args[snapshotAt + 1] ?? "concurrent.heapsnapshot")
  const nodeFlags = [
    ...(flagsAt === -1 ? [] : (args[flagsAt + 1] ?? "").split(" ").filter((flag) => flag.length > 0)),
    ...(snapshotFile === undefined ? [] : ["--heapsnapshot-signal=SIGUSR2"])
  ]
  let requests = 0
  // Title requests have a lane of their own (answered by `respond` too, not counted).
  const llm = await startLlm((request) => {
    requests++
    return respond(request)
  }, respond)
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-concurrent-")))
  const profileDir = path.join(root, "profile")
  try {
    const server = await startServer("ours", {
      root,
      llmUrl: llm.server.url,
      nodeFlags,
      ...(profile ? { cpuProfileDir: profileDir } : {})
    })
    const api = { url: server.url, directory: server.directory }
    const file = path.join(server.directory, "notes.txt")
    let window = { from: 0, to: 0 }
    let figures: Array<Figure>
    try {
      const ids: Array<string> = []
      for (let i = 0; i < sessions; i++) ids.push(await createSession(api))
      const rssBefore = rssMiB(server.pid)
      requests = 0
      const cpu0 = cpuMs(server.pid)
      window = { ...window, from: Number(process.hrtime.bigint() / 1000n) }
      const started = performance.now()
      await Promise.all(
        ids.map(async (id, i) => {
          await prompt(api, id, `bench-concurrent-${i} steps=${steps} file=${file}`)
          await waitIdle(api, id)
        })
      )
      const wall = (performance.now() - started) / 1000
      window = { ...window, to: Number(process.hrtime.bigint() / 1000n) }
      const cpu = cpuMs(server.pid) - cpu0
      figures = [
        { name: "concurrent-wall", value: wall, unit: "s" },
        { name: "concurrent-peak-rss", value: peakRssMiB(server.pid), unit: "MiB" },
        { name: "concurrent-rss-before", value: rssBefore, unit: "MiB" },
        { name: "concurrent-rss-end", value: rssMiB(server.pid), unit: "MiB" },
        { name: "concurrent-cpu-per-step", value: cpu / (sessions * steps), unit: "ms" },
        { name: "concurrent-steps-per-second", value: (sessions * steps) / wall, unit: "steps-per-s" },
        { name: "concurrent-provider-requests", value: requests, unit: "count" }
      ]
      console.log(
        `${sessions} concurrent sessions × ${steps} Steps (${sessions * steps} provider requests expected, ${requests} answered): ` +
          `${wall.toFixed(2)} s wall, peak RSS ${peakRssMiB(server.pid).toFixed(1)} MiB (target ≤ 150 MiB: ${peakRssMiB(server.pid) <= 150 ? "met" : "NOT met"}), ` +
          `server CPU ${(cpu / 1000).toFixed(2)} s`
      )
      if (snapshotFile !== undefined) await heapSnapshot(server.pid, server.directory, snapshotFile)
    } finally {
      await server.stop()
    }
    if (profile) {
      const written = fs.existsSync(profileDir)
        ? fs.readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile"))
        : undefined
      if (written === undefined) console.log("the server wrote no CPU profile (it did not exit on its own in time)")
      else
        console.log(
          format(
            summarise(read(path.join(profileDir, written)), {
              top: numberFlag("top", 15, (value) => value >= 1),
              from: window.from,
              to: window.to
            }),
            "\nCPU profile of the server over the concurrent window"
          )
        )
    }
    return figures
  } finally {
    await llm.close()
    fs.rmSync(root, { recursive: true, force: true })
  }
}

/**
 * Asks the server (started with `--heapsnapshot-signal=SIGUSR2`) for a heap snapshot, which V8 writes
 * into its working directory, and moves it to `file` once it is complete (its size stops changing).
 */
const heapSnapshot = async (pid: number, directory: string, file: string) => {
  const written = () => fs.readdirSync(directory).find((name) => name.endsWith(".heapsnapshot"))
  process.kill(pid, "SIGUSR2")
  let size = -1
  for (let waited = 0; waited < 120_000; waited += 500) {
    await new Promise((resolve) => setTimeout(resolve, 500))
    const name = written()
    if (name === undefined) continue
    const now = fs.statSync(path.join(directory, name)).size
    if (now > 0 && now === size) {
      fs.renameSync(path.join(directory, name), file)
      console.log(`heap snapshot of the server after the load: ${file} (${(now / 1024 / 1024).toFixed(1)} MB)`)
      return
    }
    size = now
  }
  console.log("the server wrote no heap snapshot within two minutes")
}

runWhenMain(import.meta.url, run)
