export * as ShardLeases from "./shard-leases.js"

/**
 * Session Leases when this process is a runner of an `@effect/cluster` cluster (see ClusterRunner):
 * the same {@link SessionLeases.Interface}, with the cluster deciding where a session's drains start.
 *
 * A drain starts only on the runner that holds the lock of the session's shard (`cluster_locks`, kept
 * by the cluster), and stops at its next Safe Step Boundary once that shard has gone elsewhere. The
 * `session_lease` row says which runner drives the session now, as with first-come leases: a runner
 * claims it when its drain starts and releases it when the drain ends, so a shard can move at once
 * (its handover never waits for a drain) while the runner that had it finishes its Step. The shard's
 * new runner finds the session held by a live runner and leaves it; that runner sends the session a
 * Wake once it has let it go (SessionRunner), and the new runner's drain claims it then.
 *
 * A runner is live while its row in `cluster_runners` has a heartbeat younger than the shard lock
 * expiry (the cluster writes it at every lock refresh, with or without shards; a stopped runner's row
 * goes stale, and a frozen one's too). A claim that finds the lease held by a runner that is not live
 * takes it over (`from`): what that runner left open is settled first.
 *
 * Fencing: the {@link CommitFence} this layer provides is the lease's (SessionLeases.rows): a commit a
 * drain makes to its own session passes only while the lease row names this runner, read and
 * row-locked in the commit's transaction. A runner frozen until another one took the lease over
 * records nothing more for the session when it wakes: the commit dies with `EventLog/CommitFenced`.
 *
 * The host id is the runner's advertised address (`host:port`), as the cluster writes it.
 */

import { EntityId, ShardId, Sharding, ShardingConfig } from "@effect/cluster"
import { SqlClient, SqlSchema } from "@effect/sql"
import { Identifier } from "@opencode-ai/schema"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { CommitFence } from "../event/commit-fence.js"
import { Traced } from "../observability/traced.js"
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

/** A lease, with whether its holder is a live runner. */
const HeldRow = Schema.Struct({
  session_id: Identifier.SessionID,
  host_id: Schema.String,
  live: Schema.Number
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

      const expirySeconds = sql.literal(String(Math.ceil((options.expiryMs ?? RunnerOptions.defaultExpiryMs) / 1_000)))
      /**
       * The instant before which a runner's heartbeat is too old for it to be live: the cluster's own
       * test for a runner's row, on the database's clock, in whole seconds as the cluster counts them.
       */
      const liveSince = sql.onDialectOrElse({
        pg: () => sql`NOW() - INTERVAL '${expirySeconds} seconds'`,
        orElse: () => sql`datetime(CURRENT_TIMESTAMP, '-${expirySeconds} seconds')`
      })
      /** Whether the lease's holder `l.host_id` is a live runner. */
      const holderLive = sql`EXISTS (
        SELECT 1 FROM cluster_runners r WHERE r.address = l.host_id AND r.last_heartbeat > ${liveSince})`
      /** The columns of a {@link HeldRow} (`live` as 1 or 0 on both dialects). */
      const heldColumns = sql`l.session_id, l.host_id, CASE WHEN ${holderLive} THEN 1 ELSE 0 END AS live`

      // The lease and runner tables are read here as SessionLeases and the cluster write them; an SQL
      // error on them is a defect (orDie).
      const heldRow = SqlSchema.findOne({
        Request: Identifier.SessionID,
        Result: HeldRow,
        execute: (sessionID) => sql`
          SELECT ${heldColumns} FROM session_lease l WHERE l.session_id = ${sessionID}`
      })
      const lease = (sessionID: Identifier.SessionID) =>
        heldRow(sessionID).pipe(Effect.orDie, Effect.map(Option.getOrUndefined))
      /** The runner whose lock names the session's shard, for a `Held` answer. */
      const lockHolder = SqlSchema.findOne({
        Request: Schema.String,
        Result: Schema.Struct({ address: Schema.String }),
        execute: (id) => sql`SELECT address FROM cluster_locks WHERE shard_id = ${id}`
      })

      const { insert, takeOver, requestInterrupt, interruptRequests, release, fence } = SessionLeases.rows(sql, host)
      const interruptRequested = yield* SessionLeases.interruptSignal(sql, host)

      const claim = Traced.fn("ShardLeases.claim")(function* (sessionID: Identifier.SessionID) {
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
          // A live runner still drives it (its shard came here while that runner's Step ran): it sends
          // the session a Wake once it has let it go.
          if (row.live === 1) return { _tag: "Held", host: row.host_id } as const
          // Its holder stopped: take over what it left.
          if ((yield* takeOver({ sessionID, from: row.host_id, now }).pipe(Effect.orDie)).length > 0) {
            return { _tag: "Claimed", from: row.host_id } as const
          }
        }
      })

      const heldElsewhere = Traced.fn("ShardLeases.heldElsewhere")(function* (sessionID: Identifier.SessionID) {
        const row = yield* lease(sessionID)
        return row !== undefined && row.host_id !== host && row.live === 1
      })

      const heldRows = SqlSchema.findAll({
        Request: Schema.Array(Identifier.SessionID),
        Result: HeldRow,
        execute: (ids) => sql`
          SELECT ${heldColumns} FROM session_lease l WHERE l.session_id IN ${sql.in(ids)} AND l.host_id <> ${host}`
      })
      const heldElsewhereAmong = Traced.fn("ShardLeases.heldElsewhereAmong")(function* (
        sessionIDs: ReadonlyArray<Identifier.SessionID>
      ) {
        if (sessionIDs.length === 0) return new Set<Identifier.SessionID>()
        const rows = yield* heldRows(sessionIDs).pipe(Effect.orDie)
        return new Set(rows.filter((row) => row.live === 1).map((row) => row.session_id))
      })

      const holding = Traced.fn("ShardLeases.holding")(function* (sessionID: Identifier.SessionID) {
        const row = yield* lease(sessionID)
        if (row === undefined) return "free" as const
        if (row.host_id === host) return "here" as const
        return row.live === 1 ? ("elsewhere" as const) : ("stopped" as const)
      })

      const stoppedLeases = SqlSchema.findAll({
        Request: Schema.Void,
        Result: Schema.Struct({ session_id: Identifier.SessionID }),
        execute: () => sql`
          SELECT l.session_id FROM session_lease l
          WHERE l.host_id <> ${host} AND NOT ${holderLive} ORDER BY l.time_claimed`
      })
      // Leases of sessions whose shard is here now, held by runners that stopped.
      const orphaned = stoppedLeases(undefined).pipe(
        Effect.map((rows) => rows.map((row) => row.session_id).filter(here)),
        Effect.orDie,
        Traced.withSpan("ShardLeases.orphaned")
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

      return Context.make(
        SessionLeases.Service,
        SessionLeases.Service.of({
          host,
          heartbeatMs,
          claim,
          heldElsewhere,
          heldElsewhereAmong,
          holding,
          requestInterrupt,
          interruptRequests,
          interruptRequested,
          release,
          orphaned,
          gained,
          placedHere: here
        })
      ).pipe(Context.add(CommitFence.Service, fence))
    })
  )
