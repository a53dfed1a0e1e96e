export * as IdleCollection from "./idle-collection.js"

import { performance } from "node:perf_hooks"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { Duration, Effect, Metric, Schedule } from "effect"

/**
 * Idle Collection: once the server has gone quiet after a busy spell, one full garbage collection
 * (and, if its pages stay committed, another on a later quiet tick) gives V8's old generation back
 * to the system; one more, once the quiet has lasted, gives back its young generation.
 *
 * Why: under load V8 lets its old generation grow to several times what is live, filled with
 * promoted garbage, and a server that then goes quiet allocates nothing, so no collection ever
 * runs again and that memory stays resident for the life of the process (measured: 1,000 sessions
 * and prompts left 262 MiB of RSS flat for 30 idle seconds; two collections took it to 171 MiB).
 * The first full collection finds the garbage but V8 keeps its pages committed; a second one, a
 * tick later, releases them. The young generation grows to 32 MiB under load and V8 shrinks it only
 * at the end of a collection that finds the last five seconds' allocation rate low (nonzero and
 * under about 1 MB/s): a collection on a server quiet for that long (measured: 1,000 sessions and
 * prompts left it at 32 MiB for as long as the server stayed quiet, whatever collected the old space).
 *
 * Policy, checked every {@link Options.interval} once {@link Options.delay} has passed: when the
 * event loop was busy less than {@link Options.busy} of the last interval and V8's old space
 * commits at least {@link Options.slack} more than was live after the last collection (before the
 * first, nothing is known to be live), collect. A collection that freed nothing and released
 * nothing is not repeated until the old space has grown by the slack again, so a heap that cannot
 * shrink is not collected every second. Also collect when the loop has been quiet at every check
 * for {@link Options.youngQuiet} and V8's new space commits more than {@link Options.youngFloor},
 * unless the last collection left it at this very size (one that could not shrink it is not
 * repeated until the new space has changed). With {@link Options.release}, the first check of each
 * quiet spell that has lasted {@link Options.youngQuiet} releases the host's caches and, if they held
 * enough to matter, collects, and the next quiet check collects once more. A collection takes some
 * tens of milliseconds, only ever runs on a quiet server, and does not count as the loop being busy.
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
  /** How long the loop must have been quiet (at every check) before a collection for the new space. Default 6 s. */
  readonly youngQuiet?: Duration.DurationInput
  /** New-space bytes committed above which a collection for the new space is worth it. Default 8 MiB. */
  readonly youngFloor?: number
  /**
   * Drops what the host's caches hold (Core's `MessageProjection.releaseCaches`) and says whether that
   * was worth a collection: called once per quiet spell, when the loop has been quiet for
   * {@link youngQuiet}. When it answers true, a collection follows at once and one more at the next
   * quiet check, which gives the freed pages back. Default: nothing.
   */
  readonly release?: () => boolean
}

/** V8's old space, in bytes. */
export interface OldSpace {
  readonly committed: number
  readonly used: number
}

/** V8's new space (the young generation): the bytes it commits. */
export interface NewSpace {
  readonly committed: number
}

/** What the last collection left. */
export interface State {
  /** Old-space bytes in use after the last collection: the live estimate. */
  readonly live: number
  /** Old-space bytes committed after the last collection. */
  readonly committed: number
  /** Whether the last collection freed or released anything (true before the first). */
  readonly progressed: boolean
  /** New-space bytes committed after the last collection made for the new space (0 before the first). */
  readonly young: number
}

const mebibyte = 1024 * 1024
/** Below this a collection changed nothing: V8's accounting moves by a few pages even on an idle heap. */
const progressStep = mebibyte

/** Before the first collection nothing is known to be live: the first quiet check with `slack` committed collects. */
export const initial: State = { live: 0, committed: 0, progressed: true, young: 0 }

/** Whether to collect now for the old space: `quiet` is whether the event loop was quiet over the last interval. */
export const due = (state: State, space: OldSpace, quiet: boolean, slack: number): boolean =>
  quiet && space.committed - state.live >= slack && (state.progressed || space.committed - state.committed >= slack)

/**
 * Whether to collect now for the new space: `quietFor` is how long the loop has been quiet at every
 * check, `settled` the {@link Options.youngQuiet} that lets V8 shrink it.
 */
export const youngDue = (state: State, space: NewSpace, quietFor: number, settled: number, floor: number): boolean =>
  quietFor >= settled && space.committed > floor && space.committed !== state.young

/**
 * The state after a collection that took the old space from `before` to `now` and left the new
 * space at `young`: the collection was made for the new space when `young` is given, else
 * `previous`'s record of such a collection stands.
 */
export const after = (previous: State, before: OldSpace, now: OldSpace, young?: NewSpace): State => ({
  live: now.used,
  committed: now.committed,
  progressed: before.used - now.used >= progressStep || before.committed - now.committed >= progressStep,
  young: young === undefined ? previous.young : young.committed
})

/** Collections run by {@link run}. */
export const collections = Metric.counter("opencode_idle_collections_total", {
  description: "Full garbage collections run while the server was quiet, to give memory back",
  incremental: true
})

/** V8's old and new spaces now. */
const spaces = (): { readonly old: OldSpace; readonly young: NewSpace } => {
  let old: OldSpace = { committed: 0, used: 0 }
  let young: NewSpace = { committed: 0 }
  for (const space of v8.getHeapSpaceStatistics()) {
    if (space.space_name === "old_space") old = { committed: space.space_size, used: space.space_used_size }
    else if (space.space_name === "new_space") young = { committed: space.space_size }
  }
  return { old, young }
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
  const interval = Duration.decode(options.interval ?? Duration.seconds(1))
  const settled = Duration.toMillis(options.youngQuiet ?? Duration.seconds(6))
  const floor = options.youngFloor ?? 8 * mebibyte
  yield* Effect.sleep(options.delay ?? Duration.seconds(5))
  let state = initial
  let utilization = performance.eventLoopUtilization()
  // Since when the loop has been quiet at every check (the first check's interval included).
  let quietSince = performance.now() - Duration.toMillis(interval)
  // Whether this quiet spell's caches were released, and whether a collection is to follow that.
  let released = false
  let followUp = false
  const check = Effect.sync(() => {
    const now = performance.eventLoopUtilization()
    const quiet = performance.eventLoopUtilization(now, utilization).utilization < busy
    utilization = now
    const checkedAt = performance.now()
    if (!quiet) {
      quietSince = checkedAt
      released = false
    }
    let release = false
    if (options.release !== undefined && !released && checkedAt - quietSince >= settled) {
      release = options.release()
      released = true
    }
    const again = quiet && followUp
    followUp = release
    const before = spaces()
    const forYoung = youngDue(state, before.young, checkedAt - quietSince, settled, floor)
    if (!release && !again && !forYoung && !due(state, before.old, quiet, slack)) return false
    collector()()
    // The collection's own time does not make the next interval busy.
    utilization = performance.eventLoopUtilization()
    const left = spaces()
    state = after(state, before.old, left.old, forYoung ? left.young : undefined)
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
                committedMiB: Math.round(state.committed / mebibyte),
                youngMiB: Math.round(state.young / mebibyte)
              })
            )
          )
        : Effect.void
    ),
    Effect.repeat(Schedule.spaced(interval)),
    Effect.asVoid
  )
})
