export * as SessionExecution from "./session-execution.js"

import type { Identifier } from "@opencode-ai/schema"
import { Context, Deferred, Effect, ExecutionStrategy, Fiber, Layer, Option, Scope, type Tracer } from "effect"
import { RuntimeMetrics } from "../observability/runtime-metrics.js"
import { Traced } from "../observability/traced.js"
import * as FifoLock from "../sync/fifo-lock.js"

/**
 * Execution: the process-local, per-session coordinator. One Execution of a session is one busy
 * period, from the first wake until the session is idle again; it runs one or more Session Drains
 * (see SessionDrain), one at a time. Drain and Execution settlement are observed here and nowhere
 * else: neither leaves a durable record.
 *
 * ```
 *            wake                      drain ends, no follow-up
 *   idle ──────────────► draining ─────────────────────────────► idle
 *                         │    ▲
 *                    wake │    │ drain ends with a follow-up: drain again (once)
 *                         ▼    │
 *                       draining + follow-up
 * ```
 *
 * At most one drain runs per session. A wake that arrives while a drain runs is coalesced into a
 * single follow-up drain, so an admission racing with the drain's final idle check is never lost and
 * many wakes never queue many drains. Nothing here is durable: a restart clears it, and recovery
 * reasons from durable prompts, history and tool state instead.
 */
export interface Interface {
  /**
   * Starts a drain for the session, or requests one follow-up when a drain is running. Resolves as
   * soon as that is recorded (it does not wait for the drain). Idempotent while draining.
   */
  readonly wake: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  /**
   * Interrupts the session's running drain, if any, and drops its pending follow-up. Resolves after
   * the drain has settled, including its interruption handling (e.g. persisting partial output).
   * Idempotent: an idle session is a no-op.
   */
  readonly interrupt: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  /** Resolves when the session is idle: immediately when nothing runs, else when its drain (and any follow-up) ends. */
  readonly wait: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  /** A snapshot of the sessions whose drain is running, in start order. */
  readonly active: Effect.Effect<ReadonlyArray<string>>
}

export class Service extends Context.Tag("@opencode-ai/core/SessionExecution")<Service, Interface>() {}

/** What one drain does: promote eligible input and run Steps until nothing continues. Never fails. */
export type Drain = (sessionID: Identifier.SessionID) => Effect.Effect<void>

interface Entry {
  readonly fiber: Fiber.RuntimeFiber<void>
  readonly idle: Deferred.Deferred<void>
  followUp: boolean
}

/**
 * Builds a coordinator whose drains run in the enclosing Scope: closing it logs each running session
 * as cut off by the shutdown, then interrupts every drain. A drain that fails with a defect is logged
 * and the session goes idle; the next wake starts afresh.
 */
export const make = (drain: Drain): Effect.Effect<Interface, never, Scope.Scope> =>
  Effect.gen(function* () {
    // The drains run in a scope of their own, closed after the finalizer below has said which
    // sessions the close cuts off (finalizers run in reverse order).
    const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
    const locked = FifoLock.unsafeMake().withLock
    const entries = new Map<string, Entry>()
    yield* Effect.addFinalizer(() =>
      Effect.forEach(
        [...entries.keys()],
        (sessionID) => Effect.logInfo("shutdown interrupts the session").pipe(Effect.annotateLogs({ sessionID })),
        { discard: true }
      )
    )

    /**
     * Decides, under the lock, whether the session drains again, and removes its entry when it does
     * not: deciding and removing in one step means a wake arriving just after finds no entry and
     * starts a fresh drain, instead of setting a follow-up nobody will run.
     */
    const another = (sessionID: Identifier.SessionID, idle: Deferred.Deferred<void>) =>
      locked(
        Effect.sync(() => {
          const entry = entries.get(sessionID)
          if (entry?.idle !== idle) return false
          if (entry.followUp) {
            entry.followUp = false
            return true
          }
          entries.delete(sessionID)
          return false
        })
      )

    const run = (
      sessionID: Identifier.SessionID,
      idle: Deferred.Deferred<void>,
      waker: Option.Option<Tracer.AnySpan>
    ): Effect.Effect<void> => {
      const once = drain(sessionID).pipe(
        Effect.catchAllDefect((defect) =>
          Effect.logError("session drain failed", defect).pipe(Effect.annotateLogs({ sessionID }))
        )
      )
      const loop: Effect.Effect<void> = Effect.flatMap(once, () =>
        Effect.flatMap(another(sessionID, idle), (again) => (again ? loop : Effect.void))
      )
      return loop.pipe(
        // However the fiber ends (completion, interruption, scope close), the session is idle after.
        Effect.ensuring(
          locked(
            Effect.sync(() => {
              if (entries.get(sessionID)?.idle === idle) entries.delete(sessionID)
            })
          ).pipe(Effect.zipRight(Deferred.succeed(idle, undefined)))
        ),
        RuntimeMetrics.holding(RuntimeMetrics.activeSessions),
        // The session's span for this Execution: the root of its own trace (its Steps, provider calls
        // and tool calls are below it), linked to the span that woke it (a prompt request, recovery).
        // Made only where spans reach someone (see Traced.observed), as for the spans below it.
        (effect) =>
          Effect.withFiberRuntime<void>((fiber) =>
            Traced.observed(fiber)
              ? Effect.withSpan(effect, "SessionExecution.run", {
                  root: true,
                  attributes: { sessionID },
                  links: Option.match(waker, {
                    onNone: () => [],
                    onSome: (span) => [{ _tag: "SpanLink", span, attributes: {} }]
                  })
                })
              : effect
          ),
        // Traced even when woken from an untraced poll (see WallClock.every).
        Effect.withTracerEnabled(true),
        // None of the waking fiber's services: everything the drain uses was bound when the runtime
        // was built (its type requires nothing). Woken by a served prompt, the fiber would otherwise
        // carry the request's context (some 75 services, the request itself) for the whole Execution,
        // keeping it alive and copying all of it each time a span or a service is added below.
        Effect.mapInputContext(() => Context.empty())
      )
    }

    const wake = Traced.fn("SessionExecution.wake")(function* (sessionID: Identifier.SessionID) {
      yield* locked(
        Effect.gen(function* () {
          const entry = entries.get(sessionID)
          if (entry !== undefined) {
            entry.followUp = true
            return
          }
          const idle = yield* Deferred.make<void>()
          // The fiber's cleanup takes the lock, so it cannot run before the entry is recorded.
          const waker = yield* Effect.option(Effect.currentSpan)
          const fiber = yield* Effect.forkIn(run(sessionID, idle, waker), scope)
          entries.set(sessionID, { fiber, idle, followUp: false })
        })
      )
    })

    const interrupt = Traced.fn("SessionExecution.interrupt")(function* (sessionID: Identifier.SessionID) {
      const entry = yield* locked(
        Effect.sync(() => {
          const entry = entries.get(sessionID)
          if (entry !== undefined) entry.followUp = false
          return entry
        })
      )
      if (entry !== undefined) yield* Fiber.interrupt(entry.fiber)
    })

    const wait = Traced.fn("SessionExecution.wait")(function* (sessionID: Identifier.SessionID) {
      const entry = yield* locked(Effect.sync(() => entries.get(sessionID)))
      if (entry !== undefined) yield* Deferred.await(entry.idle)
    })

    const active = locked(Effect.sync(() => [...entries.keys()]))

    return { wake, interrupt, wait, active } satisfies Interface
  })

/** The coordinator as a layer over a given drain. */
export const layer = (drain: Drain): Layer.Layer<Service> => Layer.scoped(Service, make(drain))
