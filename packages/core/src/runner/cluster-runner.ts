export * as ClusterRunner from "./cluster-runner.js"

/**
 * This process as a runner of an `@effect/cluster` cluster over the runtime's own database: the
 * runners register in `cluster_runners`, and each session's shard is locked by one runner at a time
 * in `cluster_locks` (rows on SQLite and PostgreSQL alike: the lock is a row the commit fence can read
 * in the commit's own transaction, see ShardLeases). Runners talk to one another over TCP (the cluster's
 * socket protocol, msgpack) at their advertised addresses.
 *
 * Shards are spread over the registered runners; a runner that stops answering pings
 * (`healthCheckMs`) loses its shards once its locks have not been refreshed for `expiryMs`, and the
 * runners left take them over. Messages are volatile: nothing is persisted in the cluster's message
 * tables, since every session's state is in the event log.
 */

import type { Sharding } from "@effect/cluster"
import {
  MessageStorage,
  RunnerAddress,
  RunnerHealth,
  Runners,
  ShardingConfig,
  SocketRunner,
  SqlRunnerStorage
} from "@effect/cluster"
import type { SocketServer } from "@effect/platform"
import { NodeClusterSocket } from "@effect/platform-node"
import { RpcSerialization } from "@effect/rpc"
import type { SqlClient } from "@effect/sql"
import { Layer, Option } from "effect"

export interface Address {
  readonly host: string
  readonly port: number
}

export interface Options {
  /** The address other runners reach this one at (advertised in `cluster_runners`). */
  readonly address: Address
  /** The address to listen on, when it differs from the advertised one (e.g. 0.0.0.0 in a container). */
  readonly listen?: Address | undefined
  /** How often this runner refreshes its shard locks; default 1 s. */
  readonly refreshMs?: number | undefined
  /** A lock not refreshed for this long may be taken over (the takeover delay after a crash); default 5 s. */
  readonly expiryMs?: number | undefined
  /** How often runners ping one another; default 1 s. */
  readonly healthCheckMs?: number | undefined
  /**
   * How long a shard handed over to another runner (one joined) waits for this runner's drains of
   * its sessions to stop at their next Safe Step Boundary; then the shard goes, and a Step still
   * running is cut off (its commits refused) and settled by the next runner. Default 60 s.
   */
  readonly handoverMs?: number | undefined
}

export const defaultRefreshMs = 1_000
export const defaultExpiryMs = 5_000
export const defaultHealthCheckMs = 1_000
export const defaultHandoverMs = 60_000

/** `host:port` (an IPv6 host in brackets) as an {@link Address}; undefined when it is not one. */
export const parseAddress = (text: string): Address | undefined => {
  const match = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(text.trim())
  if (match === null) return undefined
  const port = Number(match[3])
  if (port < 1 || port > 65535) return undefined
  return { host: match[1] ?? match[2] ?? "", port }
}

/** An {@link Address} as the cluster writes it in its tables (`host:port`). */
export const addressText = (address: Address): string => `${address.host}:${address.port}`

/**
 * The runner settings from the environment, when `OPENCODE_RUNNER_ADDRESS` (`host:port`) is set:
 * `OPENCODE_RUNNER_LISTEN` (`host:port`), and in ms `OPENCODE_SHARD_LOCK_REFRESH_MS`,
 * `OPENCODE_SHARD_LOCK_EXPIRY_MS`, `OPENCODE_RUNNER_HEALTH_CHECK_MS` and `OPENCODE_SHARD_HANDOVER_MS`. Undefined when the address
 * is unset; a malformed address or number is reported as the reason (a string).
 */
