import * as path from "node:path"
import type { SqlClient } from "@effect/sql"
import { Effect, type Layer, type Scope } from "effect"
import { Database } from "../../src/storage/database.js"
import { PostgresDatabase } from "../../src/storage/postgres-database.js"
import { PostgresServer } from "../../src/testing/postgres-server.js"
import { tempDir } from "../fixture.js"

/**
 * The two storage dialects. Each table's owner module is tested against both: wrap the file in
 * `layer(PostgresServer.layer())` from `@effect/vitest` (one server per file) and run each case for
 * every entry of {@link dialects} with a fresh database from {@link freshDatabase}.
 */
export const dialects = ["sqlite", "postgres"] as const
export type Dialect = (typeof dialects)[number]

/**
 * A fresh, migrated, empty database of `dialect` as a layer: an SQLite file in a temporary directory,
 * or a new database on the file's shared PostgreSQL server. Both are removed when the scope closes.
 */
export const freshDatabase = (
  dialect: Dialect
): Effect.Effect<
  Layer.Layer<SqlClient.SqlClient>,
  PostgresServer.PostgresServerError,
  Scope.Scope | PostgresServer.Service
> =>
  dialect === "sqlite"
    ? Effect.map(tempDir, (dir) => Database.layer({ filename: path.join(dir, "test.db") }))
    : Effect.flatMap(PostgresServer.Service, (server) =>
        Effect.map(server.database(), (url) => PostgresDatabase.layer({ url }))
      )
