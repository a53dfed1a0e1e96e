import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { ConnectionPermit } from "../../src/storage/connection-permit.js"

/**
 * The permit of a SQLite connection: taken in the same step when free (a synchronous run completes),
 * one holder at a time, and a waiter interrupted while waiting takes nothing and blocks no one.
 */
describe("ConnectionPermit", () => {
  it("a free permit is taken and given back in the same step of the fiber", () => {
    const permit = ConnectionPermit.make()
    // runSync fails on any asynchronous step: Effect's Semaphore would fail here.
    expect(Effect.runSync(permit.withPermit(Effect.succeed(1)))).toBe(1)
    expect(Effect.runSync(Effect.zipRight(permit.take, permit.release))).toBeUndefined()
    // A failure releases it too.
    expect(Exit.isFailure(Effect.runSyncExit(permit.withPermit(Effect.fail("boom"))))).toBe(true)
    expect(Effect.runSync(permit.withPermit(Effect.succeed(2)))).toBe(2)
  })

  it("tells whether it is free: not while held, again once released, however the holder ended", () => {
    const permit = ConnectionPermit.make()
    expect(permit.isFree()).toBe(true)
    expect(Effect.runSync(permit.withPermit(Effect.sync(() => permit.isFree())))).toBe(false)
    expect(permit.isFree()).toBe(true)
    Effect.runSync(permit.take)
    expect(permit.isFree()).toBe(false)
    Effect.runSync(permit.release)
    Effect.runSyncExit(permit.withPermit(Effect.fail("boom")))
    expect(permit.isFree()).toBe(true)
  })

  it.effect("one holder at a time, however many fibers want it", () =>
    Effect.gen(function* () {
      const permit = ConnectionPermit.make()
      let holders = 0
      let most = 0
      let done = 0
      const work = permit.withPermit(
        Effect.gen(function* () {
          holders++
          most = Math.max(most, holders)
          yield* Effect.yieldNow()
          yield* Effect.yieldNow()
          holders--
          done++
        })
      )
      yield* Effect.all(
        Array.from({ length: 50 }, () => work),
        { concurrency: "unbounded" }
      )
      expect(done).toBe(50)
      expect(most).toBe(1)
      expect(Effect.runSync(permit.withPermit(Effect.succeed("free")))).toBe("free")
    })
  )

  it.effect("a waiter interrupted while waiting takes nothing, and the next waiter gets the permit", () =>
    Effect.gen(function* () {
      const permit = ConnectionPermit.make()
      const holding = yield* Deferred.make<void>()
      const letGo = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(
        permit.withPermit(Effect.zipRight(Deferred.succeed(holding, undefined), Deferred.await(letGo)))
      )
      yield* Deferred.await(holding)
      const first = yield* Effect.fork(permit.withPermit(Effect.succeed("first")))
      const second = yield* Effect.fork(permit.withPermit(Effect.succeed("second")))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(first)
      yield* Deferred.succeed(letGo, undefined)
      yield* Fiber.join(holder)
      expect(yield* Fiber.join(second)).toBe("second")
      expect(Exit.isInterrupted(yield* Fiber.await(first))).toBe(true)
      expect(Effect.runSync(permit.withPermit(Effect.succeed("free")))).toBe("free")
    })
  )
})
