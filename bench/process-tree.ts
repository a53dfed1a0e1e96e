/**
 * What looking for a Process Tree's members costs at the end of a call, as the machine runs more
 * processes: every `bash` call, MCP server and PTY ends with `ProcessTree.terminate`, which looks for
 * members first.
 *
 *   node --import tsx bench/process-tree.ts [--processes 0,400] [--rounds 300]
 *
 * For each count, this process starts that many `sleep` processes beside whatever the machine runs,
 * then spawns trees of `sh -c true` (nothing started), waits for each leader's exit, and times
 * `ProcessTree.members`: as it runs (a scan of `/proc` skipped while no pid was handed out since the
 * leader's), and on a second such tree adopted without its `lastPidAtReap` (so every look scans). It also prints how many
 * of the looks went without a scan (another process starting meanwhile means a scan). Printed, never
 * asserted (DESIGN §7.10).
 */

import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import { performance } from "node:perf_hooks"
import { Effect } from "effect"
import { ProcessTree } from "../packages/core/src/tool/builtin/process-tree.js"
import { type Figure, median, numberFlag, positive, runWhenMain } from "./figures.js"

const at = process.argv.indexOf("--processes")
const counts = (at === -1 ? "0,400" : (process.argv[at + 1] ?? "0,400")).split(",").map(Number)
const rounds = numberFlag("rounds", 300, positive)

const machineProcesses = () => fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name)).length

/** Microseconds one call of `f` takes, over a few repetitions. */
const timed = (f: () => unknown, repeat = 5): number => {
  const start = performance.now()
  for (let i = 0; i < repeat; i++) f()
  return ((performance.now() - start) * 1000) / repeat
}

const measure = async (extra: number) => {
  const sleepers = Array.from({ length: extra }, () => childProcess.spawn("sleep", ["600"], { stdio: "ignore" }))
  try {
    await new Promise((resolve) => setTimeout(resolve, 300))
    const looks: Array<number> = []
    const scans: Array<number> = []
    let skipped = 0
    const exit = (child: childProcess.ChildProcess) => new Promise((resolve) => child.once("exit", resolve))
    for (let round = 0; round < rounds; round++) {
      const { child, tree } = ProcessTree.spawn("/bin/sh", ["-c", "true"], { stdio: "ignore" })
      await exit(child)
      if (ProcessTree.withoutScan(tree) !== undefined) skipped++
      looks.push(timed(() => ProcessTree.members(tree)))
      await Effect.runPromise(ProcessTree.terminate(tree, 0))
    }
    for (let round = 0; round < rounds; round++) {
      // The same tree adopted without `lastPidAtReap`: every look at it scans once the leader is reaped.
      const { scope, env } = ProcessTree.scoped(process.env)
      const child = childProcess.spawn("/bin/sh", ["-c", "true"], { env, detached: true, stdio: "ignore" })
      const tree = ProcessTree.adopt({
        leader: child.pid,
        scope,
        unreaped: () => child.exitCode === null && child.signalCode === null
      })
      await exit(child)
      scans.push(timed(() => ProcessTree.members(tree)))
      await Effect.runPromise(ProcessTree.terminate(tree, 0))
    }
    return { processes: machineProcesses(), look: median(looks), scan: median(scans), skipped }
  } finally {
    for (const sleeper of sleepers) sleeper.kill("SIGKILL")
  }
}

export const run = async (): Promise<ReadonlyArray<Figure>> => {
  if (!fs.existsSync("/proc/self/stat")) throw new Error("bench/process-tree.ts reads /proc: Linux only")
  const figures: Array<Figure> = []
  for (const extra of counts) {
    const { processes, look, scan, skipped } = await measure(extra)
    console.log(
      `${processes} processes on the machine: members ${look.toFixed(1)} µs (${skipped} of ${rounds} looks without a scan), ` +
        `with the scan forced ${scan.toFixed(1)} µs`
    )
    figures.push(
      { name: `process-tree-members-${extra}`, value: look, unit: "µs" },
      { name: `process-tree-scan-${extra}`, value: scan, unit: "µs" }
    )
  }
  return figures
}

runWhenMain(import.meta.url, run)
