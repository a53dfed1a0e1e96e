import { describe, expect, it } from "@effect/vitest"
import { Identifier } from "@opencode-ai/schema"
import { Context, Deferred, Effect, Exit, Fiber, Option, Ref, Scope } from "effect"
import { SessionExecution } from "../../src/runner/session-execution.js"

/** A drain that records each run and blocks on a gate the test opens. */
const gatedDrain = Effect.gen(function* () {
  const runs = yield* Ref.make(0)
  const started = yield* Ref.make<ReadonlyArray<Deferred.Deferred<void>>>([])
  const gates: Array<Deferred.Deferred<void>> = []
  const drain: SessionExecution.Drain = () =>
    Effect.gen(function* () {
      const entered = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      gates.push(gate)
      yield* Ref.update(started, (all) => [...all, entered])
      yield* Ref.update(runs, (n) => n + 1)
      yield* Deferred.succeed(entered, undefined)
      yield* Deferred.await(gate)
    })
  /** Waits until the n-th drain (1-based) has started, then returns its gate. */
  const nth = (n: number) =>
    Effect.gen(function* () {
      while ((yield* Ref.get(started)).length < n) yield* Effect.yieldNow()
      yield* Deferred.await((yield* Ref.get(started))[n - 1]!)
      return gates[n - 1]!
    })
  return { drain, runs, nth }
})

class WakerService extends Context.Tag("test/WakerService")<WakerService, { readonly request: string }>() {}

