export * as PlacementGuard from "./placement-guard.js"

/**
 * Placement Guard: every host that shares a database places sessions the same way. A host placing
 * by first-come leases (SessionLeases) and a runner placing by shard (ShardLeases) would each take
 * itself for a session's rightful driver, and could both run it; so a host refuses to start beside
 * live hosts of the other kind, with a ConfigError that says what to do.
 *
 * Live means: a lease host whose heartbeat (`runtime_host.time_seen`) is within the default lease
 * expiry, and a runner whose shard locks (`cluster_locks.acquired_at`) were refreshed within the
 * last minute. A host of the other kind that crashed keeps a later one out for that long at most.
 * (Two hosts of different kinds started within the same instant are not caught.)
 */

import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type ConfigError, ConfigErrors } from "../config/config-error.js"
import { Traced } from "../observability/traced.js"
import { SessionLeases } from "./session-leases.js"

/** How recently a runner must have refreshed a shard lock to count as live here, in seconds. */
export const runnerWindowSeconds = 60

const refuse = (reason: string): ConfigError => ConfigErrors.at({ file: "database", line: 0, column: 0 }, reason)

/** For a lease host: fails when a runner placing sessions by shard is live on this database. */
export const noLiveRunners: Effect.Effect<void, ConfigError, SqlClient.SqlClient> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const exists = yield* sql.onDialectOrElse({
    pg: () => sql<{ readonly found: string | null }>`SELECT to_regclass('cluster_locks')::text AS found`,
    orElse: () =>
      sql<{ readonly found: string | null }>`
        SELECT name AS found FROM sqlite_master WHERE type = 'table' AND name = 'cluster_locks'`
  })
  if (exists.length === 0 || exists[0]!.found === null) return
  const live = yield* sql.onDialectOrElse({
    pg: () => sql<{ readonly address: string }>`
      SELECT address FROM cluster_locks
      WHERE acquired_at >= NOW() - (${runnerWindowSeconds} * INTERVAL '1 second') LIMIT 1`,
    orElse: () => sql<{ readonly address: string }>`
      SELECT address FROM cluster_locks
      WHERE acquired_at >= datetime('now', ${`-${runnerWindowSeconds} seconds`}) LIMIT 1`
  })
  if (live.length === 0) return
  return yield* refuse(
    `runners placing sessions by shard use this database (one at ${live[0]!.address}); start this host as a runner too (--runner-address or OPENCODE_RUNNER_ADDRESS), or stop them first`
  )
}).pipe(Effect.catchTag("SqlError", Effect.die), Traced.withSpan("PlacementGuard.noLiveRunners"))

/** For a runner: fails when a host placing sessions by first-come leases is live on this database. */
export const noLiveLeaseHosts: Effect.Effect<void, ConfigError, SqlClient.SqlClient> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const since = Date.now() - SessionLeases.defaultExpiryMs
  const live = yield* sql<{ readonly pid: number; readonly machine: string }>`
    SELECT pid, machine FROM runtime_host WHERE time_seen >= ${since} LIMIT 1`
  if (live.length === 0) return
  return yield* refuse(
    `a host placing sessions by first-come leases uses this database (pid ${live[0]!.pid} on ${live[0]!.machine.split("|")[0]}); every host sharing a database must be a runner: restart it with --runner-address, or stop it first`
  )
}).pipe(Effect.catchTag("SqlError", Effect.die), Traced.withSpan("PlacementGuard.noLiveLeaseHosts"))
