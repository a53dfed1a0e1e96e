import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import * as FifoLock from "../../src/sync/fifo-lock.js"

/** Yields until `lock` has exactly `n` queued waiters (every fiber here is real and scheduled). */
const untilWaiting = (lock: FifoLock.FifoLock, n: number) =>
  Effect.gen(function* () {
    while ((yield* lock.waiting) !== n) yield* Effect.yieldNow()
  })

/**
 * The number of continuation frames on a fiber's stack. This reads the fiber runtime's internal
 * `_stack` array (effect 3.22); the guard makes the test fail loudly if that field ever goes away.
 */
const stackDepth = (fiber: Fiber.RuntimeFiber<unknown, unknown>): number => {
  const stack = (fiber as unknown as { _stack?: unknown })._stack
  if (!Array.isArray(stack)) throw new Error("the fiber runtime no longer exposes _stack")
  return stack.length
}

/** Forks `n` fibers contending for one lock; returns the deepest stack any of them had while queued. */
const deepestWaiter = (n: number) =>
  Effect.gen(function* () {
    const lock = yield* FifoLock.make
    const gate = yield* Deferred.make<void>()
    let fibers: Array<Fiber.RuntimeFiber<void>> = []
    let deepest = 0
    const body = Effect.gen(function* () {
      yield* Deferred.await(gate)
      for (const fiber of fibers) deepest = Math.max(deepest, stackDepth(fiber))
      yield* Effect.yieldNow()
    })
    fibers = yield* Effect.forEach(Array.from({ length: n }), () => Effect.fork(lock.withLock(body)))
    yield* untilWaiting(lock, n - 1)
    yield* Deferred.succeed(gate, undefined)
    yield* Fiber.joinAll(fibers)
    return deepest
  })