describe("SessionExecution", () => {
  it.scoped("a drain runs with none of the waking fiber's services in its context", () =>
    Effect.gen(function* () {
      const seen = yield* Deferred.make<{ readonly size: number; readonly waker: boolean }>()
      const coordinator = yield* SessionExecution.make(() =>
        Effect.flatMap(Effect.context<never>(), (context) =>
          Deferred.succeed(seen, {
            size: context.unsafeMap.size,
            waker: Option.isSome(Context.getOption(context as Context.Context<WakerService>, WakerService))
          })
        )
      )
      yield* coordinator
        .wake(Identifier.SessionID.make("ses_a"))
        .pipe(Effect.provideService(WakerService, { request: "POST /prompt" }))
      const observed = yield* Deferred.await(seen)
      expect(observed.waker).toBe(false)
      // At most the span the Execution opens.
      expect(observed.size).toBeLessThanOrEqual(1)
    })
  )

  it.scoped("runs one drain at a time and coalesces wakes during a drain into one follow-up", () =>
    Effect.gen(function* () {
      const { drain, runs, nth } = yield* gatedDrain
      const coordinator = yield* SessionExecution.make(drain)
      yield* coordinator.wake(Identifier.SessionID.make("ses_a"))
      const first = yield* nth(1)
      yield* Effect.forEach(Array.from({ length: 10 }), () => coordinator.wake(Identifier.SessionID.make("ses_a")), {
        concurrency: "unbounded"
      })
      expect(yield* Ref.get(runs)).toBe(1)
      yield* Deferred.succeed(first, undefined)
      const second = yield* nth(2)
      expect(yield* Ref.get(runs)).toBe(2)
      yield* Deferred.succeed(second, undefined)
      yield* coordinator.wait(Identifier.SessionID.make("ses_a"))
      expect(yield* Ref.get(runs)).toBe(2)
      expect(yield* coordinator.active).toEqual([])
    })
  )

  it.scoped("lists running sessions in active, and sessions drain independently", () =>
    Effect.gen(function* () {
      const { drain, nth } = yield* gatedDrain
      const coordinator = yield* SessionExecution.make(drain)
      yield* coordinator.wake(Identifier.SessionID.make("ses_a"))
      const a = yield* nth(1)
      yield* coordinator.wake(Identifier.SessionID.make("ses_b"))
      const b = yield* nth(2)
      expect(yield* coordinator.active).toEqual(["ses_a", "ses_b"])
      yield* Deferred.succeed(a, undefined)
      yield* coordinator.wait(Identifier.SessionID.make("ses_a"))
      expect(yield* coordinator.active).toEqual(["ses_b"])
      yield* Deferred.succeed(b, undefined)
      yield* coordinator.wait(Identifier.SessionID.make("ses_b"))
      expect(yield* coordinator.active).toEqual([])
    })
  )

  it.scoped("wait resolves at once when idle, and only after the drain and its follow-up otherwise", () =>
    Effect.gen(function* () {
      const { drain, nth } = yield* gatedDrain
      const coordinator = yield* SessionExecution.make(drain)
      yield* coordinator.wait(Identifier.SessionID.make("ses_idle"))
      yield* coordinator.wake(Identifier.SessionID.make("ses_a"))
      const first = yield* nth(1)
      yield* coordinator.wake(Identifier.SessionID.make("ses_a"))
      const waiter = yield* Effect.fork(coordinator.wait(Identifier.SessionID.make("ses_a")))
      yield* Deferred.succeed(first, undefined)
      const second = yield* nth(2)
      expect(Option.isNone(yield* Fiber.poll(waiter))).toBe(true)
      yield* Deferred.succeed(second, undefined)
      yield* Fiber.join(waiter)
    })
  )

  it.scoped(
    "interrupt stops the drain, runs its interruption handling first, drops the follow-up, and is idempotent",
    () =>
      Effect.gen(function* () {
        const settled = yield* Ref.make(false)
        const entered = yield* Deferred.make<void>()
        const runs = yield* Ref.make(0)
        const coordinator = yield* SessionExecution.make(() =>
          Ref.update(runs, (n) => n + 1).pipe(
            Effect.zipRight(Deferred.succeed(entered, undefined)),
            Effect.zipRight(Effect.never),
            Effect.onInterrupt(() => Ref.set(settled, true))
          )
        )
        yield* coordinator.interrupt(Identifier.SessionID.make("ses_a"))
        yield* coordinator.wake(Identifier.SessionID.make("ses_a"))
        yield* Deferred.await(entered)
        yield* coordinator.wake(Identifier.SessionID.make("ses_a"))
        yield* coordinator.interrupt(Identifier.SessionID.make("ses_a"))
        expect(yield* Ref.get(settled)).toBe(true)
        expect(yield* coordinator.active).toEqual([])
        yield* coordinator.wait(Identifier.SessionID.make("ses_a"))
        expect(yield* Ref.get(runs)).toBe(1)
        yield* coordinator.interrupt(Identifier.SessionID.make("ses_a"))
      })
  )

  it.scoped("a drain that dies leaves the session idle; the next wake drains again", () =>
    Effect.gen(function* () {
      const runs = yield* Ref.make(0)
      const coordinator = yield* SessionExecution.make(() =>
        Effect.flatMap(
          Ref.updateAndGet(runs, (n) => n + 1),
          (n) => (n === 1 ? Effect.dieMessage("boom") : Effect.void)
        )
      )
      yield* coordinator.wake(Identifier.SessionID.make("ses_a"))
      yield* coordinator.wait(Identifier.SessionID.make("ses_a"))
      yield* coordinator.wake(Identifier.SessionID.make("ses_a"))
      yield* coordinator.wait(Identifier.SessionID.make("ses_a"))
      expect(yield* Ref.get(runs)).toBe(2)
    })
  )

  it.effect("closing the scope interrupts every drain", () =>
    Effect.gen(function* () {
      const interrupted = yield* Ref.make(0)
      const entered = yield* Deferred.make<void>()
      const scope = yield* Scope.make()
      const coordinator = yield* SessionExecution.make(() =>
        Deferred.succeed(entered, undefined).pipe(
          Effect.zipRight(Effect.never),
          Effect.onInterrupt(() => Ref.update(interrupted, (n) => n + 1))
        )
      ).pipe(Scope.extend(scope))
      yield* coordinator.wake(Identifier.SessionID.make("ses_a"))
      yield* Deferred.await(entered)
      yield* Scope.close(scope, Exit.void)
      expect(yield* Ref.get(interrupted)).toBe(1)
    })
  )

  it.scoped("never loses a wake: input admitted before any wake is always consumed by a drain", () =>
    Effect.gen(function* () {
      // Each "admission" bumps pending and then wakes; a drain consumes everything pending at once.
      const pending = yield* Ref.make(0)
      const consumed = yield* Ref.make(0)
      const coordinator = yield* SessionExecution.make(() =>
        Effect.gen(function* () {
          yield* Effect.yieldNow()
          const n = yield* Ref.getAndSet(pending, 0)
          yield* Ref.update(consumed, (c) => c + n)
          yield* Effect.yieldNow()
        })
      )
      yield* Effect.forEach(
        Array.from({ length: 500 }),
        (_, i) =>
          Effect.gen(function* () {
            for (let k = 0; k < i; k++) yield* Effect.yieldNow()
            yield* Ref.update(pending, (n) => n + 1)
            yield* coordinator.wake(Identifier.SessionID.make("ses_a"))
          }),
        { concurrency: "unbounded" }
      )
      yield* coordinator.wait(Identifier.SessionID.make("ses_a"))
      expect(yield* Ref.get(pending)).toBe(0)
      expect(yield* Ref.get(consumed)).toBe(500)
    })
  )
})
