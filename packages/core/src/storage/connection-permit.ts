export * as ConnectionPermit from "./connection-permit.js"

import { Effect } from "effect"

/**
 * The one permit of a host's SQLite connection (see SqliteConnection): a statement outside a
 * transaction holds it for its run, a transaction from `BEGIN` to its end, so that no statement lands
 * inside another fiber's transaction.
 *
 * Unlike Effect's Semaphore, a take of a free permit completes in the same step of the fiber: the
 * Semaphore resumes every take in a later step, even when nothing holds it, and in a busy process
 * that step waits behind whatever else is queued (it was most of the time an SSE replay took to read
 * its first page). A take of a held permit waits for a release; a release wakes every waiter and each
 * tries again, so a waiter interrupted after its wake-up keeps no other waiter asleep. Not fair:
 * a fiber that finds the permit free takes it, even with others waiting.
 */
export interface Permit {
  /** Takes the permit: at once when it is free, else after a release. Interrupted while waiting, it takes nothing. */
  readonly take: Effect.Effect<void>
  /** Gives the permit back and wakes the fibers waiting for it. Only its holder releases it. */
  readonly release: Effect.Effect<void>
  /** `effect` run holding the permit: the wait for it is interruptible, and it is released however `effect` ends. */
  readonly withPermit: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * Whether nothing holds the permit now. Work that runs synchronously (a statement outside a
   * transaction) can then run at once without taking it: nothing else runs before it ends.
   */
  readonly isFree: () => boolean
}

export const make = (): Permit => {
  let held = false
  const waiters = new Set<() => void>()
  const wait = Effect.async<void>((resume) => {
    const wake = () => {
      waiters.delete(wake)
      resume(Effect.void)
    }
    waiters.add(wake)
    return Effect.sync(() => {
      waiters.delete(wake)
    })
  })
  const take: Effect.Effect<void> = Effect.suspend(() => {
    if (held) return Effect.zipRight(wait, take)
    held = true
    return Effect.void
  })
  const release = Effect.sync(() => {
    held = false
    for (const wake of [...waiters]) wake()
  })
  return {
    take,
    release,
    withPermit: (effect) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.zipRight(restore(take), Effect.ensuring(restore(effect), release))
      ),
    isFree: () => !held
  }
}
