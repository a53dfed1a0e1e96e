export * as IdleCollection from "./idle-collection.js"

import { performance } from "node:perf_hooks"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { Duration, Effect, Metric, Schedule } from "effect"

/**
 * Idle Collection: once the server has gone quiet after a busy spell, one full garbage collection
 * (and, if its pages stay committed, another on a later quiet tick) gives V8's old generation back
 * to the system.
 *
 * Why: under load V8 lets its old generation grow to several times what is live, filled with
 * promoted garbage, and a server that then goes quiet allocates nothing, so no collection ever
 * runs again and that memory stays resident for the life of the process (measured: 1,000 sessions
 * and prompts left 262 MiB of RSS flat for 30 idle seconds; two collections took it to 171 MiB).
 * The first full collection finds the garbage but V8 keeps its pages committed; a second one, a
 * tick later, releases them.
 *
 * Policy, checked every {@link Options.interval} once {@link Options.delay} has passed: when the
 * event loop was busy less than {@link Options.busy} of the last interval and V8's old space
 * commits at least {@link Options.slack} more than was live after the last collection (before the
 * first, nothing is known to be live), collect. A collection that freed nothing and released
 * nothing is not repeated until the old space has grown by the slack again, so a heap that cannot
 * shrink is not collected every second. A collection takes some tens of milliseconds and
 * only ever runs on a quiet server.
 *
 * V8 exposes no collection to a process started without `--expose-gc`; the flag is set at the first
 * collection, after `delay`: the bin checks V8's code cache against the flags it was made under and
 * saves it two seconds into the start (see `bin.ts`), so no flag may change before that.
 */

export interface Options {
  /** Between two checks. Default 1 s. */
  readonly interval?: Duration.DurationInput
  /** Before the first check. Default 5 s. */
  readonly delay?: Duration.DurationInput
  /** The event loop's utilisation over an interval below which the server counts as quiet. Default 0.05. */
  readonly busy?: number
  /** Old-space bytes committed beyond the live ones that make a collection worth it. Default 32 MiB. */
  readonly slack?: number
}

/** V8's old space, in bytes. */
export interface OldSpace {
  readonly committed: number
  readonly used: number
}

/** What the last collection left. */
export interface State {
  /** Old-space bytes in use after the last collection: the live estimate. */
  readonly live: number
  /** Old-space bytes committed after the last collection. */
  readonly committed: number
  /** Whether the last collection freed or released anything (true before the first). */
  readonly progressed: boolean
}

const mebibyte = 1024 * 1024
/** Below this a collection changed nothing: V8's accounting moves by a few pages even on an idle heap. */
const progressStep = mebibyte

/** Before the first collection nothing is known to be live: the first quiet check with `slack` committed collects. */
export const initial: State = { live: 0, committed: 0, progressed: true }

/** Whether to collect now: `quiet` is whether the event loop was quiet over the last interval. */
export const due = (state: State, space: OldSpace, quiet: boolean, slack: number): boolean =>
  quiet && space.committed - state.live >= slack && (state.progressed || space.committed - state.committed >= slack)

/** The state after a collection that took the old space from `before` to `now`. */
export const after = (before: OldSpace, now: OldSpace): State => ({
  live: now.used,
  committed: now.committed,
  progressed: before.used - now.used >= progressStep || before.committed - now.committed >= progressStep
})

/** Collections run by {@link run}. */
export const collections = Metric.counter("opencode_idle_collections_total", {
  description: "Full garbage collections run while the server was quiet, to give memory back",
  incremental: true
})

const oldSpace = (): OldSpace => {
  const space = v8.getHeapSpaceStatistics().find((entry) => entry.space_name === "old_space")
  return space === undefined ? { committed: 0, used: 0 } : { committed: space.space_size, used: space.space_used_size }
}

let exposed: (() => void) | undefined
/** V8's full collection: the global `gc` when the process has one, else exposed now (see above). */
const collector = (): (() => void) => {
  if (exposed !== undefined) return exposed
  const global = (globalThis as { gc?: unknown }).gc
  if (typeof global === "function") exposed = () => global()
  else {
    v8.setFlagsFromString("--expose-gc")
    // The flag applies to contexts made after it: a new one holds `gc`.
    const fresh = vm.runInNewContext("gc") as () => void
    exposed = () => fresh()
  }
  return exposed
}

/**
 * Checks and collects as described above, until interrupted. The checks run in this fiber; a
 * collection blocks the event loop for its duration, which is why it waits for a quiet one. Nothing
 * here is traced (a span for the life of the process, or one a second, would bury the traces that
 * explain something); each collection is logged at DEBUG and counted in {@link collections}.
 */
export const run = (options: Options = {}): Effect.Effect<void> => Effect.withTracerEnabled(checks(options), false)

const checks = Effect.fnUntraced(function* (options: Options) {
  const slack = options.slack ?? 32 * mebibyte
  const busy = options.busy ?? 0.05
  yield* Effect.sleep(options.delay ?? Duration.seconds(5))
  let state = initial
  let utilization = performance.eventLoopUtilization()
  const check = Effect.sync(() => {
    const now = performance.eventLoopUtilization()
    const quiet = performance.eventLoopUtilization(now, utilization).utilization < busy
    utilization = now
    const before = oldSpace()
    if (!due(state, before, quiet, slack)) return false
    collector()()
    state = after(before, oldSpace())
    return true
  })
  yield* check.pipe(
    Effect.tap((collected) =>
      collected
        ? Effect.zipRight(
            Metric.increment(collections),
            Effect.logDebug("idle collection").pipe(
              Effect.annotateLogs({
                liveMiB: Math.round(state.live / mebibyte),
                committedMiB: Math.round(state.committed / mebibyte)
              })
            )
          )
        : Effect.void
    ),
    Effect.repeat(Schedule.spaced(options.interval ?? Duration.seconds(1))),
    Effect.asVoid
  )
})
