export * as SessionRunner from "./session-runner.js"

import type { Errors, Identifier } from "@opencode-ai/schema"
import { Context, Effect, Layer, Queue } from "effect"
import { WallClock } from "../clock/wall-clock.js"
import { Compaction } from "../compaction/compaction.js"
import { EventLog } from "../event/event-log.js"
import { SessionInput } from "../input/session-input.js"
import { Traced } from "../observability/traced.js"
import { PermissionRequests } from "../permission/permission-requests.js"
import { QuestionRequests } from "../question/question-requests.js"
import { KnownSessions } from "../session/known-sessions.js"
import { Recovery } from "./recovery.js"
import { SessionDrain } from "./session-drain.js"
import { SessionExecution } from "./session-execution.js"
import { SessionLeases } from "./session-leases.js"
import { SessionPlacement } from "./session-placement.js"

/**
 * Session execution as the host sees it: one process-local {@link SessionExecution} per session,
 * whose drains are {@link SessionDrain}s (each running Steps until nothing continues, through the
 * stages it names: SafeStepBoundary, StepSelection, ModelContext, StepRunner).
 *
 * A drain runs only while this host holds the session's lease (see {@link SessionLeases}), so hosts
 * in several processes over one database never run one session twice. `active` lists this host's
 * drains only; `wait` and `interrupt` also reach a session another host runs. With cluster placement
 * (see {@link SessionPlacement}) `wake`, `interrupt` and `wait` go to the runner the session is
 * placed on, as messages.
 *
 * Building the layer first runs {@link Recovery} (what a crash left running is failed explicitly,
 * except in sessions another live host holds) and wakes every session that still has admitted
 * input or whose drain stopped between Steps with more to do (continued without new input, unless
 * the session was interrupted since); then, at every heartbeat, it takes over the sessions of hosts
 * that have stopped since, and (cluster placement) wakes the sessions with unfinished work of a
 * shard it acquired.
 */
export interface Interface {
  /** Advisory: starts (or coalesces into) the session's drain; resolves immediately. */
  readonly wake: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  /**
   * Interrupts the session's running Step (provider stream and tools; partial output is kept).
   * Resolves once the Step has settled and the session's pending permission and question requests
   * are rejected. When another live host runs the session, that host is asked to (told at once over
   * PostgreSQL; over SQLite it looks every 250 ms) and this resolves once it has let the session go.
   * Idempotent; fails only for an unknown session.
   */
  readonly interrupt: (sessionID: Identifier.SessionID) => Effect.Effect<void, Errors.SessionNotFoundError>
  /**
   * Resolves when the session is idle: no drain of it runs here, and no other live host holds it
   * (that is watched every 100 ms, and at its durable commits). A session a stopped host still holds
   * is taken over here first (settled and resumed; with cluster placement, by its runner), so a wait
   * through any host ends with the session settled. Fails only for an unknown session.
   */
  readonly wait: (sessionID: Identifier.SessionID) => Effect.Effect<void, Errors.SessionNotFoundError>
  /**
   * Asks for the session to be compacted (see Compaction): its drain runs the compaction at the next
   * Safe Step Boundary, or at once when the session is idle. Resolves once the request is recorded,
   * not when the compaction ends (`wait` tells that). Idempotent while a requested compaction is
   * waiting or running. Fails only for an unknown session.
   */
  readonly compact: (sessionID: Identifier.SessionID) => Effect.Effect<void, Errors.SessionNotFoundError>
  /** The foreground drain registry of this process: running sessions → `{type: "running"}`. */
  readonly active: Effect.Effect<Readonly<Record<string, { readonly type: "running" }>>>
}

/** How far apart the looks at a lease are right after a durable event of its session (ms). */
const quickLookMs = 5

/** How many such looks follow the event before the pause is `waitPollMs` again. */
const quickLookCount = 10

export class Service extends Context.Tag("@opencode-ai/core/SessionRunner")<Service, Interface>() {}

export interface Options {
  /** Run {@link Recovery} and resume pending sessions when the layer is built; default true. */
  readonly recover?: boolean
}

export const layer = (
  options: Options = {}
): Layer.Layer<
  Service,
  never,
  | SessionInput.Service
  | PermissionRequests.Service
  | QuestionRequests.Service
  | SessionLeases.Service
  | KnownSessions.Service
  | Recovery.Service
  | SessionDrain.Service
  | Compaction.Service
  | EventLog.Service
  | SessionPlacement.Service
