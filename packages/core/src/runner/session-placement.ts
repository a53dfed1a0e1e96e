export * as SessionPlacement from "./session-placement.js"

/**
 * Session Placement: which host a coordinator operation on a session runs on.
 *
 * SessionRunner hands over how this host wakes, interrupts and waits for a session it drives itself
 * ({@link Handlers}); {@link Interface.route} answers the handlers to call for any session.
 *
 * - {@link local} (the default: SessionLeases): every host may drive every session (its lease decides
 *   who drives it at a time), so the operations run here as they are.
 * - {@link cluster} (ClusterRunner, ShardLeases): a session is driven only by the runner that holds its
 *   shard. On that runner the operations run as they are; anywhere else they are sent to it as
 *   messages of the Session entity (SessionEntity). A sender whose message found no runner, or whose
 *   runner went away before answering, sends it again (every `retryMs`) to whichever runner holds the
 *   shard by then, until it is answered. An interrupt or a wait also runs here meanwhile, through the
 *   session's lease, and ends with whichever ends first. A wake is sent off the caller's fiber, so it still resolves
 *   at once; it is a message also when the session is placed here, so that every drain runs while
 *   the entity holds a message: a shard handed over to another runner (one joined) then waits for
 *   its drains to stop at their next Safe Step Boundary (up to the cluster's termination timeout).
 */

import type { Envelope } from "@effect/cluster"
import { Sharding } from "@effect/cluster"
import type { SqlClient } from "@effect/sql"
import { Identifier } from "@opencode-ai/schema"
import { Cause, Context, Effect, Layer, type Scope } from "effect"
import { WallClock } from "../clock/wall-clock.js"
import { ConfigErrors } from "../config/config-error.js"
import type { CommitFence } from "../event/commit-fence.js"
import { ClusterRunner } from "./cluster-runner.js"
import { PlacementGuard } from "./placement-guard.js"
import { SessionEntity } from "./session-entity.js"
import { SessionLeases } from "./session-leases.js"
import { ShardLeases } from "./shard-leases.js"

/** A host's coordinator operations on one session. Wake resolves at once; the others once done. */
export interface Handlers {
  readonly wake: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  /** Resolves once no drain of the session runs on this host (its own drains only). */
  readonly drained: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  readonly interrupt: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  readonly wait: (sessionID: Identifier.SessionID) => Effect.Effect<void>
}

export interface Interface {
  /**
   * Serves `here` for the sessions placed on this host, for the scope's lifetime, and returns the
   * handlers to call for any session (each reaching the host the session is placed on).
   */
  readonly route: (here: Handlers) => Effect.Effect<Handlers, never, Scope.Scope>
}

/** `yield* SessionPlacement.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionPlacement")<Service, Interface>() {}

/** Every session may run on this host: the operations run here. */
export const local: Layer.Layer<Service> = Layer.succeed(Service, Service.of({ route: Effect.succeed }))

/** How long a sender waits before sending a message again that found no runner or lost its runner. */
export const retryMs = 100

const sessionOf = (envelope: Envelope.Request<any>): Identifier.SessionID =>
  Identifier.SessionID.make(envelope.address.entityId)

/** Sessions are placed by the cluster's shards: the operations run on the shard's runner. */
export const cluster: Layer.Layer<Service, never, Sharding.Sharding> = Layer.effect(
  Service,
  Effect.map(Sharding.Sharding, (sharding) =>
    Service.of({
      route: Effect.fn("SessionPlacement.route")(function* (here: Handlers) {
        yield* sharding.registerEntity(
          SessionEntity.Session,
          Effect.succeed(
            SessionEntity.Session.of({
              // Answered once the drain ends: while it runs, the entity has a message in hand, so a
              // shard handed over waits (up to the termination timeout) for the drain to stop at its
              // next Safe Step Boundary rather than cutting a Step off.
              Wake: (envelope) => Effect.zipRight(here.wake(sessionOf(envelope)), here.drained(sessionOf(envelope))),
              Interrupt: (envelope) => here.interrupt(sessionOf(envelope)),
              Wait: (envelope) => here.wait(sessionOf(envelope))
            })
          ),
          // A Wait may block for as long as a session runs: it must not hold back a Wake or an Interrupt.
          { concurrency: "unbounded" }
        )
        const client = yield* sharding.makeClient(SessionEntity.Session)
        const scope = yield* Effect.scope

        /** Runs `attempt` again (every `retryMs`) until it succeeds: a message that found no runner, or lost it. */
        const retrying = (attempt: Effect.Effect<void, unknown>): Effect.Effect<void> =>
          Effect.catchAllCause(attempt, (cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.failCause(cause as Cause.Cause<never>)
              : Effect.logDebug("a session message found no runner; sending it again", cause).pipe(
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
         */
        const reach = (
          sessionID: Identifier.SessionID,
          onHere: Effect.Effect<void>,
          remote: () => Effect.Effect<unknown, unknown>
        ): Effect.Effect<void> =>
          Effect.suspend(() =>
            ShardLeases.placedHere(sharding, sessionID)
              ? onHere
              : Effect.race(retrying(Effect.suspend(() => Effect.asVoid(remote()))), onHere)
          )

        return {
          // Every drain starts from a Wake message, also on this runner: see the handler above.
          wake: (sessionID) =>
            Effect.asVoid(
              Effect.forkIn(retrying(Effect.asVoid(client(sessionID).Wake(undefined, { discard: true }))), scope)
            ),
          drained: here.drained,
          interrupt: (sessionID) =>
            reach(sessionID, here.interrupt(sessionID), () => client(sessionID).Interrupt(undefined)),
          wait: (sessionID) => reach(sessionID, here.wait(sessionID), () => client(sessionID).Wait(undefined))
        } satisfies Handlers
      })
    })
  )
)

/**
 * The placement a host runs with, and the leases and commit fence that come with it: first-come
 * leases ({@link local}) when `runner` is undefined, else this host as a cluster runner
 * ({@link cluster}). Fails with a ConfigError when `runner` is a reason (a malformed
 * `OPENCODE_RUNNER_*` variable), when the runner cannot listen at its address, or when live hosts of
 * the other placement share the database (PlacementGuard).
 */
export const layer = (selected: {
  readonly leases: SessionLeases.Options
  readonly runner: ClusterRunner.Options | string | undefined
}): Layer.Layer<
  Service | SessionLeases.Service | CommitFence.Service,
  ConfigErrors.ConfigError,
  SqlClient.SqlClient
> => {
  const { runner } = selected
  if (typeof runner === "string") return Layer.fail(ConfigErrors.at(environment, runner))
  if (runner === undefined) {
    return Layer.merge(SessionLeases.layer(selected.leases), local).pipe(
      Layer.provide(Layer.effectDiscard(PlacementGuard.noLiveRunners))
    )
  }
  const address = ClusterRunner.addressText(runner.listen ?? runner.address)
  const sharding = ClusterRunner.layer(runner).pipe(
    Layer.mapError((error) =>
      ConfigErrors.at(environment, `cannot listen on the runner address ${address}: ${error.message}`)
    )
  )
  return Layer.merge(ShardLeases.layer(runner), cluster).pipe(
    Layer.provide(sharding),
    Layer.provide(Layer.effectDiscard(PlacementGuard.noLiveLeaseHosts))
  )
}

/** Where a runner's settings come from. */
const environment = { file: "environment", line: 0, column: 0 }
