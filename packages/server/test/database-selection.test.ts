import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { PostgresServer } from "@opencode-ai/core/testing"
import { Effect, Exit, Scope } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { configHome, tempDir } from "./harness.js"

/*
 * Which database `opencode serve` keeps its sessions in: the SQLite file by default, PostgreSQL when
 * OPENCODE_DATABASE_URL or the `server.database` config key names one. Real processes of the built
 * binary over a real PostgreSQL server.
 */

const bin = path.resolve(__dirname, "../dist/bin.js")
const running: Array<ChildProcess> = []
afterEach(() => {
  for (const child of running.splice(0)) child.kill("SIGKILL")
})

const spawnServe = (env: Record<string, string>) => {
  const child = spawn(process.execPath, [bin, "serve", "--port", "0"], {
    cwd: tempDir("cwd"),
    env: {
      PATH: process.env.PATH ?? "",
      HOME: tempDir("home"),
      XDG_DATA_HOME: tempDir("data"),
      XDG_CONFIG_HOME: tempDir("config"),
      XDG_CACHE_HOME: tempDir("cache"),
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  running.push(child)
  let stdout = ""
  let stderr = ""
  child.stdout!.on("data", (chunk) => (stdout += chunk))
  child.stderr!.on("data", (chunk) => (stderr += chunk))
  return { child, stdout: () => stdout, stderr: () => stderr }
}

/** Starts `opencode serve` and resolves once it is listening: its URL and output so far. */
const serve = (env: Record<string, string>) =>
  new Promise<{ url: string; stdout: () => string; stderr: () => string }>((resolve, reject) => {
    const started = spawnServe(env)
    const timer = setInterval(() => {
      const match = /listening on (http:\/\/\S+)/.exec(started.stdout())
      if (match) {
        clearInterval(timer)
        resolve({ url: match[1]!, stdout: started.stdout, stderr: started.stderr })
      }
    }, 20)
    started.child.on("exit", (code) => {
      clearInterval(timer)
      reject(new Error(`serve exited with ${code}: ${started.stdout()}\n${started.stderr()}`))
    })
  })

/** Runs `opencode serve` to its exit. */
const runToExit = (env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const started = spawnServe(env)
    started.child.on("exit", (code) => resolve({ code, stdout: started.stdout(), stderr: started.stderr() }))
  })

/** An expected failure's report: one line on stderr, `opencode: …`, with no stack frame. */
const expectOneLine = (stderr: string) => {
  expect(stderr.slice(0, -1).split("\n"), stderr).toHaveLength(1)
  expect(stderr).toMatch(/^opencode: /)
  expect(stderr).not.toMatch(/^\s+at /m)
}

/** A loopback port where nothing listens (bound, then closed). */
const closedPort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

/** The session ids stored in the database at `url` (read with `psql`, PostgreSQL's own client). */
const storedSessions = async (url: string): Promise<ReadonlyArray<string>> =>
  execFileSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-qAtc", "SELECT id FROM session ORDER BY id"], {
    encoding: "utf8"
  })
    .split("\n")
    .filter((line) => line !== "")

