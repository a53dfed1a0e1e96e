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
  RunnerStorage,
  Runners,
  ShardingConfig,
  SocketRunner,
  SqlRunnerStorage
} from "@effect/cluster"
import { Socket, type SocketServer } from "@effect/platform"
import { NodeSocket, NodeSocketServer } from "@effect/platform-node"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { SqlClient, type SqlError } from "@effect/sql"
import { Effect, Exit, Layer, Option, Scope } from "effect"
import { RunnerOptions } from "./runner-options.js"

/** How long a shard lock lasts unrefreshed: `expiryMs`, and at least two refreshes. */
export const expiryMsOf = (options: RunnerOptions.Options): number =>
  Math.max(options.expiryMs ?? RunnerOptions.defaultExpiryMs, 2 * (options.refreshMs ?? RunnerOptions.defaultRefreshMs))

/** The cluster's settings for `options`. */
export const config = (options: RunnerOptions.Options): Partial<ShardingConfig.ShardingConfig["Type"]> => {
  const refreshMs = options.refreshMs ?? RunnerOptions.defaultRefreshMs
  const expiryMs = expiryMsOf(options)
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
    // The shard acquisition loop also runs at this interval (besides the storage inbox poll, a no-op
    // here: messages are volatile). A runner that lost its shards' locks while it was frozen releases
    // them and, while they are still assigned to it, takes them back only at the loop's next run: at
    // the 10 s default, a prompt through a resumed runner waited up to 10 s for its session's shard.
    entityMessagePollInterval: `${refreshMs} millis`,
    entityTerminationTimeout: `${options.handoverMs ?? RunnerOptions.defaultHandoverMs} millis`,
    // Messages stay on this host when the session's shard is here: no need to encode them.
    simulateRemoteSerialization: false
  }
}

/** The advisory lock key under which PostgreSQL hosts create the cluster's tables ("cluster" in ASCII). */
const tablesLockKey = "27985274398336370"

/**
 * The runner storage (SqlRunnerStorage), which creates the cluster's tables when it starts. On
 * PostgreSQL two hosts starting together on a fresh database can both run `CREATE TABLE IF NOT EXISTS`
 * for one table, and one of them then fails on the catalog's unique index; so the storage starts under
 * a session-level advisory lock taken on a connection of the pool and released (before the connection
 * goes back) as soon as the tables exist. On SQLite the database file serialises the statements.
 */
export const storage: Layer.Layer<
  RunnerStorage.RunnerStorage,
  SqlError.SqlError,
  SqlClient.SqlClient | ShardingConfig.ShardingConfig
> = Layer.scoped(
  RunnerStorage.RunnerStorage,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    if (!sql.onDialectOrElse({ pg: () => true, orElse: () => false })) return yield* SqlRunnerStorage.make({})
    const lockScope = yield* Scope.make()
    return yield* Effect.gen(function* () {
      const connection = yield* sql.reserve.pipe(Scope.extend(lockScope))
      yield* Effect.acquireRelease(connection.executeRaw(`SELECT pg_advisory_lock(${tablesLockKey})`, []), () =>
        connection.executeRaw(`SELECT pg_advisory_unlock(${tablesLockKey})`, []).pipe(Effect.ignore)
      ).pipe(Scope.extend(lockScope))
      return yield* SqlRunnerStorage.make({})
    }).pipe(Effect.ensuring(Scope.close(lockScope, Exit.void)))
  })
)

/**
 * How a runner reaches another one: a TCP connection to its address, with Nagle's algorithm off (as
 * on the listening side, {@link socketServer}). With it on (the cluster's own socket layers), a small
 * reply written right after another waited for the peer's delayed acknowledgement, about 40 ms: a
 * `wait` through one runner for a session on another ended that much later (bench README,
 * `multi-host.ts`).
 */
const clientProtocol: Layer.Layer<Runners.RpcClientProtocol, never, RpcSerialization.RpcSerialization> = Layer.effect(
  Runners.RpcClientProtocol,
  Effect.map(RpcSerialization.RpcSerialization, (serialization) =>
    Effect.fnUntraced(function* (address: RunnerAddress.RunnerAddress) {
      const socket = yield* NodeSocket.makeNet({
        host: address.host,
        port: address.port,
        noDelay: true,
        openTimeout: 1000,
        timeout: 5500
      })
      return yield* RpcClient.makeProtocolSocket().pipe(
        Effect.provideService(Socket.Socket, socket),
        Effect.provideService(RpcSerialization.RpcSerialization, serialization)
      )
    }, Effect.orDie)
  )
)

/** The runner's listening socket (at `listen`, else its address), Nagle's algorithm off on every connection. */
const socketServer = (
  options: RunnerOptions.Options
): Layer.Layer<SocketServer.SocketServer, SocketServer.SocketServerError> => {
  const { host, port } = options.listen ?? options.address
  return NodeSocketServer.layer({ host, port, noDelay: true })
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
  Layer.provide(SocketRunner.layer, [socketServer(options), clientProtocol]).pipe(
    Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(clientProtocol))),
    Layer.provide(MessageStorage.layerNoop),
    Layer.provide(Layer.orDie(storage)),
    Layer.provide(ShardingConfig.layer(config(options))),
    Layer.provide(RpcSerialization.layerMsgPack)
  )
