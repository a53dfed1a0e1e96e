import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Reactivity } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { it } from "@effect/vitest"
import { Effect, Exit, Redacted, Scope } from "effect"
import { describe, expect } from "vitest"
import { PostgresServer } from "../../src/testing/postgres-server.js"

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..")
const childScript = path.join(packageDir, "test", "storage", "postgres-server.child.ts")
/** A start is ~1.5 s on an idle 2-core machine, but several seconds when the whole suite runs beside it. */
const startTimeout = 90_000

/** Runs `f` with a client of the database at `url`. */
const query = <A>(url: string, f: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>) =>
  Effect.gen(function* () {
    const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 })
    return yield* f(sql)
  }).pipe(Effect.scoped, Effect.provide(Reactivity.layer), Effect.orDie)

/** The uid a process runs as (the real uid, from /proc). */
const uidOf = (pid: number) => {
  const line = fs
    .readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("Uid:"))
  return Number(line?.split(/\s+/)[1])
}

// Counted as a failed test in CI: there the binaries must be installed (scripts/system-deps.sh).
it.runIf(PostgresServer.testable())("PostgreSQL's server binaries are installed for the PostgreSQL tests", () => {
  expect(PostgresServer.binDirectory(), "initdb and pg_ctl (scripts/system-deps.sh installs them)").toBeDefined()
})

describe.runIf(PostgresServer.testable())("a throwaway PostgreSQL server", () => {
  it.scopedLive(
    "starts from the machine's binaries as an unprivileged user, serves its database, and leaves nothing when its scope closes",
    () =>
      Effect.gen(function* () {
        // Closed below; and by the test's own scope should an assertion fail first.
        const scope = yield* Effect.acquireRelease(Scope.make(), (scope) => Scope.close(scope, Exit.void))
        const server = yield* PostgresServer.make({ database: "first" }).pipe(Scope.extend(scope))
        const [row] = yield* query(
          server.url,
          (sql) =>
            sql<{
              database: string
              user: string
              version: string
              port: number
            }>`SELECT current_database() AS database, current_user AS user, version() AS version, inet_server_port() AS port`
        )
        expect(row?.database).toBe("first")
        expect(row?.user).toBe("postgres")
        expect(row?.version).toMatch(/^PostgreSQL \d+/)
        expect(row?.port).toBe(server.port)
        expect(server.url).toBe(`postgres://postgres@127.0.0.1:${server.port}/first`)
        // The socket is in the server's own directory.
        expect(fs.existsSync(`${server.socketDirectory}/.s.PGSQL.${server.port}`)).toBe(true)

        // The postmaster and its background workers (checkpointer, walwriter…); a backend of a closed
        // connection may still be exiting, so only the list taken here is checked afterwards.
        const processes = [server.pid, ...PostgresServer.childProcesses(server.pid)]
        expect(processes.length).toBeGreaterThan(1)
        expect(PostgresServer.processRunning(server.pid)).toBe(true)
        if (process.getuid?.() === 0) expect(uidOf(server.pid)).not.toBe(0)

        yield* Scope.close(scope, Exit.void)
        expect(processes.filter(PostgresServer.processRunning)).toEqual([])
        expect(fs.existsSync(server.directory)).toBe(false)
      }),
    startTimeout
  )

  it.live(
    "stops the server and removes its directory when the test using it fails",
    () =>
      Effect.gen(function* () {
        let seen: PostgresServer.PostgresServer | undefined
        let processes: ReadonlyArray<number> = []
        const exit = yield* Effect.gen(function* () {
          const server = yield* PostgresServer.make()
          seen = server
          processes = [server.pid, ...PostgresServer.childProcesses(server.pid)]
          // An open connection too: a fast stop disconnects it.
          yield* query(server.url, (sql) => sql`SELECT 1`)
          return yield* Effect.fail("the test failed")
        }).pipe(Effect.scoped, Effect.exit)
        expect(Exit.isFailure(exit)).toBe(true)
        expect(seen).toBeDefined()
        expect(processes.length).toBeGreaterThan(1)
        expect(processes.filter(PostgresServer.processRunning)).toEqual([])
        expect(fs.existsSync(seen?.directory ?? "")).toBe(false)
      }),
    startTimeout
  )

  it.live(
    "gives each caller a fresh database and drops it, with its open connections, when its scope closes",
    () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.make()
        const names = (sql: PgClient.PgClient) =>
          sql<{ datname: string }>`SELECT datname FROM pg_database ORDER BY datname`.pipe(
            Effect.map((rows) => rows.map((row) => row.datname))
          )
        const [a, b] = yield* Effect.gen(function* () {
          const a = yield* server.database()
          const b = yield* server.database()
          expect(a).not.toBe(b)
          // Written in one, absent from the other.
          yield* query(a, (sql) =>
            sql`CREATE TABLE note (body text)`.pipe(Effect.zipRight(sql`INSERT INTO note VALUES ('a')`))
          )
          const tables = yield* query(
            b,
            (sql) => sql<{ n: string }>`SELECT count(*)::text AS n FROM pg_tables WHERE tablename = 'note'`
          )
          expect(tables[0]?.n).toBe("0")
          const listed = yield* query(server.url, names)
          expect(listed).toEqual(expect.arrayContaining([a.split("/").pop(), b.split("/").pop()]))
          return [a, b] as const
        }).pipe(Effect.scoped)
        const listed = yield* query(server.url, names)
        expect(listed).not.toContain(a.split("/").pop())
        expect(listed).not.toContain(b.split("/").pop())
        // The server's own database stays.
        expect(listed).toContain("test")
      }).pipe(Effect.scoped),
    startTimeout
  )

  it.live(
    "stops the server and removes its directory when the test process is killed without closing the scope",
    () =>
      Effect.gen(function* () {
        const child = childProcess.spawn(process.execPath, ["--import", "tsx", childScript], {
          cwd: packageDir,
          stdio: ["ignore", "pipe", "pipe"]
        })
        yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
        let err = ""
        child.stderr.on("data", (chunk) => (err += String(chunk)))
        const started = yield* Effect.async<{ pid: number; directory: string }, Error>((resume) => {
          let out = ""
          child.stdout.on("data", (chunk) => {
            out += String(chunk)
            const match = /^started (.*)$/m.exec(out)
            if (match?.[1]) resume(Effect.succeed(JSON.parse(match[1])))
          })
          child.on("exit", (code) =>
            resume(Effect.fail(new Error(`the child exited (${code}) before starting: ${err}`)))
          )
        })
        const processes = [started.pid, ...PostgresServer.childProcesses(started.pid)]
        expect(PostgresServer.processRunning(started.pid)).toBe(true)
        expect(fs.existsSync(started.directory)).toBe(true)

        child.kill("SIGKILL")
        // The watchdog notices within a second or so; wait until it has cleaned up (or the test times out).
        while (processes.some(PostgresServer.processRunning) || fs.existsSync(started.directory)) {
          yield* Effect.sleep("200 millis")
        }
        expect(processes.filter(PostgresServer.processRunning)).toEqual([])
        expect(fs.existsSync(started.directory)).toBe(false)
      }).pipe(Effect.scoped),
    startTimeout
  )

  it.live("refuses a database name that is not a plain identifier", () =>
    Effect.gen(function* () {
      const error = yield* PostgresServer.make({ database: "x; DROP" }).pipe(Effect.scoped, Effect.flip)
      expect(error._tag).toBe("Testing/PostgresServerError")
      expect(error.message).toContain("not a plain identifier")
    })
  )
})