const createSession = async (url: string): Promise<string> => {
  const response = await fetch(`${url}/api/session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}"
  })
  expect(response.status).toBe(200)
  return ((await response.json()) as { data: { id: string } }).data.id
}

/** `url` with a password for its user (the test server trusts every local connection, so any password works). */
const withPassword = (url: string, password: string) => {
  const parsed = new URL(url)
  parsed.password = password
  return parsed.toString()
}

describe.runIf(PostgresServer.testable())("opencode serve: which database it uses", () => {
  let scope: Scope.CloseableScope
  let server: PostgresServer.PostgresServer
  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    server = await Effect.runPromise(PostgresServer.make().pipe(Scope.extend(scope)))
  }, 120_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)
  const database = () => Effect.runPromise(server.database().pipe(Scope.extend(scope)))

  it("OPENCODE_DATABASE_URL selects PostgreSQL: sessions land there, no SQLite file is made, the summary hides the password", {
    timeout: 120_000
  }, async () => {
    const url = withPassword(await database(), "s3cret-pw")
    const data = tempDir("data")
    const started = await serve({ OPENCODE_DATABASE_URL: url, XDG_DATA_HOME: data })
    const id = await createSession(started.url)
    expect(await storedSessions(url)).toEqual([id])
    expect(fs.existsSync(path.join(data, "opencode", "opencode.db"))).toBe(false)
    const redacted = new URL(url)
    redacted.password = "***"
    expect(started.stdout()).toContain(`  database  PostgreSQL ${redacted.toString()}\n`)
    expect(started.stdout()).not.toContain("s3cret-pw")
    expect(started.stderr()).not.toContain("s3cret-pw")
  })

  it("the server.database config key selects PostgreSQL, and OPENCODE_DATABASE_URL wins over it", {
    timeout: 180_000
  }, async () => {
    const configured = await database()
    const config = configHome({ server: { database: withPassword(configured, "key-pw") } })
    const byKey = await serve({ XDG_CONFIG_HOME: config })
    const id = await createSession(byKey.url)
    expect(await storedSessions(configured)).toEqual([id])
    expect(byKey.stdout()).toContain("  database  PostgreSQL postgres://postgres:***@127.0.0.1:")
    expect(byKey.stdout()).not.toContain("key-pw")

    const fromEnv = await database()
    const both = await serve({ XDG_CONFIG_HOME: config, OPENCODE_DATABASE_URL: fromEnv })
    const other = await createSession(both.url)
    expect(await storedSessions(fromEnv)).toEqual([other])
    expect(await storedSessions(configured)).toEqual([id])
  })

  it("with PostgreSQL selected, OPENCODE_DB naming a file that is no SQLite database is not checked", {
    timeout: 120_000
  }, async () => {
    const garbage = path.join(tempDir("db"), "garbage.db")
    fs.writeFileSync(garbage, "this is not a database, and it is long enough to have a header")
    const url = await database()
    const started = await serve({ OPENCODE_DATABASE_URL: url, OPENCODE_DB: garbage })
    await createSession(started.url)
    expect(fs.readFileSync(garbage, "utf8")).toContain("this is not a database")
  })

  it("an unreachable PostgreSQL is a network failure: one line, status 4, password redacted", {
    timeout: 120_000
  }, async () => {
    const port = await closedPort()
    const result = await runToExit({ OPENCODE_DATABASE_URL: `postgres://app:hunter2@127.0.0.1:${port}/sessions` })
    expect(result.code).toBe(4)
    expect(result.stdout).not.toContain("listening")
    expectOneLine(result.stderr)
    expect(result.stderr).toContain(
      `opencode: cannot use the PostgreSQL database postgres://app:***@127.0.0.1:${port}/sessions: connect ECONNREFUSED`
    )
    expect(result.stderr).not.toContain("hunter2")
  })

  it("a database that does not exist on a reachable server is a network failure too (status 4)", {
    timeout: 120_000
  }, async () => {
    const result = await runToExit({ OPENCODE_DATABASE_URL: server.urlOf("no_such_database") })
    expect(result.code).toBe(4)
    expectOneLine(result.stderr)
    expect(result.stderr).toContain('database "no_such_database" does not exist')
  })

  it("a URL that is not a PostgreSQL URL is a configuration error (status 3), from the variable or the key", {
    timeout: 120_000
  }, async () => {
    const variable = await runToExit({ OPENCODE_DATABASE_URL: "mysql://root:pw@localhost/db" })
    expect(variable.code).toBe(3)
    expectOneLine(variable.stderr)
    expect(variable.stderr).toContain(
      "opencode: invalid configuration: OPENCODE_DATABASE_URL: expected a PostgreSQL URL"
    )
    expect(variable.stderr).not.toContain(":pw@")

    const key = await runToExit({ XDG_CONFIG_HOME: configHome({ server: { database: "sqlite:///tmp/x.db" } }) })
    expect(key.code).toBe(3)
    expectOneLine(key.stderr)
    expect(key.stderr).toContain("opencode.json")
    expect(key.stderr).toContain("expected a PostgreSQL URL")
  })

  it("without either, the SQLite file stays the default and the summary names it", { timeout: 120_000 }, async () => {
    const data = tempDir("data")
    const started = await serve({ XDG_DATA_HOME: data })
    await createSession(started.url)
    const file = path.join(data, "opencode", "opencode.db")
    expect(fs.existsSync(file)).toBe(true)
    expect(started.stdout()).toContain(`  database  SQLite ${file}\n`)
  })
})
