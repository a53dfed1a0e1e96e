export * as SessionEntity from "./session-entity.js"

/**
 * The Session as an `@effect/cluster` entity: its id is the session's id, so the cluster places each
 * session on the runner that owns its shard, and the coordinator operations a client may address to
 * any host travel to that runner as the entity's messages (see SessionPlacement).
 *
 * Every message is volatile (not persisted): a lost one loses nothing durable. `Wake` only starts a
 * drain of input that is already admitted, and the runner that takes a shard over wakes its sessions
 * from durable state (SessionRunner). `Interrupt` and `Wait` are answered once done; a sender whose
 * runner went away sends again to the shard's next owner. All three are idempotent. No message lasts
 * as long as a drain, so a shard's handover waits only for an Interrupt that is settling its Step,
 * never for a drain: the runner that had the shard finishes the running Step under the session's
 * lease (see ShardLeases).
 */

import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Schema } from "effect"

/** The entity type's name, as the cluster's storage and wire protocol know it. */
export const type = "Session"

/** Starts (or coalesces into) the session's drain on its runner; answered at once. */
export const Wake = Rpc.make("Wake")

/** Interrupts the session's running Step on its runner; answered once the Step has settled. */
export const Interrupt = Rpc.make("Interrupt")

/**
 * Answered once the session is idle on its runner (nothing runs and nothing admitted waits). Fails
 * when the session's shard leaves that runner first, so that the sender asks the next one.
 */
export const Wait = Rpc.make("Wait", { error: Schema.suspend(() => Moved) })

/** A Wait's runner let the session's shard go before the session was idle: ask its next runner. */
export class Moved extends Schema.TaggedError<Moved>()("SessionEntity/Moved", {}) {}

export const Session = Entity.make(type, [Wake, Interrupt, Wait])
