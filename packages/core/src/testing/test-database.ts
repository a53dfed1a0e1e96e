export * as TestDatabase from "./test-database.js"

/**
 * The storage dialect the test suites run against, switched by ONE variable:
 * `OPENCODE_TEST_DATABASE=postgres` runs them over PostgreSQL, anything else (unset) over SQLite.
 *
 * Under PostgreSQL the run's global setup ({@link globalSetup}, a vitest `globalSetup` of the core
 * and server projects) starts one throwaway `PostgresServer` per project and hands its admin URL to
 * the test processes in `OPENCODE_TEST_POSTGRES_URL`. Where a test names an SQLite file, this module
 * gives it a PostgreSQL database of its own instead, named after the file's absolute path: every
 * test (its files live in a fresh temporary directory) gets a fresh database, and two hosts (or a
 * host and a child process) opened on one file share one database, as they would share the file.
 * The databases a test file created are dropped after it ({@link dropCreated}, a `setupFiles` hook);
 * the server goes at the end of the run.
 *
 * - {@link coreLayer}: `Core.layer` over the test's database (the test passes `databaseFile` as usual);
 * - {@link databaseLayer}: `Database.layer`'s replacement (an `SqlClient` over the test's database);
 * - {@link serverEnv}: the variables a server (in process or spawned) needs: `OPENCODE_DATABASE_URL`.
 *
 * A test about SQLite itself (it opens the file or reads its header) forces SQLite for its process
 * (`OPENCODE_DATABASE_URL: ""`) rather than skipping.
 */

import { execFile, execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as path from "node:path"
import type { SqlClient } from "@effect/sql"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import * as Core from "../core.js"
import { PostgresDatabase } from "../storage/postgres-database.js"
import * as Storage from "../storage/storage.js"
import * as PostgresServer from "./postgres-server.js"

/** The variable that switches the suites: `postgres`, or anything else for SQLite. */
export const switchVariable = "OPENCODE_TEST_DATABASE"
/** Where the global setup leaves the shared server's admin URL (its `postgres` database). */
export const serverVariable = "OPENCODE_TEST_POSTGRES_URL"

export type Dialect = "sqlite" | "postgres"

/** The dialect of this run. */
export const dialect = (): Dialect => (process.env[switchVariable] === "postgres" ? "postgres" : "sqlite")

/** Whether this run is over PostgreSQL. */
export const postgres = (): boolean => dialect() === "postgres"

const adminUrl = (): string => {
  const url = process.env[serverVariable]
  if (url === undefined || url === "") {
    throw new Error(
      `${switchVariable}=postgres but ${serverVariable} is not set: the project's vitest globalSetup must include TestDatabase.globalSetup`
    )
  }
  return url
}

/** The database the global setup migrates once; each test's database is a copy of it. */
export const templateName = "opencode_template"

/** Databases this process created (dropped by {@link dropCreated}). */
const created = new Set<string>()

/** The database name for an SQLite file path: `t_` and a hash of the absolute path. */
export const nameOf = (key: string): string =>
  `t_${createHash("sha256").update(path.resolve(key)).digest("hex").slice(0, 24)}`

const psql = (url: string, statement: string) =>
  execFileSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-qAtc", statement], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"]
  })

/** The URL of the PostgreSQL database standing for `key` (an SQLite file path), created when missing. */
export const urlFor = (key: string): string => {
  const admin = new URL(adminUrl())
  const name = nameOf(key)
  if (!created.has(name)) {
    try {
      // A copy of the migrated template the global setup made: the host's migrations find every one applied.
      psql(admin.toString(), `CREATE DATABASE ${name} TEMPLATE ${templateName}`)
    } catch (error) {
      // Another process (a child, a second host) created it first: that is the one to share.
      if (!String((error as { stderr?: unknown }).stderr ?? error).includes("already exists")) throw error
    }
    created.add(name)
  }
  admin.pathname = `/${name}`
  return admin.toString()
}

/** The storage a test's host uses for the SQLite file `databaseFile` in this run. */
export const selection = (databaseFile: string): Storage.Selection =>
  postgres()
    ? Storage.Selection.Postgres({ url: Redacted.make(urlFor(databaseFile)) })
    : Storage.Selection.Sqlite({ filename: databaseFile })

/** `Core.layer(options)` over this run's dialect (the database for `options.databaseFile`). */
export const coreLayer = (options: Core.Options) =>
  Layer.unwrapEffect(Effect.sync(() => Core.layer({ ...options, database: selection(options.databaseFile) })))

/** An `SqlClient` over this run's dialect for the SQLite file `filename` (migrated; a failure is a defect). */
export const databaseLayer = (options: { readonly filename: string }): Layer.Layer<SqlClient.SqlClient> =>
  Layer.unwrapEffect(Effect.sync(() => Storage.layerOrDie(selection(options.filename))))

/**
 * The variables a server needs to use this run's dialect, `key` standing for its data (e.g. its data
 * home): `{ OPENCODE_DATABASE_URL }` under PostgreSQL, nothing under SQLite.
 */
export const serverEnv = (key: string): Record<string, string> =>
  postgres() ? { [Storage.urlVariable]: urlFor(path.join(key, "opencode.db")) } : {}

/** Drops the databases this process created (with their open connections), in one `psql` run. */
export const dropCreated = (): Promise<void> => {
  if (!postgres() || created.size === 0) return Promise.resolve()
  const statements = [...created].flatMap((name) => ["-c", `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`])
  created.clear()
  return new Promise((resolve) => {
    execFile("psql", [adminUrl(), "-qAt", ...statements], () => resolve())
  })
}

/**
 * The vitest `globalSetup` of a project that runs under both dialects: under PostgreSQL it starts the
 * run's server and sets {@link serverVariable} for the test processes (and what they spawn); the
 * returned teardown stops it. Under SQLite it does nothing.
 */
export const globalSetup = async (): Promise<() => Promise<void>> => {
  if (!postgres()) return async () => {}
  const scope = Effect.runSync(Scope.make())
  const server = await Effect.runPromise(
    PostgresServer.make({ settings: { max_connections: "500" } }).pipe(Scope.extend(scope))
  )
  // Migrated once here, then copied per test (CREATE DATABASE … TEMPLATE): no test pays for the migrations.
  psql(server.urlOf("postgres"), `CREATE DATABASE ${templateName}`)
  await Effect.runPromise(Layer.build(PostgresDatabase.layer({ url: server.urlOf(templateName) })).pipe(Effect.scoped))
  process.env[serverVariable] = server.urlOf("postgres")
  return async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}
