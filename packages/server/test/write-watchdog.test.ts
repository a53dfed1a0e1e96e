import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { WriteWatchdog } from "../src/sse/write-watchdog.js"

const timeout = 200

/** A watchdog over `sendQueue`, set waiting now: resolves with the ms until it called its stall, if it did within `within`. */
const watch = (sendQueue: (() => number | undefined) | undefined, within: number) =>
  Effect.promise(
    () =>
      new Promise<number | undefined>((resolve) => {
        const began = performance.now()
        const watchdog = WriteWatchdog.make(timeout, () => resolve(performance.now() - began), sendQueue)
        watchdog.waiting()
        setTimeout(() => {
          watchdog.progressed()
          resolve(undefined)
        }, within)
      })
  )

describe("WriteWatchdog", () => {
  it.live("without a send queue, a wait of the timeout is a stall", () =>
    Effect.gen(function* () {
      const after = yield* watch(undefined, 10 * timeout)
      expect(after).toBeGreaterThanOrEqual(timeout - 1)
    })
  )

  it.live("a send queue that shrinks at every look is progress: no stall in ten timeouts", () =>
    Effect.gen(function* () {
      let queued = 1_000_000
      expect(yield* watch(() => (queued -= 1000), 10 * timeout)).toBeUndefined()
    })
  )

  it.live(
    "a send queue that stops shrinking, or cannot be read, is a stall once the timeout has passed since it last shrank",
    () =>
      Effect.gen(function* () {
        let looks = 0
        // Shrinks at the first three looks (the first sets the baseline), then stays.
        const after = yield* watch(() => 1_000_000 - Math.min(++looks, 3) * 1000, 20 * timeout)
        expect(after).toBeDefined()
        // It last shrank at the third look, at least three quarters of a timeout in.
        expect(after!).toBeGreaterThanOrEqual(timeout * 0.75 + timeout - 1)
        expect(yield* watch(() => undefined, 20 * timeout)).toBeGreaterThanOrEqual(timeout - 1)
      })
  )

  it.live("progress before the timeout stops the timing", () =>
    Effect.promise(
      () =>
        new Promise<void>((resolve, reject) => {
          const watchdog = WriteWatchdog.make(
            timeout,
            () => reject(new Error("stalled")),
            () => 5
          )
          watchdog.waiting()
          setTimeout(() => watchdog.progressed(), timeout / 2)
          setTimeout(resolve, 3 * timeout)
        })
    )
  )
})
