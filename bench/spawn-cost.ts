/**
 * What starting one command costs the process that starts it, as its heap grows: every `bash` call
 * (and every Command Shell expansion) spawns `/bin/bash -c <command>` from the server's own process.
 *
 *   node --import tsx bench/spawn-cost.ts [--heaps 0,100,300] [--rounds 40]
 *
 * For each heap size (MiB of live objects added to this process's V8 heap, as a server holds its own),
 * the script starts `/bin/bash -c true` `--rounds` times, one after another, two ways: spawned by this
 * process, as `ProcessTree.spawn` does (detached, stdio ignore/pipe/pipe), and through the Spawn
 * Helper (`SpawnHelper.spawn`, as `bash` calls start on Linux). It prints the medians of:
 * - **blocked**: how long the start holds the event loop (spawned here, libuv forks the whole
 *   process on Linux, then waits until the child has exec'd);
 * - **done**: from the start to the child's `close`;
 * - **work after**: a fixed piece of allocating work (about 4 MB of small objects) run right after
 *   the start returns, against the same work with no start before it: a fork write-protects every
 *   page of the process, so the first write to each page afterwards faults;
 * and, once, the same `bash -c true` started in a loop by `/bin/sh` (a small process forking): the
 * floor of a process start on the machine. Printed, never asserted (DESIGN §7.10).
 */

import * as childProcess from "node:child_process"
import { performance } from "node:perf_hooks"
import { SpawnHelper } from "../packages/core/src/tool/builtin/spawn-helper.js"
import { type Figure, median, numberFlag, positive, runWhenMain } from "./figures.js"

const at = process.argv.indexOf("--heaps")
const heaps = (at === -1 ? "0,100,300" : (process.argv[at + 1] ?? "0,100,300")).split(",").map(Number)
const rounds = numberFlag("rounds", 40, positive)

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Started {
  readonly once: (event: "close" | "error", listener: (error?: Error) => void) => unknown
}

/** How `bash -c true` is started: by this process, or by the Spawn Helper. */
const starts: Record<"host" | "helper", () => Started> = {
  host: () => childProcess.spawn("/bin/bash", ["-c", "true"], { detached: true, stdio: ["ignore", "pipe", "pipe"] }),
  helper: () => {
    const command = SpawnHelper.spawn("/bin/bash", ["-c", "true"], { env: { PATH: process.env.PATH ?? "" } })
    if (command === undefined) throw new Error("the Spawn Helper is not available on this host")
    return command
  }
}

/** About 4 MB of short-lived small objects: what a server's next piece of work allocates. */
const work = () => {
  const start = performance.now()
  let kept = 0
  for (let i = 0; i < 100_000; i++) kept += [{ i, text: `item ${i}` }].length
  return { ms: performance.now() - start, kept }
}

/** Starts `bash -c true` one way; resolves with the time the start blocked, the work after it, and the time to `close`, in ms. */
const bash = (how: "host" | "helper") =>
  new Promise<{ readonly blocked: number; readonly after: number; readonly done: number }>((resolve, reject) => {
    const start = performance.now()
    const child = starts[how]()
    const blocked = performance.now() - start
    const after = work().ms
    child.once("error", reject)
    child.once("close", () => resolve({ blocked, after, done: performance.now() - start }))
  })

/** Live objects until V8's heap holds about `mib` MiB more, kept until the measurement ends. */
const ballast = (mib: number) => {
  const held: Array<{ readonly i: number; readonly text: string }> = []
  const target = process.memoryUsage().heapUsed + mib * 2 ** 20
  while (process.memoryUsage().heapUsed < target) {
    for (let i = 0; i < 10_000; i++) held.push({ i, text: `entry ${held.length}` })
  }
  return held
}

const measure = async (mib: number) => {
  const held = ballast(mib)
  const samples = () => ({ blocked: [] as Array<number>, after: [] as Array<number>, done: [] as Array<number> })
  const all = { host: samples(), helper: samples() }
  const alone: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    // Interleaved, so that the machine's noise hits both ways alike.
    for (const how of ["host", "helper"] as const) {
      const times = await bash(how)
      all[how].blocked.push(times.blocked)
      all[how].after.push(times.after)
      all[how].done.push(times.done)
      await pause(10)
    }
    alone.push(work().ms)
    await pause(10)
  }
  const rss = process.memoryUsage().rss / 2 ** 20
  const medians = (how: "host" | "helper") => ({
    blocked: median(all[how].blocked),
    after: median(all[how].after),
    done: median(all[how].done)
  })
  return { held: held.length, rss, host: medians("host"), helper: medians("helper"), alone: median(alone) }
}

/** `bash -c true` started `count` times by `/bin/sh`: ms per start. */
const fromShell = (count: number): number => {
  const start = performance.now()
  childProcess.execFileSync("/bin/sh", ["-c", `i=0; while [ $i -lt ${count} ]; do /bin/bash -c true; i=$((i+1)); done`])
  return (performance.now() - start) / count
}

export const run = async (): Promise<ReadonlyArray<Figure>> => {
  const figures: Array<Figure> = []
  console.log(`bash -c true, ${rounds} starts per heap size and way, medians (ms)`)
  for (const mib of heaps) {
    const { rss, host, helper, alone } = await measure(mib)
    console.log(`heap +${mib} MiB (RSS ${rss.toFixed(0)} MiB); the work alone ${alone.toFixed(2)}`)
    for (const [how, times] of [
      ["spawned here", host],
      ["Spawn Helper", helper]
    ] as const) {
      console.log(
        `  ${how.padEnd(13)} event loop blocked ${times.blocked.toFixed(2)}, work after ${times.after.toFixed(2)}, start → close ${times.done.toFixed(2)}`
      )
    }
    figures.push(
      { name: `spawn-blocked-${mib}`, value: host.blocked, unit: "ms" },
      { name: `spawn-work-after-${mib}`, value: host.after, unit: "ms" },
      { name: `spawn-done-${mib}`, value: host.done, unit: "ms" },
      { name: `helper-blocked-${mib}`, value: helper.blocked, unit: "ms" },
      { name: `helper-work-after-${mib}`, value: helper.after, unit: "ms" },
      { name: `helper-done-${mib}`, value: helper.done, unit: "ms" },
      { name: `work-alone-${mib}`, value: alone, unit: "ms" }
    )
  }
  const shell = fromShell(rounds)
  console.log(`the same started by /bin/sh in a loop: ${shell.toFixed(2)} per start`)
  figures.push({ name: "spawn-from-shell", value: shell, unit: "ms" })
  return figures
}

runWhenMain(import.meta.url, run)
