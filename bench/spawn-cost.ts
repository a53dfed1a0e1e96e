/**
 * What starting one command costs the process that starts it, as its heap grows: every `bash` call
 * (and every Command Shell expansion) spawns `/bin/bash -c <command>` from the server's own process.
 *
 *   node --import tsx bench/spawn-cost.ts [--heaps 0,100,300] [--rounds 40]
 *
 * For each heap size (MiB of live objects added to this process's V8 heap, as a server holds its own),
 * the script spawns `/bin/bash -c true` `--rounds` times, one after another, as `ProcessTree.spawn`
 * does (detached, stdio ignore/pipe/pipe), and prints the medians of:
 * - **blocked**: how long `spawn` holds the event loop (on Linux libuv forks the whole process, then
 *   waits until the child has exec'd);
 * - **done**: from `spawn` to the child's `close`;
 * and, once, the same `bash -c true` started in a loop by `/bin/sh` (a small process forking): the
 * floor of a process start on the machine. Printed, never asserted (DESIGN §7.10).
 */

import * as childProcess from "node:child_process"
import { performance } from "node:perf_hooks"
import { type Figure, median, numberFlag, positive, runWhenMain } from "./figures.js"

const at = process.argv.indexOf("--heaps")
const heaps = (at === -1 ? "0,100,300" : (process.argv[at + 1] ?? "0,100,300")).split(",").map(Number)
const rounds = numberFlag("rounds", 40, positive)

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs `bash -c true` as the bash tool does; resolves with the time `spawn` blocked and the time to `close`, in ms. */
const bash = () =>
  new Promise<{ readonly blocked: number; readonly done: number }>((resolve, reject) => {
    const start = performance.now()
    const child = childProcess.spawn("/bin/bash", ["-c", "true"], { detached: true, stdio: ["ignore", "pipe", "pipe"] })
    const blocked = performance.now() - start
    child.once("error", reject)
    child.once("close", () => resolve({ blocked, done: performance.now() - start }))
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
  const blocked: Array<number> = []
  const done: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    const times = await bash()
    blocked.push(times.blocked)
    done.push(times.done)
    await pause(10)
  }
  const rss = process.memoryUsage().rss / 2 ** 20
  return { held: held.length, rss, blocked: median(blocked), done: median(done) }
}

/** `bash -c true` started `count` times by `/bin/sh`: ms per start. */
const fromShell = (count: number): number => {
  const start = performance.now()
  childProcess.execFileSync("/bin/sh", ["-c", `i=0; while [ $i -lt ${count} ]; do /bin/bash -c true; i=$((i+1)); done`])
  return (performance.now() - start) / count
}

export const run = async (): Promise<ReadonlyArray<Figure>> => {
  const figures: Array<Figure> = []
  console.log(`bash -c true, ${rounds} spawns per heap size, medians (ms)`)
  for (const mib of heaps) {
    const { rss, blocked, done } = await measure(mib)
    console.log(
      `heap +${mib} MiB (RSS ${rss.toFixed(0)} MiB): event loop blocked ${blocked.toFixed(2)}, spawn → close ${done.toFixed(2)}`
    )
    figures.push(
      { name: `spawn-blocked-${mib}`, value: blocked, unit: "ms" },
      { name: `spawn-done-${mib}`, value: done, unit: "ms" }
    )
  }
  const shell = fromShell(rounds)
  console.log(`the same started by /bin/sh in a loop: ${shell.toFixed(2)} per start`)
  figures.push({ name: "spawn-from-shell", value: shell, unit: "ms" })
  return figures
}

runWhenMain(import.meta.url, run)