> =>
  Layer.scoped(
    Service,
    Effect.gen(function* () {
      const input = yield* SessionInput.Service
      const permissions = yield* PermissionRequests.Service
      const questions = yield* QuestionRequests.Service
      const leases = yield* SessionLeases.Service
      const known = yield* KnownSessions.Service
      const recovery = yield* Recovery.Service
      const drain = yield* SessionDrain.Service
      const compaction = yield* Compaction.Service
      const log = yield* EventLog.Service
      const placement = yield* SessionPlacement.Service

      /**
       * How coordinator operations reach each session's host (set once the placement is routed,
       * below; nothing runs a drain or calls {@link recoverGained} before).
       */
      let routed: SessionPlacement.Handlers | undefined
      // A drain that let its session go to the runner it is placed on now wakes it there.
      const execution = yield* SessionExecution.make((sessionID) =>
        Effect.flatMap(drain.run(sessionID), (next) =>
          next === "elsewhere" && routed !== undefined ? routed.wake(sessionID) : Effect.void
        )
      )
      // How often `wait` and `interrupt` look at the lease of a session another host runs, and how
      // often this host looks for interrupt requests on its own leases.
      const waitPollMs = Math.min(100, leases.heartbeatMs)
      const interruptPollMs = Math.min(250, leases.heartbeatMs)

      /**
       * The pause between two looks at the lease of a session another host runs: `waitPollMs`, or
       * less when a durable event of the session commits meanwhile (on any host: over PostgreSQL it
       * arrives within milliseconds, over SQLite once the relay sees it). A drain's last commit comes
       * a moment before its host lets the lease go, so after such an event the next few looks are
       * {@link quickLookMs} apart. Each pause subscribes for its own length only (a wait can also
       * block on a drain here for hours, when nothing should pile up); an event that commits during
       * a look is not seen, and the pause is then simply `waitPollMs`.
       */
      const pauses = (sessionID: Identifier.SessionID): Effect.Effect<void> => {
        let quickLooks = 0
        return Effect.suspend(() => {
          if (quickLooks > 0) {
            quickLooks--
            return WallClock.sleep(quickLookMs)
          }
          return Effect.scoped(
            Effect.flatMap(log.subscribe, (events) => {
              const nextOfSession: Effect.Effect<void> = Effect.flatMap(Queue.take(events), (envelope) =>
                envelope.durable?.aggregateID === sessionID ? Effect.void : nextOfSession
              )
              return Effect.raceFirst(
                WallClock.sleep(waitPollMs),
                Effect.map(nextOfSession, () => {
                  quickLooks = quickLookCount
                })
              )
            })
          )
        })
      }

      /**
       * Interrupts this host's drain of the session, if any: the running Step's waiting calls reject
       * their own requests as they are interrupted; then the requests a client created for the
       * session are rejected too.
       */
      const interruptHere = (sessionID: Identifier.SessionID) =>
        execution.interrupt(sessionID).pipe(
          Effect.zipRight(permissions.rejectPending(sessionID)),
          Effect.zipRight(questions.rejectPending(sessionID)),
          // After a restart, what the session's history ended with is not continued.
          Effect.zipRight(recovery.interrupted(sessionID))
        )
      // Interrupts that other hosts asked this one for: looked for every `interruptPollMs`, and at
      // once when a host says it recorded one (over PostgreSQL). Untraced, like WallClock.every.
      const lookForInterrupts = Effect.flatMap(
        leases.interruptRequests,
        Effect.forEach(interruptHere, { discard: true })
      ).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("looking for interrupt requests failed", cause)),
        Effect.withTracerEnabled(false)
      )
      yield* Effect.forkScoped(
        Effect.forever(Effect.zipRight(lookForInterrupts, leases.interruptRequested.sleep(interruptPollMs)))
      )

      const recovering = yield* Effect.makeSemaphore(1)
      /**
       * Resumes the sessions that came to be placed here since the last look (SessionLeases.gained:
       * with cluster placement, a shard acquired, or back after a lapse), when they have unfinished
       * work; their drains claim them and settle what the runner that lost them left open. One look at
       * a time: a `wait` that finds input pending and unheld here looks too, and so waits for a look
       * the heartbeat started. Answers the sessions it woke.
       */
      const recoverGained = recovering.withPermits(1)(
        Effect.gen(function* () {
          if (routed === undefined || !(yield* leases.gained)) return []
          const placed = (yield* recovery.candidates).filter(leases.placedHere)
          yield* Effect.forEach(placed, drain.resumeNext, { discard: true })
          yield* Effect.forEach(placed, routed.wake, { discard: true })
          return placed
        })
      )

      /**
       * Whether `sessionID` may be between two runners with a Step due and no input: with cluster
       * placement, a runner whose shard went stops its drain at the Safe Step Boundary, releases the
       * session and wakes it on the shard's new runner, so a wait that looks in between finds it unheld
       * with nothing pending while its conversation still continues (Recovery.continues). Such a
       * wait goes on as it does for pending input. Never with first-come leases, where the host that
       * ran a Step runs the next.
       */
      const handedOver = (sessionID: Identifier.SessionID): Effect.Effect<boolean> =>
        routed === undefined || routed === here ? Effect.succeed(false) : recovery.continues(sessionID)

      /** This host's own handling of a session it drives, or that another host on the same footing drives. */
      const here: SessionPlacement.Handlers = {
        wake: execution.wake,
        interrupt: (sessionID) =>
          Effect.gen(function* () {
            if (!(yield* leases.heldElsewhere(sessionID))) return yield* interruptHere(sessionID)
            // Another live host runs it: ask that host (which also rejects the session's requests), and
            // resolve once it has let the session go.
            const pause = pauses(sessionID)
            yield* leases.requestInterrupt(sessionID)
            while (yield* leases.heldElsewhere(sessionID)) yield* pause
          }),
        wait: (sessionID) =>
          Effect.gen(function* () {
            // Idle here is not idle everywhere: while another live host runs the session, watch its lease.
            // With leases, input can sit unheld for an instant while a host hands it over (it releases,
            // then claims again for input admitted meanwhile), so with input pending one more look is
            // taken (input admitted with `resume: false` stays pending, and the wait ends). Placed
            // elsewhere (cluster placement), a wake can take longer (a shard on the move), so the wait
            // goes on while input is pending: the runner's own answer to this wait ends it.
            let unheldWithInput = false
            const pause = pauses(sessionID)
            while (true) {
              yield* execution.wait(sessionID)
              const placed = leases.placedHere(sessionID)
              const holding = yield* leases.holding(sessionID)
              if (holding === "stopped") {
                // Its holder stopped (killed, or frozen past the expiry): placed here, a drain here takes
                // it over now, settles what it left and runs what is pending, rather than at the next
                // heartbeat. Placed elsewhere, its runner does.
                unheldWithInput = false
                if (placed) {
                  yield* execution.wake(sessionID)
                  continue
                }
              } else if (holding !== "elsewhere") {
                if (!(yield* input.hasPending(sessionID)) && !(yield* handedOver(sessionID))) return
                if (placed) {
                  if (unheldWithInput) return
                  // Placed here a moment ago (its shard just came here), the session is resumed by
                  // the next look at what was gained: take that look now, and follow its wake.
                  unheldWithInput = !(yield* recoverGained).includes(sessionID)
                }
              } else {
                unheldWithInput = false
              }
              yield* pause
            }
            // A session deleted meanwhile runs nowhere any more.
          }).pipe(Effect.catchTag("SessionNotFoundError", () => Effect.void))
      }
      // A restart: settle what a crash left running, before this host can be asked to run anything
      // (with cluster placement, other runners' messages arrive once the entity is registered below).
      const recovered = options.recover === false ? undefined : yield* recovery.run
      if (recovered !== undefined) {
        if (recovered.stranded > 0 || recovered.requests > 0 || recovered.pending.length > 0) {
          yield* Effect.logInfo("recovered after restart", {
            failedSteps: recovered.stranded,
            failedTools: recovered.tools,
            rejectedRequests: recovered.requests,
            resumedSessions: recovered.pending.length
          })
        }
        yield* Effect.forEach(
          recovered.pending,
          (sessionID) => Effect.logInfo("resuming after restart").pipe(Effect.annotateLogs({ sessionID })),
          { discard: true }
        )
      }
      const routes = yield* placement.route(here)
      routed = routes

      if (recovered !== undefined) {
        // Then resume the sessions with admitted input, or whose drain stopped with more to do.
        yield* Effect.forEach(recovered.pending, drain.resumeNext, { discard: true })
        yield* Effect.forEach(recovered.pending, routes.wake, { discard: true })
        // Sessions a host that stopped since still holds: a drain here claims and settles them. With
        // cluster placement, sessions also come here with a shard this runner acquires: recovered then.
        yield* Effect.forkScoped(
          WallClock.every(
            leases.heartbeatMs,
            Effect.gen(function* () {
              yield* recoverGained
              yield* Effect.forEach(yield* leases.orphaned, routes.wake, { discard: true })
            }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("looking for stopped hosts failed", cause)))
          )
        )
      }

      return Service.of({
        wake: routes.wake,
        interrupt: Traced.fn("SessionRunner.interrupt")(function* (sessionID: Identifier.SessionID) {
          yield* known.ensure(sessionID)
          yield* routes.interrupt(sessionID)
        }),
        wait: Traced.fn("SessionRunner.wait")(function* (sessionID: Identifier.SessionID) {
          yield* known.ensure(sessionID)
          yield* routes.wait(sessionID)
        }),
        compact: Traced.fn("SessionRunner.compact")(function* (sessionID: Identifier.SessionID) {
          yield* known.ensure(sessionID)
          yield* compaction.request(sessionID)
          yield* routes.wake(sessionID)
        }),
        active: Effect.map(execution.active, (ids) =>
          Object.fromEntries(ids.map((id) => [id, { type: "running" as const }]))
        )
      })
    })
  )