describe("FifoLock", () => {
  it.effect("lets one fiber at a time run its body", () =>
    Effect.gen(function* () {
      const lock = yield* FifoLock.make
      let inside = 0
      let most = 0
      const body = Effect.gen(function* () {
        inside += 1
        most = Math.max(most, inside)
        yield* Effect.yieldNow()
        yield* Effect.yieldNow()
        yield* Effect.yieldNow()
        inside -= 1
      })
      yield* Effect.forEach(Array.from({ length: 50 }), () => lock.withLock(body), {
        concurrency: "unbounded",
        discard: true
      })
      expect(most).toBe(1)
      expect(inside).toBe(0)
      expect(yield* lock.locked).toBe(false)
    })
  )

  it.effect("grants the lock in the order fibers asked for it, with no barging", () =>
    Effect.gen(function* () {
      const lock = yield* FifoLock.make
      const gate = yield* Deferred.make<void>()
      const order: Array<number> = []
      const holder = yield* Effect.fork(lock.withLock(Deferred.await(gate)))
      while (!(yield* lock.locked)) yield* Effect.yieldNow()
      const waiters: Array<Fiber.RuntimeFiber<void>> = []
      for (let i = 0; i < 20; i++) {
        waiters.push(
          yield* Effect.fork(
            lock.withLock(
              Effect.sync(() => {
                order.push(i)
              })
            )
          )
        )
        yield* untilWaiting(lock, i + 1)
      }
      yield* Deferred.succeed(gate, undefined)
      // A newcomer arriving right at the release must queue behind everyone already waiting.
      const late = yield* Effect.fork(
        lock.withLock(
          Effect.sync(() => {
            order.push(99)
          })
        )
      )
      yield* Fiber.join(holder)
      yield* Fiber.joinAll([...waiters, late])
      expect(order).toEqual([...Array.from({ length: 20 }, (_, i) => i), 99])
      expect(yield* lock.locked).toBe(false)
    })
  )

  it.effect("removes a waiter interrupted while queued, without leaking the lock", () =>
    Effect.gen(function* () {
      const lock = yield* FifoLock.make
      const gate = yield* Deferred.make<void>()
      const order: Array<string> = []
      const holder = yield* Effect.fork(lock.withLock(Deferred.await(gate)))
      while (!(yield* lock.locked)) yield* Effect.yieldNow()
      const a = yield* Effect.fork(
        lock.withLock(
          Effect.sync(() => {
            order.push("a")
          })
        )
      )
      yield* untilWaiting(lock, 1)
      const b = yield* Effect.fork(
        lock.withLock(
          Effect.sync(() => {
            order.push("b")
          })
        )
      )
      yield* untilWaiting(lock, 2)
      const c = yield* Effect.fork(
        lock.withLock(
          Effect.sync(() => {
            order.push("c")
          })
        )
      )
      yield* untilWaiting(lock, 3)
      yield* Fiber.interrupt(b)
      expect(yield* lock.waiting).toBe(2)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.joinAll([holder, a, c])
      expect(Exit.isInterrupted(yield* Fiber.await(b))).toBe(true)
      expect(order).toEqual(["a", "c"])
      expect(yield* lock.locked).toBe(false)
      expect(yield* lock.waiting).toBe(0)
    })
  )

  it.effect("passes the lock on when the waiter it was handed to is interrupted before its body runs", () =>
    Effect.gen(function* () {
      const lock = yield* FifoLock.make
      let ran = false
      let waiter: Fiber.RuntimeFiber<void> | undefined
      yield* lock.withLock(
        Effect.gen(function* () {
          waiter = yield* Effect.fork(
            lock.withLock(
              Effect.sync(() => {
                ran = true
              })
            )
          )
          yield* untilWaiting(lock, 1)
        })
      )
      // The release above handed the lock to `waiter`, which has not run yet: interrupt it now.
      yield* Fiber.interrupt(waiter!)
      expect(ran).toBe(false)
      expect(yield* lock.locked).toBe(false)
      expect(yield* lock.withLock(Effect.succeed("free again"))).toBe("free again")
    })
  )

  it.effect("releases the lock when the holder is interrupted or fails", () =>
    Effect.gen(function* () {
      const lock = yield* FifoLock.make
      const holder = yield* Effect.fork(lock.withLock(Effect.never))
      while (!(yield* lock.locked)) yield* Effect.yieldNow()
      const next = yield* Effect.fork(lock.withLock(Effect.succeed("next")))
      yield* untilWaiting(lock, 1)
      yield* Fiber.interrupt(holder)
      expect(yield* Fiber.join(next)).toBe("next")
      const failed = yield* Effect.exit(lock.withLock(Effect.fail("boom")))
      expect(Exit.isFailure(failed)).toBe(true)
      const died = yield* Effect.exit(lock.withLock(Effect.die("defect")))
      expect(Exit.isFailure(died)).toBe(true)
      expect(yield* lock.locked).toBe(false)
    })
  )

  it.effect("keeps the caller's interruptibility for the body", () =>
    Effect.gen(function* () {
      const lock = yield* FifoLock.make
      const gate = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      let finished = false
      const holder = yield* Effect.fork(
        lock.withLock(
          Effect.uninterruptible(
            Effect.gen(function* () {
              yield* Deferred.succeed(started, undefined)
              yield* Deferred.await(gate)
              finished = true
            })
          )
        )
      )
      yield* Deferred.await(started)
      const interrupting = yield* Effect.fork(Fiber.interrupt(holder))
      yield* Effect.yieldNow()
      expect(finished).toBe(false)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(interrupting)
      // The uninterruptible body ran to its end before the interruption took effect.
      expect(finished).toBe(true)
      expect(yield* lock.locked).toBe(false)
    })
  )

  it.effect("keeps every waiter's stack flat with 1,000 waiters", () =>
    Effect.gen(function* () {
      const few = yield* deepestWaiter(10)
      const many = yield* deepestWaiter(1000)
      expect(few).toBeGreaterThan(0)
      // Waiting longer (more releases passing by) adds no frames to a waiter.
      expect(many).toBe(few)
    })
  )
})
