export * as ClusterPlacement from "./cluster-placement.js"

/**
 * Cluster placement (see SessionPlacement): this host as a runner (ClusterRunner), its Session
 * Leases on the shards (ShardLeases), and the coordinator operations routed to each session's
 * runner as messages of the Session entity (SessionEntity). Loaded only by a host that runs as a
 * runner, so that the others never load the cluster.
 */

import type { Envelope } from "@effect/cluster"
import { Sharding } from "@effect/cluster"
import type { SqlClient } from "@effect/sql"
import { Identifier } from "@opencode-ai/schema"
import { Cause, Effect, Fiber, Layer } from "effect"
import { WallClock } from "../clock/wall-clock.js"
import { ConfigErrors } from "../config/config-error.js"
import type { CommitFence } from "../event/commit-fence.js"
import { Traced } from "../observability/traced.js"
import { ClusterRunner } from "./cluster-runner.js"
import { PlacementGuard } from "./placement-guard.js"
import { RunnerOptions } from "./runner-options.js"
import { SessionEntity } from "./session-entity.js"
import type { SessionLeases } from "./session-leases.js"
import { type Handlers, Service } from "./session-placement.js"
import { ShardLeases } from "./shard-leases.js"

/** How long a sender waits before sending a message again that found no runner or lost its runner. */
export const retryMs = 100

const sessionOf = (envelope: Envelope.Request<any>): Identifier.SessionID =>
  Identifier.SessionID.make(envelope.address.entityId)

/**
 * Sessions are placed by the cluster's shards: the operations run on the shard's runner.
 *
 * `resendMs` bounds how long a Wake waits for its runner's answer before it is sent again (the shard
 * lock expiry). A live runner answers a Wake at once. One that does not is frozen or gone, and its
 * shard may be elsewhere by then, while the cluster fails a request to it only once the connection
 * gives up (some 17 s later here): a wait or an interrupt through this host, which follows the wakes
 * sent from here, waited that long although the session had run on its new runner. Sending a Wake
 * again is harmless (it coalesces into the drain it finds).
 */
