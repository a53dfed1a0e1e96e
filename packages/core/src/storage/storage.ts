export * as Storage from "./storage.js"

import type { SqlClient } from "@effect/sql"
import { Context, Data, Effect, Either, Layer, Redacted, Schema } from "effect"
import type { ConfigError } from "../config/config-error.js"
import * as ConfigErrors from "../config/config-error.js"
import { Database } from "./database.js"

/**
 * Where a host keeps its sessions: one SQLite file (the embedded default, no server needed) or a
 * PostgreSQL database (shared by several hosts). The password of a PostgreSQL URL stays redacted:
 * it is never logged nor printed ({@link describe} shows the URL without it).
 */
export type Selection = Data.TaggedEnum<{
  Sqlite: { readonly filename: string }
  Postgres: { readonly url: Redacted.Redacted<string> }
}>
export const Selection = Data.taggedEnum<Selection>()

/** The environment variable that selects PostgreSQL: `OPENCODE_DATABASE_URL=postgres://…`. */
export const urlVariable = "OPENCODE_DATABASE_URL"

/**
 * The PostgreSQL database could not be reached or migrated when the host started (refused
 * connection, unknown host, bad credentials, missing database, a timeout). `database` is the URL
 * without its password (see {@link describe}); `reason` is the driver's own words.
 */
export class DatabaseUnavailable extends Schema.TaggedError<DatabaseUnavailable>()("Storage/DatabaseUnavailable", {
  database: Schema.String,
  reason: Schema.String,
  message: Schema.String
}) {}

/** Why `url` is not a PostgreSQL URL we can use, or undefined when it is one. */
export const urlProblem = (url: string): string | undefined => {
  if (!/^postgres(ql)?:\/\//i.test(url)) return "expected a PostgreSQL URL, postgres://user:password@host:port/database"
  try {
    const parsed = new URL(url)
    if (parsed.hostname === "" && !parsed.searchParams.has("host")) return "the URL names no host"
  } catch {
    return "not a valid URL (a password with special characters must be percent-encoded)"
  }
  return undefined
}

/**
 * What a host uses, in this order: `OPENCODE_DATABASE_URL` (when set and not empty), else the
 * `server.database` config key, else the SQLite file `filename`. A URL that is not a PostgreSQL URL
 * is a ConfigError naming where it came from (the variable, or the key; the config loader already
 * checks the key's shape with its position). Pure.
 */
export const select = (input: {
  readonly env: Readonly<Record<string, string | undefined>>
  /** The `server.database` config key, when set. */
  readonly configured?: string | undefined
  readonly filename: string
}): Either.Either<Selection, ConfigError> => {
  const fromEnv = input.env[urlVariable]
  if (fromEnv !== undefined && fromEnv !== "") {
    const problem = urlProblem(fromEnv)
    return problem === undefined
      ? Either.right(Selection.Postgres({ url: Redacted.make(fromEnv) }))
      : Either.left(ConfigErrors.at({ file: urlVariable, line: 0, column: 0 }, problem))
  }
  if (input.configured !== undefined) {
    const problem = urlProblem(input.configured)
    return problem === undefined
      ? Either.right(Selection.Postgres({ url: Redacted.make(input.configured) }))
      : Either.left(ConfigErrors.at({ file: "opencode.json", line: 0, column: 0 }, problem, "server.database"))
  }
  return Either.right(Selection.Sqlite({ filename: input.filename }))
}

/** Whether the environment alone selects PostgreSQL (a host can know it before reading its config). */
export const postgresFromEnv = (env: Readonly<Record<string, string | undefined>>): boolean =>
  (env[urlVariable] ?? "") !== ""

/** A PostgreSQL URL with its password (if any) replaced by `***`; a URL that does not parse is shown as `postgres://***`. */
export const redact = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    for (const key of [...parsed.searchParams.keys()]) {
      if (key.toLowerCase() === "password") parsed.searchParams.set(key, "***")
    }
    return parsed.toString()
  } catch {
    return "postgres://***"
  }
}

/** One line for people: `SQLite <file>` or `PostgreSQL <url without password>`. */
export const describe = (selection: Selection): string =>
  Selection.$match(selection, {
    Sqlite: ({ filename }) => `SQLite ${filename}`,
    Postgres: ({ url }) => `PostgreSQL ${redact(Redacted.value(url))}`
  })

/** The selection a Core was built over; in Core's output (hosts report it, e.g. the start-up summary). */
export class Selected extends Context.Tag("@opencode-ai/core/Storage/Selected")<Selected, Selection>() {}

/**
 * The database of `selection`, opened and migrated: `Database.layer` for SQLite (a failure there is a
 * defect, as before) or `PostgresDatabase.layer` for PostgreSQL, where a server that cannot be
 * reached or a database that cannot be migrated fails with {@link DatabaseUnavailable}. Includes
 * {@link Selected}. Closing the scope closes the connection or the pool. The PostgreSQL driver (`pg`,
 * `@effect/sql-pg`) is imported when a PostgreSQL layer is built, so a host over SQLite never loads it.
 */
export const layer = (selection: Selection): Layer.Layer<SqlClient.SqlClient | Selected, DatabaseUnavailable> => {
  const selected = Layer.succeed(Selected, selection)
  return Selection.$match(selection, {
    Sqlite: ({ filename }) => Layer.merge(Database.layer({ filename }), selected),
    Postgres: ({ url }) =>
      Layer.merge(
        Layer.unwrapEffect(
          Effect.promise(() => import("./postgres-database.js")).pipe(
            Effect.map(({ PostgresDatabase }) => PostgresDatabase.layerFallible({ url }))
          )
        ).pipe(
          Layer.mapError((error) => {
            const database = redact(Redacted.value(url))
            const reason = causeMessage(error)
            return new DatabaseUnavailable({
              database,
              reason,
              message: `cannot use the PostgreSQL database ${database}: ${reason}`
            })
          })
        ),
        selected
      )
  })
}

/** The deepest message of an error chain (the driver's words, e.g. `connect ECONNREFUSED 127.0.0.1:5`). */
const causeMessage = (error: unknown): string => {
  const messages: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 5 && current !== undefined && current !== null; depth++) {
    if (typeof current !== "object") break
    if ("message" in current && typeof current.message === "string" && current.message !== "") {
      messages.push(current.message)
    }
    // An AggregateError (e.g. both 127.0.0.1 and ::1 refused) has no message of its own.
    if ("errors" in current && Array.isArray(current.errors) && current.errors.length > 0) current = current.errors[0]
    else current = "cause" in current ? current.cause : undefined
  }
  return messages.at(-1) ?? String(error)
}

/** {@link layer} with a failure to open PostgreSQL as a defect (tests, tools). */
export const layerOrDie = (selection: Selection) => Layer.orDie(layer(selection))
