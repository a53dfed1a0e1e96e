export * as SessionEntity from "./session-entity.js"

/**
 * The Session as an `@effect/cluster` entity: its id is the session's id, so the cluster places each
 * session on the runner that owns its shard, and the coordinator operations a client may address to
 * any host travel to that runner as the entity's messages (see SessionPlacement).
 *
 * Every message is volatile (not persisted): a lost one loses nothing durable. `Wake` only starts a
 * drain of input that is already admitted, and the runner that takes a shard over wakes its sessions
 * from durable state (SessionRunner). `Interrupt` and `Wait` are answered once done; a sender whose
 * runner went away sends again to the shard's next owner. All three are idempotent.
 */

import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"

/** The entity type's name, as the cluster's storage and wire protocol know it. */
export const type = "Session"

/** Starts (or coalesces into) the session's drain on its runner; answered once it runs. */
export const Wake = Rpc.make("Wake")

/**
 * Answered once the session's drain on this runner has ended: a runner sends it to itself after each
 * Wake, so that the entity holds a message for as long as the drain runs (a shard handed over waits
 * for it).
 */
export const Hold = Rpc.make("Hold")

/** Interrupts the session's running Step on its runner; answered once the Step has settled. */
export const Interrupt = Rpc.make("Interrupt")

/** Answered once the session is idle on its runner (nothing runs and nothing admitted waits). */
export const Wait = Rpc.make("Wait")

export const Session = Entity.make(type, [Wake, Hold, Interrupt, Wait])
