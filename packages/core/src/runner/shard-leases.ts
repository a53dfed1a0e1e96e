export * as ShardLeases from "./shard-leases.js"

/**
 * Session Leases when this process is a runner of an `@effect/cluster` cluster (see ClusterRunner):
 * the same {@link SessionLeases.Interface}, with the cluster deciding who may drive a session.
 *
 * A host may claim a session only while it holds the lock of the session's shard (`cluster_locks`,
 * kept by the cluster: refreshed by the live owner, taken over by another runner once it expires).
 * The `session_lease` row stays as the record of which runner drives the session: a claim that finds
 * it naming another runner knows that runner lost the shard (it stopped, or was frozen past the
 * lock's expiry), so what it left open must be settled first (`from`). Liveness is the lock itself:
 * a lease's holder runs the session while the lock of that session's shard names it.
 *
 * Fencing: the {@link CommitFence} this layer provides passes a commit a drain makes to its own
 * session only while the shard's lock row names this runner, read (and row-locked, by a write that
 * changes nothing) in the commit's transaction. A runner that lost the shard therefore records
 * nothing more for the session, however late it wakes: the commit dies with `EventLog/CommitFenced`.
 * A takeover's lock write waits for a commit that holds the row, and a commit after it sees the new
 * owner.
 *
 * The host id is the runner's advertised address (`host:port`), as the cluster writes it.
 */

import { EntityId, ShardId, Sharding, ShardingConfig } from "@effect/cluster"
import { SqlClient, SqlSchema } from "@effect/sql"
import { Identifier } from "@opencode-ai/schema"
import { Context, Effect, FiberRef, Layer, Option, Schema } from "effect"
import { CommitFence } from "../event/commit-fence.js"
import { RunnerOptions } from "./runner-options.js"
import { SessionEntity } from "./session-entity.js"
import { SessionLeases } from "./session-leases.js"

/** The shard a session is placed by. */
const shardIdOf = (sharding: Sharding.Sharding["Type"], sessionID: Identifier.SessionID): ShardId.ShardId => {
  const entityId = EntityId.make(sessionID)
  return sharding.getShardId(entityId, SessionEntity.Session.getShardGroup(entityId))
}

/** The shard (as `cluster_locks.shard_id` names it) a session is placed by. */
export const shardOf = (sharding: Sharding.Sharding["Type"], sessionID: Identifier.SessionID): string =>
  shardIdOf(sharding, sessionID).toString()

/** Whether this runner holds the lock of the session's shard now. */
export const placedHere = (sharding: Sharding.Sharding["Type"], sessionID: Identifier.SessionID): boolean =>
  sharding.hasShardId(shardIdOf(sharding, sessionID))

const LeaseRow = Schema.Struct({ session_id: Identifier.SessionID, host_id: Schema.String })
/** A lease with the address of the runner that holds its session's shard lock, when that is the holder. */
const HeldRow = Schema.Struct({
  session_id: Identifier.SessionID,
  host_id: Schema.String,
  shard_id: Schema.NullOr(Schema.String)
})