export const fromEnv = (env: Readonly<Record<string, string | undefined>>): Options | string | undefined => {
  const raw = env.OPENCODE_RUNNER_ADDRESS
  if (raw === undefined || raw === "") return undefined
  const address = parseAddress(raw)
  if (address === undefined) return `OPENCODE_RUNNER_ADDRESS=${raw}: expected host:port`
  const listenRaw = env.OPENCODE_RUNNER_LISTEN
  const listen = listenRaw === undefined || listenRaw === "" ? undefined : parseAddress(listenRaw)
  if (listenRaw !== undefined && listenRaw !== "" && listen === undefined) {
    return `OPENCODE_RUNNER_LISTEN=${listenRaw}: expected host:port`
  }
  const millis = (name: string): number | string | undefined => {
    const value = env[name]
    if (value === undefined || value === "") return undefined
    return /^\d+$/.test(value) && Number(value) > 0
      ? Number(value)
      : `${name}=${value}: expected a positive number of ms`
  }
  const refreshMs = millis("OPENCODE_SHARD_LOCK_REFRESH_MS")
  const expiryMs = millis("OPENCODE_SHARD_LOCK_EXPIRY_MS")
  const healthCheckMs = millis("OPENCODE_RUNNER_HEALTH_CHECK_MS")
  const handoverMs = millis("OPENCODE_SHARD_HANDOVER_MS")
  for (const value of [refreshMs, expiryMs, healthCheckMs, handoverMs]) if (typeof value === "string") return value
  return {
    address,
    listen,
    refreshMs: refreshMs as number | undefined,
    expiryMs: expiryMs as number | undefined,
    healthCheckMs: healthCheckMs as number | undefined,
    handoverMs: handoverMs as number | undefined
  }
}

/** The cluster's settings for `options`. */
export const config = (options: Options): Partial<ShardingConfig.ShardingConfig["Type"]> => {
  const refreshMs = options.refreshMs ?? defaultRefreshMs
  const expiryMs = Math.max(options.expiryMs ?? defaultExpiryMs, 2 * refreshMs)
  const healthCheckMs = options.healthCheckMs ?? defaultHealthCheckMs
  const address = RunnerAddress.make(options.address.host, options.address.port)
  return {
    runnerAddress: Option.some(address),
    ...(options.listen === undefined
      ? {}
      : { runnerListenAddress: Option.some(RunnerAddress.make(options.listen.host, options.listen.port)) }),
    // Lock rows, not PostgreSQL advisory locks: a row can be checked (and held still) inside the
    // transaction of a commit, and a frozen runner's row expires where its open connection would
    // keep an advisory lock forever.
    shardLockDisableAdvisory: true,
    shardLockRefreshInterval: `${refreshMs} millis`,
    shardLockExpiration: `${expiryMs} millis`,
    runnerHealthCheckInterval: `${healthCheckMs} millis`,
    refreshAssignmentsInterval: `${refreshMs} millis`,
    entityTerminationTimeout: `${options.handoverMs ?? defaultHandoverMs} millis`,
    // Messages stay on this host when the session's shard is here: no need to encode them.
    simulateRemoteSerialization: false
  }
}

/**
 * The runner over the runtime's SqlClient: registers at `options.address`, listens there (or at
 * `listen`), takes its share of the shards and keeps their locks, until the layer closes (its shards
 * are then released for the others at once). Fails with the socket server's error when it cannot
 * listen (the port is taken, the address is not this machine's).
 */
export const layer = (
  options: Options
): Layer.Layer<Sharding.Sharding | Runners.Runners, SocketServer.SocketServerError, SqlClient.SqlClient> =>
  Layer.provide(SocketRunner.layer, [NodeClusterSocket.layerSocketServer, NodeClusterSocket.layerClientProtocol]).pipe(
    Layer.provide(
      RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(NodeClusterSocket.layerClientProtocol))
    ),
    Layer.provide(MessageStorage.layerNoop),
    Layer.provide(Layer.orDie(SqlRunnerStorage.layer)),
    Layer.provide(ShardingConfig.layer(config(options))),
    Layer.provide(RpcSerialization.layerMsgPack)
  )
