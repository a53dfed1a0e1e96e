export * as PostgresServer from "./postgres-server.js"

/**
 * A real, throwaway PostgreSQL server for tests, run from the machine's own binaries (`initdb`,
 * `pg_ctl`, `postgres`: Debian's `postgresql` package; `scripts/system-deps.sh` installs it).
 *
 * {@link make} creates a temporary directory, runs `initdb` into it (trust authentication, superuser
 * `postgres`, UTF-8, C locale, no fsync: the data is disposable), starts the server with `pg_ctl` on a
 * free 127.0.0.1 port with its unix socket in the same directory, and creates one database for the
 * caller. PostgreSQL refuses to run as root: under root the directory is handed to the unprivileged
 * `postgres` user (else `nobody`) and every server binary runs as that user.
 *
 * Closing the scope stops the server (`pg_ctl stop -m fast`, which disconnects open clients; SIGKILL
 * if that fails) and removes the directory. It runs however the scope ends: success, failure or
 * interruption. Should the test process die without closing it (SIGKILL), a detached watchdog that
 * polls the process every second stops the server and removes the directory.
 *
 * Starting takes about 1.5 s on a 2-core machine (almost all of it `initdb`), so a test file shares
 * one server ({@link layer} with `@effect/vitest`'s `layer(...)`) and gives each test its own fresh
 * database ({@link PostgresServer.database}).
 */

import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { Reactivity } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, Schema, type Scope } from "effect"

/** The server could not be set up (no binaries, `initdb` or `pg_ctl` failed); `message` says why. */
export class PostgresServerError extends Schema.TaggedError<PostgresServerError>()("Testing/PostgresServerError", {
  message: Schema.String
}) {}

export interface Options {
  /** The database created for {@link PostgresServer.url}; default `test`. */
  readonly database?: string
  /** Extra server settings, passed as `-c name=value` (e.g. `{ max_connections: "200" }`). */
  readonly settings?: Readonly<Record<string, string>>
}