export const routing = (resendMs: number): Layer.Layer<Service, never, Sharding.Sharding> =>
  Layer.effect(
    Service,
    Effect.map(Sharding.Sharding, (sharding) =>
      Service.of({
        route: Traced.fn("SessionPlacement.route")(function* (here: Handlers) {
          /** Succeeds once the session's shard is on this runner (`placed`), or is not (looked at every `retryMs`). */
          const untilPlaced = (sessionID: Identifier.SessionID, placed: boolean): Effect.Effect<void> =>
            Effect.suspend(() =>
              ShardLeases.placedHere(sharding, sessionID) === placed
                ? Effect.void
                : Effect.zipRight(WallClock.sleep(retryMs), untilPlaced(sessionID, placed))
            )
          /** Fails once the session's shard has left this runner. */
          const departed = (sessionID: Identifier.SessionID): Effect.Effect<never, SessionEntity.Moved> =>
            Effect.zipRight(untilPlaced(sessionID, false), Effect.fail(new SessionEntity.Moved()))
          yield* sharding.registerEntity(
            SessionEntity.Session,
            Effect.succeed(
              SessionEntity.Session.of({
                Wake: (envelope) => here.wake(sessionOf(envelope)),
                Interrupt: (envelope) => here.interrupt(sessionOf(envelope)),
                // A wait outlives its runner's hold on the shard only until the shard goes: its sender
                // then asks the next runner, and the shard's handover is not held back by it.
                Wait: (envelope) => Effect.raceFirst(here.wait(sessionOf(envelope)), departed(sessionOf(envelope)))
              })
            ),
            // A Wait may last as long as a session runs: it must not hold back the others.
            { concurrency: "unbounded" }
          )
          const client = yield* sharding.makeClient(SessionEntity.Session)
          const scope = yield* Effect.scope

          /** Runs `attempt` again (every `retryMs`) until it succeeds: a message that found no runner, lost it, or had no answer. */
          const retrying = (attempt: Effect.Effect<void, unknown>): Effect.Effect<void> =>
            Effect.catchAllCause(attempt, (cause) =>
              Cause.isInterruptedOnly(cause)
                ? Effect.failCause(cause as Cause.Cause<never>)
                : Effect.logDebug("a session message found no runner, or no answer; sending it again", cause).pipe(
                    Effect.zipRight(WallClock.sleep(retryMs)),
                    Effect.zipRight(retrying(attempt))
                  )
            )
          /**
           * `onHere` when the session is placed on this runner. Elsewhere, the first to end of the
           * message to its runner and `onHere`, which works from any host through the session's lease
           * (SessionRunner: an interrupt request on the lease, a wait on the lease and the durable
           * log): the message is the quick way, and the lease the way while a shard is between two
           * runners (handed over, the message waits for the new runner, while the old one still
           * drains the session to its next Safe Step Boundary).
           *
           * When `onHere` ends first, the message is interrupted in the background (disconnected): the
           * cluster interrupts a request by sending its runner an interrupt, and a runner that is frozen
           * or gone answers that only when the send gives up, seconds later, so an awaited interruption
           * held the answer back that long after the session was settled here.
           */
          const reach = (
            sessionID: Identifier.SessionID,
            onHere: Effect.Effect<void>,
            remote: () => Effect.Effect<unknown, unknown>
          ): Effect.Effect<void> =>
            Effect.suspend(() =>
              ShardLeases.placedHere(sharding, sessionID)
                ? onHere
                : Effect.race(Effect.disconnect(retrying(Effect.suspend(() => Effect.asVoid(remote())))), onHere)
            )

          // The wakes sent from here and not answered yet, per session: an interrupt or a wait through
          // this host follows them (a client that prompts, then waits, waits for that prompt's run).
          const sending = new Map<Identifier.SessionID, Set<Fiber.RuntimeFiber<void>>>()
          const afterWakes = (sessionID: Identifier.SessionID) => Fiber.awaitAll([...(sending.get(sessionID) ?? [])])

          /**
           * One Wake to the session's runner. Fails when not answered in `resendMs` (the send goes on
           * in the background); ends at once, waking it here, when the shard comes here meanwhile.
           */
          const wakeOnce = (sessionID: Identifier.SessionID) =>
            Effect.raceFirst(
              Effect.suspend(() => client(sessionID).Wake(undefined)).pipe(
                Effect.disconnect,
                Effect.timeout(resendMs),
                Effect.asVoid
              ),
              Effect.zipRight(untilPlaced(sessionID, true), here.wake(sessionID))
            )

          return {
            wake: (sessionID) =>
              Effect.gen(function* () {
                const fiber = yield* Effect.forkIn(retrying(wakeOnce(sessionID)), scope)
                const fibers = sending.get(sessionID) ?? new Set()
                fibers.add(fiber)
                sending.set(sessionID, fibers)
                const done = () => {
                  fibers.delete(fiber)
                  if (fibers.size === 0 && sending.get(sessionID) === fibers) sending.delete(sessionID)
                }
                // (A fiber that ended already is never observed.)
                if (fiber.unsafePoll() === null) fiber.addObserver(done)
                else done()
              }),
            interrupt: (sessionID) =>
              Effect.zipRight(
                afterWakes(sessionID),
                reach(sessionID, here.interrupt(sessionID), () => client(sessionID).Interrupt(undefined))
              ),
            wait: (sessionID) =>
              Effect.zipRight(
                afterWakes(sessionID),
                reach(sessionID, here.wait(sessionID), () => client(sessionID).Wait(undefined))
              )
          } satisfies Handlers
        })
      })
    )
  )

/**
 * This host as a runner at `runner`'s address, with its leases, commit fence and routing. Fails with
 * a ConfigError when it cannot listen there, or when a host placing sessions by first-come leases is
 * live on the database (PlacementGuard).
 */
export const layer = (
  runner: RunnerOptions.Options
): Layer.Layer<
  Service | SessionLeases.Service | CommitFence.Service,
  ConfigErrors.ConfigError,
  SqlClient.SqlClient
> => {
  const address = RunnerOptions.addressText(runner.listen ?? runner.address)
  const sharding = ClusterRunner.layer(runner).pipe(
    Layer.mapError((error) =>
      ConfigErrors.at(
        { file: "environment", line: 0, column: 0 },
        `cannot listen on the runner address ${address}: ${error.message}`
      )
    )
  )
  return Layer.merge(ShardLeases.layer(runner), routing(ClusterRunner.expiryMsOf(runner))).pipe(
    Layer.provide(sharding),
    Layer.provide(Layer.effectDiscard(PlacementGuard.noLiveLeaseHosts))
  )
}
