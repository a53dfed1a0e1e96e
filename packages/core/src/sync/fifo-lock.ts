import { Deferred, Effect, Exit, FiberId } from "effect"

/**
 * A first-in-first-out mutual-exclusion lock: at most one fiber holds it, and waiters get it in the
 * order they asked.
 *
 * Why not `Effect.makeSemaphore(1)`: effect 3.22's `Semaphore` wakes every waiter on each release;
 * one wins and every loser re-enters `take` inside its previous `onInterrupt` frame. Under N waiters
 * each release costs O(N) wake-ups and each waiting fiber's stack grows by a few frames per lost race
 * (500 waiters reached 1,500 frames per fiber). This lock hands the permit straight to exactly one
 * waiter, so a release wakes one fiber and a waiter's stack stays the same however long it waits.
 *
 * Semantics:
 * - Acquisition is FIFO: a release passes the lock to the longest-waiting fiber still queued; it is
 *   never "free" in between, so a newcomer cannot barge in ahead of the queue.
 * - Interruption while queued removes the waiter and leaks nothing. If the interruption races with a
 *   hand-over (the permit was passed to the waiter but it was interrupted before running its body),
 *   the waiter passes the permit on to the next one.
 * - The holder releases the lock when its body ends for any reason: success, failure, defect or
 *   interruption.
 * - The body keeps the caller's interruptibility: it is interruptible unless the caller made it
 *   uninterruptible. Waiting for the lock is interruptible when the caller is.
 * - Not reentrant: a fiber that asks for a lock it already holds waits forever.
 */
export interface FifoLock {
  /** Runs `self` holding the lock, waiting in FIFO order for it first. */
  readonly withLock: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Whether some fiber holds the lock right now. */
  readonly locked: Effect.Effect<boolean>
  /** How many fibers are queued for the lock right now (the holder not counted). */
  readonly waiting: Effect.Effect<number>
}

/**
 * Builds an unlocked lock outside of an effect; for locks created lazily inside synchronous code
 * (e.g. one lock per key in a map).
 */
export const unsafeMake = (): FifoLock => {
  let held = false
  // Insertion-ordered, O(1) delete: the first entry is the longest waiter.
  const queue = new Set<Deferred.Deferred<void>>()

  /** Passes the lock to the next waiter, or frees it when nobody waits. */
  const release = Effect.sync(() => {
    const next = queue.values().next()
    if (next.done === true) {
      held = false
      return
    }
    queue.delete(next.value)
    // `held` stays true: ownership moves to `next` without the lock ever being free.
    Deferred.unsafeDone(next.value, Exit.void)
  })

  /** Takes the lock, waiting (interruptibly iff `restore` restores interruptibility) when it is held. */
  const acquire = (restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) =>
    Effect.suspend(() => {
      if (!held) {
        held = true
        return Effect.void
      }
      const turn = Deferred.unsafeMake<void>(FiberId.none)
      queue.add(turn)
      return restore(Deferred.await(turn)).pipe(
        // Still queued: just leave the queue. Already removed: the permit was handed to us, pass it on.
        Effect.onInterrupt(() => (queue.delete(turn) ? Effect.void : release))
      )
    })

  const withLock = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) => Effect.zipRight(acquire(restore), Effect.ensuring(restore(self), release)))

  return {
    withLock,
    locked: Effect.sync(() => held),
    waiting: Effect.sync(() => queue.size)
  }
}

/** Builds an unlocked lock. */
export const make: Effect.Effect<FifoLock> = Effect.sync(unsafeMake)
