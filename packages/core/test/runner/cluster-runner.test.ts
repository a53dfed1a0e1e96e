import { ShardingConfig } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer } from "effect"
import { describe, expect, it as plain } from "vitest"
import { ClusterRunner } from "../../src/runner/cluster-runner.js"
import { PostgresDatabase } from "../../src/storage/postgres-database.js"
import { PostgresServer } from "../../src/testing/postgres-server.js"

const hosts = 4
const rounds = 6

describe("ClusterRunner.config", () => {
  // The cluster acquires shards again only when its loop runs: a runner whose locks were taken while it
  // was frozen, and whose shards are assigned back to it, would otherwise wait up to the 10 s default.
  plain("runs the shard acquisition loop (and the no-op storage poll) at the lock refresh interval", () => {
    const pollMs = (options: Parameters<typeof ClusterRunner.config>[0]) =>
      Effect.runSync(
        Effect.map(ShardingConfig.ShardingConfig, (config) =>
          Duration.toMillis(Duration.decode(config.entityMessagePollInterval))
        ).pipe(Effect.provide(ShardingConfig.layer(ClusterRunner.config(options))))
      )
    const address = { host: "127.0.0.1", port: 1 }
    expect(pollMs({ address, refreshMs: 500 })).toBe(500)
    expect(pollMs({ address })).toBe(1_000)
  })
})

describe.runIf(PostgresServer.testable())("ClusterRunner.storage over a real PostgreSQL server", () => {
  layer(PostgresServer.layer(), { timeout: 120_000 })((it) => {
    it.scoped("hosts starting together on a fresh database all create the cluster's tables, once", () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.Service
        const config = ShardingConfig.layer(
          ClusterRunner.config({ address: { host: "127.0.0.1", port: 1 }, refreshMs: 500, expiryMs: 3_000 })
        )
        for (let round = 0; round < rounds; round++) {
          const url = yield* server.database()
          // Each host has its own pool, as separate processes would; all start their storage at once.
          const started = yield* Effect.forEach(
            Array.from({ length: hosts }, () => url),
            (url) =>
              Layer.build(
                ClusterRunner.storage.pipe(Layer.provide(config), Layer.provideMerge(PostgresDatabase.layer({ url })))
              ).pipe(Effect.either),
            { concurrency: "unbounded" }
          )
          expect(started.filter((result) => result._tag === "Left")).toEqual([])
          const sql = Context.get(yield* Layer.build(PostgresDatabase.layer({ url })), SqlClient.SqlClient)
          const tables = yield* sql<{ readonly tablename: string }>`
            SELECT tablename FROM pg_tables WHERE tablename LIKE 'cluster_%' ORDER BY tablename`
          expect(tables.map((row) => row.tablename)).toEqual(["cluster_locks", "cluster_runners"])
        }
      })
    )
  })
})
