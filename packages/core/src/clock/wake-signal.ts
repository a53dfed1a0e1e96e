export * as WakeSignal from "./wake-signal.js"

/**
 * WakeSignal: how a loop that looks for work every so often is told to look now. A callback from
 * outside any fiber (a file system report, a PostgreSQL notification) calls {@link WakeSignal.notify};
 * the loop sleeps with {@link WakeSignal.sleep}, which resolves after `ms` of real time (like
 * `WallClock.sleep`) or at the first notification, whichever comes first.
 *
 * Why not `Effect.raceFirst(WallClock.sleep(ms), Queue.take(queue))`: a race forks two fibers, each
 * with a copy of its parent's fiber refs, and these loops run every few hundred milliseconds for the
 * life of the process. On an idle server that was most of what it allocated (about 1.2 MB a second,
 * enough that V8 never found the allocation rate low enough to shrink its young generation again
 * after a load). Here a sleep is one `Effect.async` in the sleeper's fiber with one timer.
 *
 * Semantics: a notification wakes every current sleeper; one that arrives while nobody sleeps is
 * kept (one at most) and ends the next sleep at once. With `coalesceMs`, a sleeper is woken that
 * long after the first notification, and the notifications in between count as that one (a burst of
 * file system reports asks one question). Interrupting a sleep clears its timer, and a kept
 * notification it had taken (and, with `coalesceMs`, not yet delivered) is kept again.
 */

import { Effect } from "effect"

export interface Signal {
  /** Wakes the current sleepers, or the next one if none sleeps. Callable from anywhere, any number of times. */
  readonly notify: () => void
  /** Resolves after `ms` of real time or at the first notification (see above). Never fails. */
  readonly sleep: (ms: number) => Effect.Effect<void>
}

/** A signal whose sleepers are woken `coalesceMs` after the first notification (0: at once). */
export const make = (options: { readonly coalesceMs?: number } = {}): Signal => {
  const coalesceMs = options.coalesceMs ?? 0
  // The wake-ups of the current sleepers.
  const sleepers = new Set<() => void>()
  let kept = false
  let coalescing: ReturnType<typeof setTimeout> | undefined
  const wakeAll = () => {
    coalescing = undefined
    if (sleepers.size === 0) {
      kept = true
      return
    }
    for (const wake of [...sleepers]) wake()
  }
  return {
    notify: () => {
      if (coalescing !== undefined) return
      if (coalesceMs === 0) wakeAll()
      else coalescing = setTimeout(wakeAll, coalesceMs)
    },
    sleep: (ms) =>
      Effect.async<void>((resume) => {
        const pending = kept
        kept = false
        if (pending && coalesceMs === 0) return resume(Effect.void)
        const wake = () => {
          clearTimeout(timer)
          sleepers.delete(wake)
          resume(Effect.void)
        }
        const timer = setTimeout(wake, pending ? coalesceMs : ms)
        sleepers.add(wake)
        return Effect.sync(() => {
          clearTimeout(timer)
          sleepers.delete(wake)
          // A kept notification this sleep took and had not yet delivered is kept again.
          if (pending) kept = true
        })
      })
  }
}

/** A signal nothing notifies (its `notify` does nothing): its sleep is a plain sleep of real time. */
export const never: Signal = { notify: () => {}, sleep: make().sleep }
