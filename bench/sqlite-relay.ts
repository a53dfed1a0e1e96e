/**
 * Two processes over one SQLite file: how long after one commits a durable event the other's log
 * publishes it (what a client of the second process's SSE waits for a session the first one runs).
 *
 *   node --import tsx bench/sqlite-relay.ts [--events 200] [--every 20] [--poll-only]
 *
 * This process opens the log over a temporary database file and listens; a child process (this
 * script with `--child`) opens the same file and appends one event every `--every` ms, each carrying
 * the wall-clock instant of its append, in ms with a fraction (`performance.timeOrigin` +
 * `performance.now()`, on the clock both processes share). The figure is the median of the delays
 * from the child's commit to this process's live publication. `--poll-only` sets the file system's
 * reports aside (the relay only polls, every `EventLog.relayIntervalMs`), as before they were used.
 * Printed, never asserted (DESIGN §7.10).
 */

import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { Effect, Layer, Queue } from "effect"
import { Database, EventLog, LiveBus } from "../packages/core/src/index.js"
import { emit, isMain, numberFlag, positive } from "./figures.js"

const events = numberFlag("events", 200, positive)
const every = numberFlag("every", 20, positive)
const pollOnly = process.argv.includes("--poll-only")

const now = () => performance.timeOrigin + performance.now()

const logOver = (filename: string, options: { readonly watch: boolean }) =>
  EventLog.layerWith({ watchFiles: options.watch }).pipe(
    Layer.provideMerge(Database.layer({ filename })),
    Layer.provideMerge(LiveBus.layer)
  )

/** The child: appends `events` events, one every `every` ms, each stamped with its commit instant. */
const child = (filename: string) =>
  Effect.gen(function* () {
    const log = yield* EventLog.Service
    for (let n = 0; n < events; n++) {
      yield* log.append("agg_relay", [{ type: "bench.relayed", version: 1, data: { n, at: now() } }])
      yield* Effect.sleep(`${every} millis`)
    }
  }).pipe(Effect.provide(logOver(filename, { watch: true })))

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

export const run = () =>
  Effect.gen(function* () {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-relay-"))
    const filename = path.join(root, "shared.db")
    const delays = yield* Effect.gen(function* () {
      const log = yield* EventLog.Service
      const seen = yield* log.subscribe
      const writer = spawn(
        process.execPath,
        ["--import", "tsx", new URL(import.meta.url).pathname, "--child", filename, "--events", String(events)],
        { stdio: "inherit" }
      )
      const delays: Array<number> = []
      while (delays.length < events) {
        const envelope = yield* Queue.take(seen)
        const at = (envelope.data as { readonly at?: number }).at
        if (typeof at === "number") delays.push(now() - at)
      }
      writer.kill()
      return delays
    }).pipe(Effect.scoped, Effect.provide(logOver(filename, { watch: !pollOnly })))
    fs.rmSync(root, { recursive: true, force: true })
    const sorted = [...delays].sort((a, b) => a - b)
    const p90 = sorted[Math.floor(sorted.length * 0.9)] ?? Number.NaN
    console.log(
      `another process's commit → published here (${pollOnly ? "poll only" : "file system reports"}, ${events} events): ` +
        `median ${median(delays).toFixed(2)} ms, p90 ${p90.toFixed(2)} ms, max ${sorted.at(-1)?.toFixed(2)} ms`
    )
    return [{ name: "sqlite-relay", value: Number(median(delays).toFixed(3)), unit: "ms" }]
  })

if (isMain(import.meta.url)) {
  const at = process.argv.indexOf("--child")
  if (at !== -1) Effect.runPromise(child(process.argv[at + 1]!))
  else Effect.runPromise(run()).then(emit)
}