export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:<port>/<database>`: the database created at start. */
  readonly url: string
  readonly port: number
  /** The directory of the unix socket (`host` for a socket connection). */
  readonly socketDirectory: string
  /** The temporary directory holding the data directory, the socket and the server log. */
  readonly directory: string
  /** The postmaster's process id. */
  readonly pid: number
  /** The URL of another database on this server. */
  readonly urlOf: (database: string) => string
  /**
   * Creates a fresh, empty database and answers its URL; it is dropped (with its open connections,
   * `WITH (FORCE)`) when the scope closes.
   */
  readonly database: () => Effect.Effect<string, PostgresServerError, Scope.Scope>
  /** The server log written so far. */
  readonly log: () => string
}

/** The directory holding `initdb` and `pg_ctl`, or undefined when PostgreSQL is not installed. */
export const binDirectory = (): string | undefined => {
  const has = (dir: string) =>
    fs.existsSync(path.join(dir, "initdb")) &&
    fs.existsSync(path.join(dir, "pg_ctl")) &&
    fs.existsSync(path.join(dir, "postgres"))
  // `initdb` on PATH (often a link into the versioned directory, where `postgres` lives).
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue
    const initdb = path.join(dir, "initdb")
    if (!fs.existsSync(initdb)) continue
    const real = path.dirname(fs.realpathSync(initdb))
    if (has(real)) return real
  }
  // Debian and Ubuntu keep them in a versioned directory that is not on PATH: take the newest.
  const debian = "/usr/lib/postgresql"
  const versions = fs.existsSync(debian)
    ? fs
        .readdirSync(debian)
        .filter((name) => /^\d+(\.\d+)?$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
    : []
  return versions.map((version) => path.join(debian, version, "bin")).find(has)
}

/** Whether this machine has the PostgreSQL server binaries. */
export const available = (): boolean => binDirectory() !== undefined

/**
 * Whether the PostgreSQL tests run here: where the server's binaries are installed, and always in CI
 * (`CI=true`), where their absence must fail the tests rather than skip them.
 */
export const testable = (env: Readonly<Record<string, string | undefined>> = process.env): boolean =>
  available() || env.CI === "true"

interface User {
  readonly name: string
  readonly uid: number
  readonly gid: number
}

/** The unprivileged account the server runs as when we are root: `postgres` if it exists, else `nobody`. */
const unprivilegedUser = (): User | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const accounts = new Map<string, User>()
  for (const line of fs.readFileSync("/etc/passwd", "utf8").split("\n")) {
    const [name, , uid, gid] = line.split(":")
    if (name && uid && gid) accounts.set(name, { name, uid: Number(uid), gid: Number(gid) })
  }
  const user = accounts.get("postgres") ?? accounts.get("nobody")
  if (user === undefined) throw new Error("running as root, and neither a postgres nor a nobody user exists")
  return user
}

const failure = (message: string) => new PostgresServerError({ message })

/** Runs a PostgreSQL binary (as `user` when given) and answers its output; a non-zero exit fails. */
const run = (
  file: string,
  args: ReadonlyArray<string>,
  options: { readonly user: User | undefined; readonly home: string }
): Effect.Effect<string, PostgresServerError> =>
  Effect.async<string, PostgresServerError>((resume) => {
    const child = execFile(
      file,
      [...args],
      {
        ...(options.user ? { uid: options.user.uid, gid: options.user.gid } : {}),
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: options.home, LC_ALL: "C", LANG: "C", TZ: "UTC" },
        timeout: 120_000
      },
      (error, stdout, stderr) => {
        if (error) resume(Effect.fail(failure(`${path.basename(file)} ${args.join(" ")}: ${error.message}\n${stderr}`)))
        else resume(Effect.succeed(`${stdout}${stderr}`))
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** A port that was free on 127.0.0.1 a moment ago (the start retries when another process took it). */
const freePort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address() as net.AddressInfo
    server.close(() => resume(Effect.succeed(address.port)))
  })
})

/** Whether a process is running: present in /proc and not a zombie (PID 1 reaps late here). */
export const processRunning = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]
    return state !== "Z" && state !== "X"
  } catch {
    return false
  }
}

/** The running processes whose parent is `pid` (a postmaster's backends and background workers). */
export const childProcesses = (pid: number): ReadonlyArray<number> =>
  fs
    .readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => {
      try {
        const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8")
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
        return ppid === pid && processRunning(Number(name)) ? [Number(name)] : []
      } catch {
        return []
      }
    })

/**
 * The watchdog's script: while the owning process lives (the same pid with the same start time, and
 * not a zombie) and the directory exists, it sleeps; when the owner is gone it stops the server
 * (`immediate`) and removes the directory. Arguments: owner pid, owner start time, directory, pg_ctl.
 */
const watchdogScript = `
owner=$1 started=$2 dir=$3 pg_ctl=$4
alive() {
  stat=$(cat /proc/$owner/stat 2>/dev/null) || return 1
  set -- \${stat##*) }
  [ "$1" != Z ] && [ "\${20}" = "$started" ]
}
while [ -d "$dir" ] && alive; do sleep 1; done
[ -d "$dir" ] || exit 0
"$pg_ctl" stop -D "$dir/data" -m immediate -w >/dev/null 2>&1
rm -rf "$dir"
`

/** This process's start time (field 22 of /proc/self/stat), which tells it apart from a later one with its pid. */
const ownStartTime = (): string => {
  const stat = fs.readFileSync(`/proc/${process.pid}/stat`, "utf8")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? ""
}

/**
 * Starts the watchdog for a server directory: a detached shell (as the server's user) that stops the
 * server and removes the directory when this process dies without closing the scope (a SIGKILL of
 * the test runner), so no server outlives its tests. The scope's own close kills it.
 */
const watch = (directory: string, pgCtl: string, user: User | undefined): ChildProcess => {
  const child = spawn(
    "/bin/sh",
    ["-c", watchdogScript, "watchdog", String(process.pid), ownStartTime(), directory, pgCtl],
    {
      detached: true,
      stdio: "ignore",
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" },
      ...(user ? { uid: user.uid, gid: user.gid } : {})
    }
  )
  child.unref()
  return child
}

const identifier = /^[a-z_][a-z0-9_]*$/

/** Runs `statement` on the server's `postgres` database over a short-lived connection. */
const admin = (url: string, statement: string): Effect.Effect<void, PostgresServerError> =>
  Effect.gen(function* () {
    const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 })
    yield* sql.unsafe(statement)
  }).pipe(
    Effect.scoped,
    Effect.provide(Reactivity.layer),
    Effect.mapError((error) => failure(`${statement}: ${error.message}`))
  )

/** Starts a throwaway server; see the module documentation. Stopped and removed when the scope closes. */
export const make = (options: Options = {}): Effect.Effect<PostgresServer, PostgresServerError, Scope.Scope> =>
  Effect.gen(function* () {
    const bin = binDirectory()
    if (bin === undefined) {
      return yield* failure(
        "PostgreSQL is not installed (no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin): run scripts/system-deps.sh"
      )
    }
    const databaseName = options.database ?? "test"
    if (!identifier.test(databaseName)) return yield* failure(`database name ${databaseName} is not a plain identifier`)
    const user = yield* Effect.try({ try: unprivilegedUser, catch: (error) => failure(String(error)) })

    const [directory] = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-pg-"))
        if (user) fs.chownSync(dir, user.uid, user.gid)
        return [dir, watch(dir, path.join(bin, "pg_ctl"), user)] as const
      }),
      ([dir, watchdog]) =>
        Effect.sync(() => {
          fs.rmSync(dir, { recursive: true, force: true })
          try {
            watchdog.kill("SIGKILL")
          } catch {}
        })
    )
    const data = path.join(directory, "data")
    const logFile = path.join(directory, "server.log")
    const runAs = (binary: string, args: ReadonlyArray<string>) =>
      run(path.join(bin, binary), args, { user, home: directory })

    yield* runAs("initdb", [
      "--pgdata",
      data,
      "--username",
      "postgres",
      "--auth",
      "trust",
      "--encoding",
      "UTF8",
      "--locale",
      "C",
      "--no-sync"
    ])

    const pidFile = path.join(data, "postmaster.pid")
    const postmaster = (): number | undefined => {
      try {
        const pid = Number(fs.readFileSync(pidFile, "utf8").split("\n")[0])
        return Number.isInteger(pid) && pid > 0 ? pid : undefined
      } catch {
        return undefined
      }
    }
    // Registered before the start, so a start that fails half-way still stops what it started.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        const pid = postmaster()
        if (pid === undefined) return
        const children = childProcesses(pid)
        yield* runAs("pg_ctl", ["stop", "--pgdata", data, "--mode", "fast", "--wait", "--timeout", "60"]).pipe(
          Effect.ignore
        )
        for (const survivor of [pid, ...children].filter(processRunning)) {
          try {
            process.kill(survivor, "SIGKILL")
          } catch {}
        }
      })
    )

    const serverSettings: Record<string, string> = {
      listen_addresses: "127.0.0.1",
      unix_socket_directories: directory,
      fsync: "off",
      synchronous_commit: "off",
      full_page_writes: "off",
      ...options.settings
    }
    const quote = (value: string) => `'${value.replaceAll("'", `'"'"'`)}'`
    const start = (port: number) =>
      runAs("pg_ctl", [
        "start",
        "--pgdata",
        data,
        "--log",
        logFile,
        "--wait",
        "--timeout",
        "60",
        "-o",
        [
          `-p ${port}`,
          ...Object.entries(serverSettings).map(([name, value]) => `-c ${quote(`${name}=${value}`)}`)
        ].join(" ")
      ]).pipe(Effect.as(port))
    const log = () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, "utf8") : "")
    // Another process can take the free port before the server binds it: try a fresh one.
    const port = yield* freePort.pipe(
      Effect.flatMap(start),
      Effect.retry({ times: 4, while: () => /could not bind|already in use/i.test(log()) }),
      Effect.mapError((error) => failure(`${error.message}\n${log()}`))
    )
    const pid = postmaster()
    if (pid === undefined) return yield* failure(`the server started but wrote no postmaster.pid\n${log()}`)

    const urlOf = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`
    yield* admin(urlOf("postgres"), `CREATE DATABASE ${databaseName}`)

    let counter = 0
    const database = () =>
      Effect.acquireRelease(
        Effect.suspend(() => {
          const name = `test_${++counter}_${Math.random().toString(36).slice(2, 8)}`
          return admin(urlOf("postgres"), `CREATE DATABASE ${name}`).pipe(Effect.as(name))
        }),
        (name) => admin(urlOf("postgres"), `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
      ).pipe(Effect.map(urlOf))

    return {
      url: urlOf(databaseName),
      port,
      socketDirectory: directory,
      directory,
      pid,
      urlOf,
      database,
      log
    } satisfies PostgresServer
  })

/** The server shared by the tests of one file: `layer(PostgresServer.layer())(...)` in `@effect/vitest`. */
export class Service extends Context.Tag("@opencode-ai/core/testing/PostgresServer")<Service, PostgresServer>() {}

/** {@link make} as a layer: the server lives as long as the layer's scope. */
export const layer = (options: Options = {}): Layer.Layer<Service, PostgresServerError> =>
  Layer.scoped(Service, make(options))
