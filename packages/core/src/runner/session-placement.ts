export * as SessionPlacement from "./session-placement.js"

/**
 * Session Placement: which host a coordinator operation on a session runs on.
 *
 * SessionRunner hands over how this host wakes, interrupts and waits for a session it drives itself
 * ({@link Handlers}); {@link Interface.route} answers the handlers to call for any session.
 *
 * - {@link local} (the default: SessionLeases): every host may drive every session (its lease decides
 *   who drives it at a time), so the operations run here as they are.
 * - ClusterPlacement (ClusterRunner, ShardLeases): a session is driven only by the runner that holds its
 *   shard. On that runner the operations run as they are; anywhere else they are sent to it as
 *   messages of the Session entity (SessionEntity). A sender whose message found no runner, or whose
 *   runner went away before answering, sends it again (every `retryMs`) to whichever runner holds the
 *   shard by then, until it is answered. An interrupt or a wait also runs here meanwhile, through the
 *   session's lease, and ends with whichever ends first. A wake is sent off the caller's fiber, so it
 *   still resolves at once. A shard handed over to another runner (one joined) goes at once: the
 *   drains its old runner is running stop at their next Safe Step Boundary, under their leases, and
 *   that runner then wakes the sessions on the new one.
 */

import type { SqlClient } from "@effect/sql"
import type { Identifier } from "@opencode-ai/schema"
import { Context, Effect, Layer, type Scope } from "effect"
import { ConfigErrors } from "../config/config-error.js"
import type { CommitFence } from "../event/commit-fence.js"
import { PlacementGuard } from "./placement-guard.js"
import type { RunnerOptions } from "./runner-options.js"
import { SessionLeases } from "./session-leases.js"

/** A host's coordinator operations on one session. Wake resolves at once; the others once done. */
export interface Handlers {
  readonly wake: (sessionID: Identifier.SessionID) => Effect.Effect<void>
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

/**
 * The placement a host runs with, and the leases and commit fence that come with it: first-come
 * leases ({@link local}) when `runner` is undefined, else this host as a cluster runner
 * (ClusterPlacement, loaded only then). Fails with a ConfigError when `runner` is a reason (a
 * malformed `OPENCODE_RUNNER_*` variable), when the runner cannot listen at its address, or when
 * live hosts of the other placement share the database (PlacementGuard).
 */
export const layer = (selected: {
  readonly leases: SessionLeases.Options
  readonly runner: RunnerOptions.Options | string | undefined
}): Layer.Layer<
  Service | SessionLeases.Service | CommitFence.Service,
  ConfigErrors.ConfigError,
  SqlClient.SqlClient
> => {
  const { runner } = selected
  if (typeof runner === "string") {
    return Layer.fail(ConfigErrors.at({ file: "environment", line: 0, column: 0 }, runner))
  }
  if (runner === undefined) {
    return Layer.merge(SessionLeases.layer(selected.leases), local).pipe(
      Layer.provide(Layer.effectDiscard(PlacementGuard.noLiveRunners))
    )
  }
  return Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => import("./cluster-placement.js")),
      ({ ClusterPlacement }) => ClusterPlacement.layer(runner)
    )
  )
}
