import { spawn } from "node:child_process"
import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { layer } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Redacted } from "effect"
import { describe, expect } from "vitest"
import { PostgresDatabase } from "../../src/storage/postgres-database.js"
import { PostgresMigrations } from "../../src/storage/postgres-migrations.js"
import { PostgresServer } from "../../src/testing/postgres-server.js"

const child = path.join(import.meta.dirname, "migrate.child.ts")

/** Runs migrate.child.ts on `url`: its exit status and output. */
const startProcess = (url: string) =>
  Effect.async<{ readonly code: number | null; readonly output: string }>((resume) => {
    const process_ = spawn(process.execPath, ["--import", "tsx", child, url], { stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    process_.stdout.on("data", (chunk) => {
      output += chunk
    })
    process_.stderr.on("data", (chunk) => {
      output += chunk
    })
    process_.on("close", (code) => resume(Effect.succeed({ code, output })))
    return Effect.sync(() => process_.kill("SIGKILL"))
  })

/** What the migrations left: the recorded migrations and the tables of the public schema. */
const schemaOf = (url: string) =>
  Effect.gen(function* () {
    const sql = Context.get(yield* Layer.build(PostgresDatabase.layer({ url })), SqlClient.SqlClient)
    const applied = yield* sql<{ migration_id: number; name: string }>`
      SELECT migration_id, name FROM effect_sql_migrations ORDER BY migration_id`
    const tables = yield* sql<{ table_name: string }>`
      SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`
    return { applied, tables: tables.map((row) => row.table_name) }
  }).pipe(Effect.scoped)

describe.runIf(PostgresServer.testable())("the first start of several hosts on an empty PostgreSQL", () => {
  layer(PostgresServer.layer(), { timeout: 120_000 })((it) => {
    it.scoped(
      "three processes started at once on an empty database all start; each migration is applied once",
      () =>
        Effect.gen(function* () {
          const server = yield* PostgresServer.Service
          const url = yield* server.database()
          const results = yield* Effect.all(
            Array.from({ length: 3 }, () => startProcess(url)),
            {
              concurrency: "unbounded"
            }
          )
          for (const result of results) {
            expect(result.output).toContain("migrated")
            expect(result.code).toBe(0)
          }
          const { applied } = yield* schemaOf(url)
          expect(applied.map((row) => row.migration_id)).toEqual(PostgresMigrations.all.map((_, index) => index + 1))
        }),
      // Three `tsx` processes starting on a shared 2-core machine.
      300_000
    )

    it.scoped(
      "twelve connected pools migrating at the same moment on an empty database: same schema as one start alone",
      () =>
        Effect.gen(function* () {
          const server = yield* PostgresServer.Service
          const racing = yield* server.database()
          const alone = yield* server.database()
          // Connected first, so that the migrations start together (a pool of one connection too: the
          // lock is held on a connection of its own, not the pool's).
          const pools = yield* Effect.forEach(
            Array.from({ length: 12 }, (_, index) => index),
            (index) =>
              Layer.build(
                PgClient.layer({ url: Redacted.make(racing), maxConnections: index === 0 ? 1 : 2 }).pipe(
                  Layer.provideMerge(NodeContext.layer)
                )
              )
          )
          const go = yield* Deferred.make<void>()
          const runs = yield* Effect.forEach(pools, (context) =>
            Effect.fork(
              Deferred.await(go).pipe(Effect.zipRight(PostgresDatabase.migrate(racing)), Effect.provide(context))
            )
          )
          yield* Deferred.succeed(go, undefined)
          yield* Effect.forEach(runs, Fiber.join)
          const raced = yield* schemaOf(racing)
          const single = yield* schemaOf(alone)
          expect(raced.applied.length).toBe(PostgresMigrations.all.length)
          expect(raced).toEqual(single)
          // No lock is left behind once the starts are done.
          const sql = Context.get(pools[0]!, SqlClient.SqlClient)
          const held = yield* sql<{ count: number }>`
          SELECT count(*)::int AS count FROM pg_locks
          WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`
          expect(held[0]?.count).toBe(0)
        })
    )
  })
})
