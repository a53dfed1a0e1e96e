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
import { RunnerOptions } from "./runner-options.js"

/** The cluster's settings for `options`. */
export const config = (options: RunnerOptions.Options): Partial<ShardingConfig.ShardingConfig["Type"]> => {
  const refreshMs = options.refreshMs ?? RunnerOptions.defaultRefreshMs
  const expiryMs = Math.max(options.expiryMs ?? RunnerOptions.defaultExpiryMs, 2 * refreshMs)
  const healthCheckMs = options.healthCheckMs ?? RunnerOptions.defaultHealthCheckMs
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
    entityTerminationTimeout: `${options.handoverMs ?? RunnerOptions.defaultHandoverMs} millis`,
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
  options: RunnerOptions.Options
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
