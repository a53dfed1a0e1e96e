import * as net from "node:net"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { layer } from "@effect/vitest"
import { Context, Effect, Either, Exit, Layer, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { Storage } from "../../src/storage/storage.js"
import { PostgresServer } from "../../src/testing/postgres-server.js"
import { tempDir } from "../fixture.js"

describe("Storage.select: which database a host uses", () => {
  const file = "/data/opencode.db"
  it("is the SQLite file when neither OPENCODE_DATABASE_URL nor server.database is set (an empty variable is unset)", () => {
    for (const env of [{}, { OPENCODE_DATABASE_URL: "" }]) {
      const selected = Storage.select({ env, filename: file })
      expect(Either.getOrThrow(selected)).toEqual(Storage.Selection.Sqlite({ filename: file }))
    }
  })

  it("is PostgreSQL when the variable or the key names it; the variable wins", () => {
    const key = "postgres://app@db-a:5432/sessions"
    const variable = "postgresql://app:pw@db-b/sessions?sslmode=require"
    const byKey = Either.getOrThrow(Storage.select({ env: {}, configured: key, filename: file }))
    expect(byKey._tag === "Postgres" && Redacted.value(byKey.url)).toBe(key)
    const both = Either.getOrThrow(
      Storage.select({ env: { OPENCODE_DATABASE_URL: variable }, configured: key, filename: file })
    )
    expect(both._tag === "Postgres" && Redacted.value(both.url)).toBe(variable)
    // The password never shows when the selection is printed or logged.
    expect(String(both)).not.toContain("pw@")
    expect(JSON.stringify(both)).not.toContain("pw@")
  })

  it("refuses a URL that is not a PostgreSQL URL as a ConfigError naming its source", () => {
    const variable = Storage.select({ env: { OPENCODE_DATABASE_URL: "mysql://x@y/z" }, filename: file })
    expect(Either.isLeft(variable) && variable.left.message).toMatch(
      /^OPENCODE_DATABASE_URL: expected a PostgreSQL URL/
    )
    const key = Storage.select({ env: {}, configured: "postgres://app:pw@db:99999999/sessions", filename: file })
    expect(Either.isLeft(key) && key.left.message).toContain("server.database: not a valid URL")
  })

  it("describes a selection for people with the password redacted (in the URL and in its parameters)", () => {
    expect(Storage.describe(Storage.Selection.Sqlite({ filename: file }))).toBe(`SQLite ${file}`)
    const url = Redacted.make("postgres://app:s3cret@db:5432/sessions?password=other&sslmode=require")
    expect(Storage.describe(Storage.Selection.Postgres({ url }))).toBe(
      "PostgreSQL postgres://app:***@db:5432/sessions?password=***&sslmode=require"
    )
    expect(Storage.redact("postgres://app@db/sessions")).toBe("postgres://app@db/sessions")
  })
})

/** A loopback port where nothing listens. */
const closedPort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as net.AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})

describe.runIf(PostgresServer.testable())("Storage.layer over a real PostgreSQL server", () => {
  layer(PostgresServer.layer(), { timeout: 90_000 })((it) => {
    it.scoped("opens and migrates the selected database and reports the selection", () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.Service
        const url = Redacted.make(yield* server.database())
        const context = yield* Layer.build(Storage.layer(Storage.Selection.Postgres({ url })))
        expect(Context.get(context, Storage.Selected)._tag).toBe("Postgres")
        const sql = Context.get(context, SqlClient.SqlClient)
        const [row] = yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM effect_sql_migrations`
        expect(row?.count).toBeGreaterThan(0)
      })
    )

    it.scoped("an unreachable server or a missing database fails with DatabaseUnavailable, password redacted", () =>
      Effect.gen(function* () {
        const port = yield* closedPort
        const refused = yield* Effect.exit(
          Layer.build(
            Storage.layer(
              Storage.Selection.Postgres({ url: Redacted.make(`postgres://app:hunter2@127.0.0.1:${port}/x`) })
            )
          )
        )
        expect(Exit.isFailure(refused)).toBe(true)
        if (Exit.isFailure(refused) && refused.cause._tag === "Fail") {
          expect(refused.cause.error.database).toBe(`postgres://app:***@127.0.0.1:${port}/x`)
          expect(refused.cause.error.reason).toContain("ECONNREFUSED")
          expect(refused.cause.error.message).not.toContain("hunter2")
        } else expect.fail(`expected a DatabaseUnavailable failure, got ${String(refused)}`)

        const server = yield* PostgresServer.Service
        const missing = yield* Effect.flip(
          Layer.build(Storage.layer(Storage.Selection.Postgres({ url: Redacted.make(server.urlOf("absent_db")) })))
        )
        expect(missing._tag).toBe("Storage/DatabaseUnavailable")
        expect(missing.reason).toBe('database "absent_db" does not exist')
      })
    )

    it.scoped("SQLite stays SQLite: the file is created and reported", () =>
      Effect.gen(function* () {
        const filename = path.join(yield* tempDir, "opencode.db")
        const context = yield* Layer.build(Storage.layer(Storage.Selection.Sqlite({ filename })))
        expect(Context.get(context, Storage.Selected)).toEqual(Storage.Selection.Sqlite({ filename }))
      })
    )
  })
})
