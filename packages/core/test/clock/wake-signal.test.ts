import { Effect, Fiber, Option } from "effect"
import { describe, expect, it } from "vitest"
import { WakeSignal } from "../../src/clock/wake-signal.js"

const run = <A>(effect: Effect.Effect<A>) => Effect.runPromise(effect)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** How long `effect` took, in ms. */
const timed = (effect: Effect.Effect<void>) =>
  Effect.gen(function* () {
    const began = performance.now()
    yield* effect
    return performance.now() - began
  })

describe("WakeSignal", () => {
  it("sleeps for the time asked when nothing notifies it", async () => {
    const signal = WakeSignal.make()
    expect(await run(timed(signal.sleep(60)))).toBeGreaterThanOrEqual(55)
    expect(await run(timed(WakeSignal.never.sleep(30)))).toBeGreaterThanOrEqual(25)
  })

  it("a notification wakes every current sleeper at once", async () => {
    const signal = WakeSignal.make()
    const [a, b] = [Effect.runFork(signal.sleep(60_000)), Effect.runFork(signal.sleep(60_000))]
    await sleep(20)
    expect(Option.isNone(await run(Fiber.poll(a)))).toBe(true)
    signal.notify()
    await run(Effect.all([Fiber.join(a), Fiber.join(b)]))
  })

  it("keeps one notification that came while nobody slept, for the next sleep only", async () => {
    const signal = WakeSignal.make()
    signal.notify()
    signal.notify()
    expect(await run(timed(signal.sleep(60_000)))).toBeLessThan(1_000)
    // Kept once: the sleep after it waits its time.
    expect(await run(timed(signal.sleep(50)))).toBeGreaterThanOrEqual(45)
  })

  it("with coalesceMs, wakes that long after the first of a burst of notifications, which count as one", async () => {
    const signal = WakeSignal.make({ coalesceMs: 40 })
    const sleeper = Effect.runFork(timed(signal.sleep(60_000)))
    await sleep(10)
    for (let i = 0; i < 5; i++) signal.notify()
    const slept = await run(Fiber.join(sleeper))
    expect(slept).toBeGreaterThanOrEqual(45)
    expect(slept).toBeLessThan(10_000)
    // The burst was delivered to that sleeper: nothing is kept for the next.
    expect(await run(timed(signal.sleep(50)))).toBeGreaterThanOrEqual(45)
  })

  it("an interrupted sleep leaves no timer behind and takes no notification", async () => {
    const signal = WakeSignal.make()
    const sleeper = Effect.runFork(signal.sleep(60_000))
    await sleep(5)
    await run(Fiber.interrupt(sleeper))
    // With no sleeper left, the notification is kept for the next sleep.
    signal.notify()
    expect(await run(timed(signal.sleep(60_000)))).toBeLessThan(1_000)
  })

  it("a kept notification taken by a sleep interrupted before delivering it is kept again", async () => {
    const slow = WakeSignal.make({ coalesceMs: 50 })
    slow.notify()
    // The coalescing ends with nobody asleep: the notification is kept.
    await sleep(70)
    const taken = Effect.runFork(slow.sleep(60_000))
    await sleep(5)
    await run(Fiber.interrupt(taken))
    expect(await run(timed(slow.sleep(60_000)))).toBeLessThan(1_000)
  })

  it("forks no fiber to sleep", async () => {
    const signal = WakeSignal.make()
    const children = await run(
      Effect.gen(function* () {
        const sleeper = yield* Effect.fork(signal.sleep(60_000))
        yield* Effect.sleep("10 millis")
        const forked = (yield* sleeper.children).length
        signal.notify()
        yield* Fiber.join(sleeper)
        return forked
      })
    )
    expect(children).toBe(0)
  })
})