export const layer = (
  options: RunnerOptions.Options
): Layer.Layer<SessionLeases.Service | CommitFence.Service, never, SqlClient.SqlClient | Sharding.Sharding> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const sharding = yield* Sharding.Sharding
      const host = RunnerOptions.addressText(options.address)
      const heartbeatMs = options.refreshMs ?? RunnerOptions.defaultRefreshMs
      const shard = (sessionID: Identifier.SessionID) => shardOf(sharding, sessionID)
      /**
       * Shards a placement check found not held here since the last look of `gained`. A drain that
       * finds its session's shard gone stops at its Safe Step Boundary; when the shard is back before
       * that look (its lock lapsed and was taken again at once), `gained` must still report it, or
       * nothing would resume the session.
       */
      const missed = new Set<string>()
      const here = (sessionID: Identifier.SessionID) => {
        const shardId = shardIdOf(sharding, sessionID)
        const placed = sharding.hasShardId(shardId)
        if (!placed) missed.add(shardId.toString())
        return placed
      }

      // Leases that name this address now are a previous process's (a runner restarted at the same
      // address after a crash): none is this one's yet. Renamed, they name no runner, so the next
      // claim of each takes it over and settles what that process left open.
      yield* sql`UPDATE session_lease SET host_id = ${`${host} (stopped)`} WHERE host_id = ${host}`.pipe(Effect.orDie)
      // A clean stop gives its sessions up (the cluster releases the shards too).
      yield* Effect.addFinalizer(() => sql`DELETE FROM session_lease WHERE host_id = ${host}`.pipe(Effect.ignoreLogged))

      // The lease and lock tables are read here as the cluster and SessionLeases write them; an SQL
      // error on them is a defect (orDie).
      /** The session's lease, with the shard id when the lock of `shard` names its holder. */
      const heldRow = SqlSchema.findOne({
        Request: Schema.Struct({ sessionID: Identifier.SessionID, shard: Schema.String }),
        Result: HeldRow,
        execute: ({ sessionID, shard }) => sql`
          SELECT l.session_id, l.host_id, k.shard_id
          FROM session_lease l LEFT JOIN cluster_locks k ON k.address = l.host_id AND k.shard_id = ${shard}
          WHERE l.session_id = ${sessionID}`
      })
      const lease = (sessionID: Identifier.SessionID) =>
        heldRow({ sessionID, shard: shard(sessionID) }).pipe(Effect.orDie, Effect.map(Option.getOrUndefined))
      /** The runner whose lock names the session's shard, for a `Held` answer. */
      const lockHolder = SqlSchema.findOne({
        Request: Schema.String,
        Result: Schema.Struct({ address: Schema.String }),
        execute: (id) => sql`SELECT address FROM cluster_locks WHERE shard_id = ${id}`
      })

      const { insert, takeOver, requestInterrupt, interruptRequests, release } = SessionLeases.rows(sql, host)

      const claim = Effect.fn("ShardLeases.claim")(function* (sessionID: Identifier.SessionID) {
        if (!here(sessionID)) {
          const owner = yield* lockHolder(shard(sessionID)).pipe(Effect.orDie)
          return {
            _tag: "Held",
            host: Option.match(owner, { onNone: () => "", onSome: (row) => row.address })
          } as const
        }
        const now = Date.now()
        for (;;) {
          if ((yield* insert({ sessionID, now }).pipe(Effect.orDie)).length > 0) return { _tag: "Claimed" } as const
          const row = yield* lease(sessionID)
          if (row === undefined) continue
          if (row.host_id === host) return { _tag: "Claimed" } as const
          // This runner holds the shard, so the lease's holder lost it: take over what it left.
          if ((yield* takeOver({ sessionID, from: row.host_id, now }).pipe(Effect.orDie)).length > 0) {
            return { _tag: "Claimed", from: row.host_id } as const
          }
        }
      })

      const heldElsewhere = Effect.fn("ShardLeases.heldElsewhere")(function* (sessionID: Identifier.SessionID) {
        const row = yield* lease(sessionID)
        return row !== undefined && row.host_id !== host && row.shard_id !== null
      })

      const heldRows = SqlSchema.findAll({
        Request: Schema.Array(Identifier.SessionID),
        Result: HeldRow,
        execute: (ids) => sql`
          SELECT l.session_id, l.host_id, k.shard_id
          FROM session_lease l JOIN cluster_locks k ON k.address = l.host_id
          WHERE l.session_id IN ${sql.in(ids)} AND l.host_id <> ${host}`
      })
      const heldElsewhereAmong = Effect.fn("ShardLeases.heldElsewhereAmong")(function* (
        sessionIDs: ReadonlyArray<Identifier.SessionID>
      ) {
        if (sessionIDs.length === 0) return new Set<Identifier.SessionID>()
        const rows = yield* heldRows(sessionIDs).pipe(Effect.orDie)
        return new Set(rows.filter((row) => row.shard_id === shard(row.session_id)).map((row) => row.session_id))
      })

      const heldByStopped = Effect.fn("ShardLeases.heldByStopped")(function* (sessionID: Identifier.SessionID) {
        const row = yield* lease(sessionID)
        return row !== undefined && row.host_id !== host && row.shard_id === null
      })

      const othersLeases = SqlSchema.findAll({
        Request: Schema.Void,
        Result: LeaseRow,
        execute: () => sql`SELECT session_id, host_id FROM session_lease WHERE host_id <> ${host} ORDER BY time_claimed`
      })
      // Leases of sessions whose shard is here now: their holder lost the shard.
      const orphaned = othersLeases(undefined).pipe(
        Effect.map((rows) => rows.filter((row) => here(row.session_id)).map((row) => row.session_id)),
        Effect.orDie,
        Effect.withSpan("ShardLeases.orphaned")
      )

      // The shards held at the last look: a shard acquired since (or missed by a placement check since,
      // and held again) places sessions here.
      // The cluster has no event for an acquired shard: each look asks about every shard (in memory).
      const group = SessionEntity.Session.getShardGroup(EntityId.make(""))
      const shards = Array.from({ length: ShardingConfig.defaults.shardsPerGroup }, (_, i) =>
        ShardId.make(group, i + 1)
      )
      let held = new Set<ShardId.ShardId>()
      const gained = Effect.sync(() => {
        const now = new Set(shards.filter((id) => sharding.hasShardId(id)))
        const grew = [...now].some((id) => !held.has(id) || missed.has(id.toString()))
        held = now
        missed.clear()
        return grew
      })

      const fence = CommitFence.Service.of({
        check: (aggregateID) =>
          Effect.flatMap(FiberRef.get(SessionLeases.driving), (session) =>
            session !== aggregateID
              ? Effect.void
              : Effect.flatMap(SqlClient.SqlClient, (tx) =>
                  SqlSchema.findOne({
                    Request: Schema.String,
                    Result: Schema.Struct({ shard_id: Schema.String }),
                    execute: (id) => tx`
                      UPDATE cluster_locks SET address = address
                      WHERE shard_id = ${id} AND address = ${host} RETURNING shard_id`
                  })(shard(session)).pipe(
                    Effect.orDie,
                    Effect.flatMap((row) =>
                      Option.isSome(row) ? Effect.void : Effect.die(new CommitFence.CommitFenced({ aggregateID }))
                    )
                  )
                )
          )
      })

      return Context.make(
        SessionLeases.Service,
        SessionLeases.Service.of({
          host,
          heartbeatMs,
          claim,
          heldElsewhere,
          heldElsewhereAmong,
          heldByStopped,
          requestInterrupt,
          interruptRequests,
          release,
          orphaned,
          gained,
          placedHere: here
        })
      ).pipe(Context.add(CommitFence.Service, fence))
    })
  )
