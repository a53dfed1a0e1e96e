import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as path from "node:path"
import { LLMScript, ScriptedLLMServer, TestDatabase } from "@opencode-ai/core/testing"
import { Effect, Exit, Scope } from "effect"
import { describe, expect, it } from "vitest"
import * as Binary from "./binary.js"
import { tempDir } from "./harness.js"

/** Spawns `opencode serve` as a real process and resolves with the URL it prints. */
const serve = (args: ReadonlyArray<string>, env: Record<string, string>) => Binary.listen(["serve", ...args], { env })

/** Spawns `opencode <argv>` as a real process and resolves with the URL it prints. */
const start = (argv: ReadonlyArray<string>, env: Record<string, string>) => Binary.listen(argv, { env })

/** Runs `opencode serve` as a real process to its exit, with what it wrote. */
const runToExit = (args: ReadonlyArray<string>, env: Record<string, string>) => Binary.run(["serve", ...args], { env })

/** Runs `opencode <argv>` as a real process to its exit, with what it wrote. */
const opencode = (argv: ReadonlyArray<string>, env: Record<string, string>) => Binary.run(argv, { env })

// The server's version, as the health answer and the start-up summary report it.
const version: string = JSON.parse(fs.readFileSync(path.resolve(__dirname, "../package.json"), "utf8")).version

/** The exit statuses `opencode --help` documents. */
const ExitStatus = { ok: 0, defect: 1, usage: 2, config: 3, listen: 4, dataDir: 5 } as const

/** An expected failure's report: one line on stderr, `opencode: …`, with no stack frame. */
const expectOneLine = (stderr: string) => {
  expect(stderr.endsWith("\n"), stderr).toBe(true)
  expect(stderr.slice(0, -1).split("\n"), stderr).toHaveLength(1)
  expect(stderr).toMatch(/^opencode: /)
  expect(stderr).not.toMatch(/^\s+at /m)
  expect(stderr).not.toContain("level=ERROR")
}

const exited = Binary.exited

/** The live processes (zombies ignored) whose command line mentions `.tag`, from `ps`. */
const processesTagged = (tag: string) =>
  execFileSync("ps", ["-eo", "pid=,stat=,args="], { encoding: "utf8" })
    .split("\n")
    .map((line) => /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && !m[2]!.startsWith("Z") && m[3]!.includes(`.${tag}`))
    .map((m) => ({ pid: Number(m[1]), args: m[3]! }))

const post = (url: string, body: unknown) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(
    (r) => r.json() as Promise<any>
  )

describe("opencode serve", () => {
  it("listens on the given port and hostname, prints its URL and stores sessions in the XDG data dir", async () => {
    const data = tempDir("xdg")
    const { child, url } = await serve(["--port", "0", "--hostname", "127.0.0.1"], { XDG_DATA_HOME: data })
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(await fetch(`${url}/api/health`).then((r) => r.json())).toEqual({ healthy: true, version })
    const created = await post(`${url}/api/session`, {})
    expect(created.data.id).toMatch(/^ses_/)
    // Over PostgreSQL (OPENCODE_TEST_DATABASE=postgres) the data dir holds no SQLite file at all.
    expect(fs.existsSync(path.join(data, "opencode", "opencode.db"))).toBe(!TestDatabase.postgres())
    child.kill("SIGTERM")
    expect(await exited(child)).toBe(0)
  })

  // Over PostgreSQL (OPENCODE_TEST_DATABASE=postgres) every server also gets OPENCODE_DATABASE_URL,
  // which wins over OPENCODE_DB: the file is then never made. One data home for both starts, so
  // both reach the same database either way.
  it("honours OPENCODE_DB (unless OPENCODE_DATABASE_URL selects PostgreSQL) and keeps sessions across restarts", async () => {
    const db = path.join(tempDir("db"), "nested", "custom.db")
    const env = { OPENCODE_DB: db, XDG_DATA_HOME: tempDir("xdg") }
    const defaultFile = path.join(env.XDG_DATA_HOME, "opencode", "opencode.db")
    const first = await serve(["--port", "0"], env)
    const created = await post(`${first.url}/api/session`, {})
    first.child.kill("SIGINT")
    expect(await exited(first.child)).toBe(0)
    expect(fs.existsSync(db)).toBe(!TestDatabase.postgres())
    expect(fs.existsSync(defaultFile)).toBe(false)
    // A clean close checkpoints the WAL back into the database file.
    expect(fs.existsSync(`${db}-wal`)).toBe(false)

    const second = await serve(["--port", "0"], env)
    const fetched = await fetch(`${second.url}/api/session/${created.data.id}`).then((r) => r.json())
    expect(fetched.data).toEqual(created.data)
    second.child.kill("SIGTERM")
    expect(await exited(second.child)).toBe(0)
    expect(fs.existsSync(defaultFile)).toBe(false)
  })

  it("finishes an in-flight request after SIGTERM, then exits", async () => {
    const { child, url } = await serve(["--port", "0"], { XDG_DATA_HOME: tempDir("xdg") })
    const { port } = new URL(url)
    const body = JSON.stringify({ agent: "build" })
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = http.request(
        {
          host: "127.0.0.1",
          port,
          method: "POST",
          path: "/api/session",
          headers: { "content-type": "application/json", "content-length": body.length }
        },
        (res) => {
          let text = ""
          res.on("data", (c) => (text += c))
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }))
        }
      )
      request.on("error", reject)
      // Half the body now; the request is in flight when the signal arrives.
      request.write(body.slice(0, 5))
      setTimeout(() => {
        child.kill("SIGTERM")
        setTimeout(() => request.end(body.slice(5)), 300)
      }, 300)
    })
    const result = await response
    expect(result.status).toBe(200)
    expect(JSON.parse(result.body).data.agent).toBe("build")
    expect(await exited(child)).toBe(0)
    // New connections are refused once shutdown began.
    await expect(fetch(`${url}/api/health`)).rejects.toThrow()
  })

  it("writes logs to stderr with --print-logs, and to the log file otherwise", async () => {
    const printed = await serve(["--port", "0", "--print-logs", "--log-level", "DEBUG"], {
      XDG_DATA_HOME: tempDir("xdg")
    })
    printed.child.kill("SIGTERM")
    expect(await exited(printed.child)).toBe(0)
    expect(printed.stderr()).toContain("opencode server listening")

    const data = tempDir("xdg")
    const quiet = await serve(["--port", "0"], { XDG_DATA_HOME: data })
    quiet.child.kill("SIGTERM")
    expect(await exited(quiet.child)).toBe(0)
    expect(quiet.stderr()).not.toContain("opencode server listening")
    expect(fs.readFileSync(path.join(data, "opencode", "log", "opencode.log"), "utf8")).toContain(
      "opencode server listening"
    )
  })

  it("fails startup on an invalid opencode.json, naming the file, the line and the reason", async () => {
    const config = tempDir("config")
    const file = path.join(config, "opencode", "opencode.json")
    fs.mkdirSync(path.dirname(file))
    fs.writeFileSync(
      file,
      `{\n  "provider": {\n    "local": { "npm": "@ai-sdk/openai-compatible", "options": { "baseURL": 5 } }\n  }\n}\n`
    )
    const data = tempDir("xdg")
    const result = await runToExit(["--port", "0"], { XDG_DATA_HOME: data, XDG_CONFIG_HOME: config })
    expect(result.code).toBe(ExitStatus.config)
    expect(result.stdout).not.toContain("listening")
    expectOneLine(result.stderr)
    expect(result.stderr).toContain(`opencode: invalid configuration: ${file}:3:`)
    expect(result.stderr).toContain("provider.local.options.baseURL: Expected string")
    // Startup stopped before the database was created.
    expect(fs.existsSync(path.join(data, "opencode", "opencode.db"))).toBe(false)
  })

  it("serves the providers of a valid opencode.json in the XDG config home, with {env:…} substituted", async () => {
    const config = tempDir("config")
    fs.mkdirSync(path.join(config, "opencode"))
    fs.writeFileSync(
      path.join(config, "opencode", "opencode.json"),
      JSON.stringify({
        provider: {
          local: {
            npm: "@ai-sdk/openai-compatible",
            options: { baseURL: "http://127.0.0.1:8080/v1", apiKey: "{env:LOCAL_KEY}" },
            models: { qwen: { limit: { context: 32768, output: 4096 } } }
          }
        },
        model: "local/qwen"
      })
    )
    const { child, url } = await serve(["--port", "0"], {
      XDG_DATA_HOME: tempDir("xdg"),
      XDG_CONFIG_HOME: config,
      LOCAL_KEY: "sk-1"
    })
    const models = await fetch(`${url}/api/model`).then((r) => r.json() as Promise<any>)
    expect(models.data.map((m: any) => [m.providerID, m.id, m.limit])).toEqual([
      ["local", "qwen", { context: 32768, output: 4096 }]
    ])
    child.kill("SIGTERM")
    expect(await exited(child)).toBe(0)
  })

  it("--cors (repeatable) and server.cors allow those origins, with CORS; other origins get 403", async () => {
    const config = tempDir("config")
    fs.mkdirSync(path.join(config, "opencode"))
    fs.writeFileSync(
      path.join(config, "opencode", "opencode.json"),
      JSON.stringify({ server: { cors: ["https://configured.example"] } })
    )
    const { child, url } = await serve(
      ["--port", "0", "--cors", "http://a.example", "--cors", "http://localhost:5173"],
      { XDG_DATA_HOME: tempDir("xdg"), XDG_CONFIG_HOME: config }
    )
    for (const origin of ["http://a.example", "http://localhost:5173", "https://configured.example"]) {
      const response = await fetch(`${url}/api/health`, { headers: { origin } })
      expect(response.status, origin).toBe(200)
      expect(response.headers.get("access-control-allow-origin"), origin).toBe(origin)
    }
    const refused = await fetch(`${url}/api/health`, { headers: { origin: "http://b.example" } })
    expect(refused.status).toBe(403)
    expect(((await refused.json()) as { _tag: string })._tag).toBe("ForbiddenOriginError")
    child.kill("SIGTERM")
    expect(await exited(child)).toBe(0)
  })

  it("refuses a --cors value that is not an origin", async () => {
    const result = await runToExit(["--port", "0", "--cors", "a.example/path"], { XDG_DATA_HOME: tempDir("xdg") })
    expect(result.code).toBe(ExitStatus.usage)
    expect(result.stdout).not.toContain("listening")
    expectOneLine(result.stderr)
    expect(result.stderr).toContain("opencode: --cors a.example/path: expected an origin")
  })

  it("accepts --pure (no effect: there are no plugins) and --mdns (ignored, with a warning)", async () => {
    const { child, url, stderr } = await serve(["--port", "0", "--pure", "--mdns"], { XDG_DATA_HOME: tempDir("xdg") })
    expect(await fetch(`${url}/api/health`).then((r) => r.status)).toBe(200)
    child.kill("SIGTERM")
    expect(await exited(child)).toBe(0)
    expect(stderr()).toContain("--mdns is not supported and has no effect")
    const plain = await serve(["--port", "0", "--pure"], { XDG_DATA_HOME: tempDir("xdg") })
    plain.child.kill("SIGTERM")
    expect(await exited(plain.child)).toBe(0)
    expect(plain.stderr()).not.toContain("warning")
  })

  it("warns at start-up when it listens beyond loopback without a password", async () => {
    const open = await serve(["--port", "0", "--hostname", "0.0.0.0"], { XDG_DATA_HOME: tempDir("xdg") })
    open.child.kill("SIGTERM")
    expect(await exited(open.child)).toBe(0)
    expect(open.stderr()).toMatch(/warning: listening on http:\/\/0\.0\.0\.0:\d+, which is not a loopback address/)
    expect(open.stderr()).toContain("OPENCODE_SERVER_PASSWORD")
    const guarded = await serve(["--port", "0", "--hostname", "0.0.0.0"], {
      XDG_DATA_HOME: tempDir("xdg"),
      OPENCODE_SERVER_PASSWORD: "pw"
    })
    guarded.child.kill("SIGTERM")
    expect(await exited(guarded.child)).toBe(0)
    expect(guarded.stderr()).not.toContain("warning")
    const loopback = await serve(["--port", "0"], { XDG_DATA_HOME: tempDir("xdg") })
    loopback.child.kill("SIGTERM")
    expect(await exited(loopback.child)).toBe(0)
    expect(loopback.stderr()).not.toContain("warning")
  })

  it("a SIGTERM while bash runs ends every process the command started, then exits", async () => {
    const scope = Effect.runSync(Scope.make())
    const tag = String(100_000 + Math.floor(Math.random() * 900_000))
    try {
      const llm = await Effect.runPromise(ScriptedLLMServer.make().pipe(Scope.extend(scope)))
      const config = tempDir("config")
      fs.mkdirSync(path.join(config, "opencode"))
      fs.writeFileSync(
        path.join(config, "opencode", "opencode.json"),
        JSON.stringify(ScriptedLLMServer.config(llm.url))
      )
      // A background job, a setsid job, a double-forked setsid job, and a shell that ignores SIGTERM.
      const command = [
        `sleep 301.${tag} &`,
        `setsid sleep 311.${tag} &`,
        `(setsid sh -c 'sleep 321.${tag}; true' &)`,
        `trap '' TERM; sleep 331.${tag}`
      ].join("\n")
      const { reply, toolCall, text, finish } = LLMScript
      await Effect.runPromise(
        llm.enqueue(
          reply(toolCall("call_bash", "bash", { command }), finish("tool-calls")),
          reply(text("unused"), finish("stop"))
        )
      )
      const { child, url } = await serve(["--port", "0"], { XDG_DATA_HOME: tempDir("xdg"), XDG_CONFIG_HOME: config })
      const session = await post(`${url}/api/session`, {})
      await post(`${url}/api/session/${session.data.id}/prompt`, { prompt: { text: "run something stubborn" } })
      for (let i = 0; i < 400 && processesTagged(tag).length < 4; i++) await new Promise((r) => setTimeout(r, 25))
      expect(processesTagged(tag).length).toBeGreaterThanOrEqual(4)
      child.kill("SIGTERM")
      expect(await exited(child)).toBe(0)
      expect(processesTagged(tag).map(({ args }) => args)).toEqual([])
    } finally {
      for (const { pid } of processesTagged(tag)) process.kill(pid, "SIGKILL")
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }, 120_000)
})

/** Runs `opencode <argv>` in a real pseudo-terminal to its exit: what a person at a terminal sees. */
const inTerminal = async (argv: ReadonlyArray<string>, env: Record<string, string>) => {
  const terminal = Binary.terminal(argv, { env })
  const code = await terminal.exited
  return { code, output: terminal.output() }
}

/** Whether this machine has an IPv6 loopback interface to bind: found out by binding, not assumed. */
const hasIpv6Loopback = () =>
  new Promise<boolean>((resolve) => {
    const server = net.createServer()
    server.once("error", () => resolve(false))
    server.listen(0, "::1", () => server.close(() => resolve(true)))
  })

const ESC = "\u001b"

// Each test starts several real processes, one after another: generous limits for a loaded machine.
const slow = { timeout: 240_000 }

describe("opencode CLI: options, errors, colour and the start-up summary", () => {
  it("lists --log-level once in each help, with --log-format, --no-ui and the exit statuses", slow, async () => {
    for (const argv of [["serve", "--help"], ["--help"]]) {
      const help = await opencode(argv, {})
      expect(help.code, argv.join(" ")).toBe(ExitStatus.ok)
      // An option's own entry starts its line; the usage line mentions it in brackets.
      expect(help.stdout.match(/^--log-level\b/gm), argv.join(" ")).toHaveLength(1)
      expect(help.stdout).toContain("EXIT STATUS")
      for (const code of [1, 2, 3, 4, 5]) expect(help.stdout).toMatch(new RegExp(`^${code}  \\S`, "m"))
    }
    const serveHelp = await opencode(["serve", "--help"], {})
    expect(serveHelp.stdout).toMatch(/^--log-format\b/m)
    expect(serveHelp.stdout).toMatch(/^--no-ui\b/m)
  })

  it("honours --log-level before and after the subcommand, in any case", slow, async () => {
    const debugLines = async (argv: ReadonlyArray<string>) => {
      const data = tempDir("xdg")
      const { child } = await start(argv, { XDG_DATA_HOME: data })
      child.kill("SIGTERM")
      expect(await exited(child)).toBe(0)
      const log = fs.readFileSync(path.join(data, "opencode", "log", "opencode.log"), "utf8")
      expect(log).toContain("opencode server listening")
      return log.split("\n").filter((line) => /level=debug/i.test(line)).length
    }
    expect(await debugLines(["--log-level", "debug", "serve", "--port", "0"])).toBeGreaterThan(0)
    expect(await debugLines(["--log-level", "DEBUG", "serve", "--port", "0"])).toBeGreaterThan(0)
    expect(await debugLines(["serve", "--port", "0", "--log-level", "debug"])).toBeGreaterThan(0)
    expect(await debugLines(["serve", "--port", "0", "--log-level=Debug"])).toBeGreaterThan(0)
    // The default is INFO: no DEBUG line.
    expect(await debugLines(["serve", "--port", "0"])).toBe(0)
    // And on stderr with --print-logs.
    const printed = await start(["--log-level", "debug", "serve", "--port", "0", "--print-logs"], {
      XDG_DATA_HOME: tempDir("xdg")
    })
    printed.child.kill("SIGTERM")
    expect(await exited(printed.child)).toBe(0)
    expect(printed.stderr()).toMatch(/level=debug/i)
  })

  it("reports a usage error once, in one line, with status 2", slow, async () => {
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [["serve", "--port", "abc"], "opencode: --port abc: expected a port number from 0 to 65535"],
      [["serve", "--port", "99999"], "opencode: --port 99999: expected a port number from 0 to 65535"],
      [["serve", "--bogus"], "--bogus"],
      [["serve", "--log-level", "loud"], "opencode: --log-level loud: expected debug, info, warn or error"],
      [["serve", "--log-format", "xml"], "opencode: --log-format xml: expected logfmt, json or pretty"],
      [["serv"], "serve"]
    ]
    for (const [argv, said] of cases) {
      const result = await opencode(argv, { XDG_DATA_HOME: tempDir("xdg") })
      expect(result.code, argv.join(" ")).toBe(ExitStatus.usage)
      expect(result.stdout, argv.join(" ")).toBe("")
      expectOneLine(result.stderr)
      expect(result.stderr, argv.join(" ")).toContain(said)
      expect(result.stderr, argv.join(" ")).toContain("(see --help)")
    }
  })

  it("reports a port in use and an address it cannot bind once, with status 4", slow, async () => {
    const first = await serve(["--port", "0"], { XDG_DATA_HOME: tempDir("xdg") })
    const { port } = new URL(first.url)
    const taken = await runToExit(["--port", port], { XDG_DATA_HOME: tempDir("xdg") })
    first.child.kill("SIGTERM")
    expect(await exited(first.child)).toBe(0)
    expect(taken.code).toBe(ExitStatus.listen)
    expect(taken.stdout).not.toContain("listening")
    expectOneLine(taken.stderr)
    expect(taken.stderr).toContain(`opencode: cannot listen on 127.0.0.1:${port}: the port is already in use`)
    expect(taken.stderr).toContain("--port 0 picks a free one")
    // 192.0.2.0/24 is reserved for documentation: no interface has it.
    const absent = await runToExit(["--port", "0", "--hostname", "192.0.2.1"], { XDG_DATA_HOME: tempDir("xdg") })
    expect(absent.code).toBe(ExitStatus.listen)
    expectOneLine(absent.stderr)
    expect(absent.stderr).toContain(
      "opencode: cannot listen on 192.0.2.1:0: no interface of this machine has that address"
    )
  })

  it(
    "reports a data directory or database file it cannot use once, with status 5, before opening anything",
    slow,
    async () => {
      // A file where the data directory should be: no user, root included, can create it.
      const blocker = path.join(tempDir("blocked"), "not-a-dir")
      fs.writeFileSync(blocker, "")
      const data = await runToExit(["--port", "0"], { XDG_DATA_HOME: blocker })
      expect(data.code).toBe(ExitStatus.dataDir)
      expect(data.stdout).not.toContain("listening")
      expectOneLine(data.stderr)
      expect(data.stderr).toContain(`opencode: cannot use the data directory ${path.join(blocker, "opencode")}:`)
      expect(data.stderr).toContain("XDG_DATA_HOME")

      // The checks of the SQLite file: SQLite-specific, so SQLite even under OPENCODE_TEST_DATABASE=postgres.
      const sqlite = { OPENCODE_DATABASE_URL: "" }
      const directory = tempDir("db-is-a-dir")
      const asDirectory = await runToExit(["--port", "0"], {
        XDG_DATA_HOME: tempDir("xdg"),
        OPENCODE_DB: directory,
        ...sqlite
      })
      expect(asDirectory.code).toBe(ExitStatus.dataDir)
      expectOneLine(asDirectory.stderr)
      expect(asDirectory.stderr).toContain(`opencode: cannot use the database file ${directory}: not a regular file`)

      const garbage = path.join(tempDir("db"), "garbage.db")
      fs.writeFileSync(garbage, "this is not a database, and it is long enough to have a header")
      const notSqlite = await runToExit(["--port", "0"], {
        XDG_DATA_HOME: tempDir("xdg"),
        OPENCODE_DB: garbage,
        ...sqlite
      })
      expect(notSqlite.code).toBe(ExitStatus.dataDir)
      expectOneLine(notSqlite.stderr)
      expect(notSqlite.stderr).toContain(`opencode: cannot use the database file ${garbage}: not an SQLite database`)
      expect(fs.readFileSync(garbage, "utf8")).toContain("this is not a database")

      if (process.getuid?.() !== 0) {
        // Permissions bind only a user other than root.
        const locked = tempDir("locked")
        fs.chmodSync(locked, 0o500)
        const unwritable = await runToExit(["--port", "0"], { XDG_DATA_HOME: locked })
        fs.chmodSync(locked, 0o700)
        expect(unwritable.code).toBe(ExitStatus.dataDir)
        expectOneLine(unwritable.stderr)
      }
    }
  )

  it("prints an unexpected failure's cause once, with status 1", slow, async () => {
    // The log directory is a file: the data directory passes its check, then opening the log fails.
    const data = tempDir("xdg")
    fs.mkdirSync(path.join(data, "opencode"))
    fs.writeFileSync(path.join(data, "opencode", "log"), "")
    const result = await runToExit(["--port", "0"], { XDG_DATA_HOME: data })
    expect(result.code).toBe(ExitStatus.defect)
    expect(result.stdout).not.toContain("listening")
    expect(result.stderr.match(/^opencode: unexpected failure: /gm)).toHaveLength(1)
    // The cause, with where it came from, once.
    expect(result.stderr.match(/ENOTDIR|EEXIST/g)?.length).toBe(1)
    expect(result.stderr).toMatch(/^\s+at /m)
    expect(result.stderr).not.toContain("level=ERROR")
  })

  it("writes no colour when piped or with NO_COLOR, and colour on a terminal", slow, async () => {
    const piped = await opencode(["serve", "--help"], {})
    expect(piped.stdout).toContain("--log-level")
    expect(piped.stdout).not.toContain(ESC)
    const error = await opencode(["serve", "--port", "abc"], {})
    expect(error.stderr).not.toContain(ESC)

    const terminal = await inTerminal(["serve", "--help"], {})
    expect(terminal.code).toBe(ExitStatus.ok)
    expect(terminal.output).toContain("--log-level")
    expect(terminal.output).toContain(`${ESC}[`)
    const noColor = await inTerminal(["serve", "--help"], { NO_COLOR: "1" })
    expect(noColor.output).toContain("--log-level")
    expect(noColor.output).not.toContain(ESC)
    const terminalError = await inTerminal(["serve", "--port", "abc"], { NO_COLOR: "1" })
    expect(terminalError.code).toBe(ExitStatus.usage)
    expect(terminalError.output).toContain("opencode: --port abc")
    expect(terminalError.output).not.toContain(ESC)
  })

  it("prints a bracketed URL for an IPv6 address, which a client reaches", slow, async (context) => {
    if (!(await hasIpv6Loopback())) context.skip()
    const { child, url } = await serve(["--port", "0", "--hostname", "::1"], { XDG_DATA_HOME: tempDir("xdg") })
    expect(url).toMatch(/^http:\/\/\[::1\]:\d+$/)
    expect(await fetch(`${url}/api/health`).then((r) => r.json())).toEqual({ healthy: true, version })
    child.kill("SIGTERM")
    expect(await exited(child)).toBe(0)
  })

  it("prints a start-up summary: version, URL, data dir, database, config files, providers, auth", slow, async () => {
    const config = tempDir("config")
    const file = path.join(config, "opencode", "opencode.json")
    fs.mkdirSync(path.dirname(file))
    fs.writeFileSync(
      file,
      JSON.stringify({
        provider: {
          local: {
            npm: "@ai-sdk/openai-compatible",
            options: { baseURL: "http://127.0.0.1:8080/v1", apiKey: "sk-local" },
            models: { qwen: {}, llama: {} }
          }
        }
      })
    )
    const data = tempDir("xdg")
    const open = await serve(["--port", "0"], { XDG_DATA_HOME: data, XDG_CONFIG_HOME: config })
    open.child.kill("SIGTERM")
    expect(await exited(open.child)).toBe(0)
    const summary = open.stdout()
    expect(summary).toMatch(/^opencode server listening on http:\/\/127\.0\.0\.1:\d+$/m)
    expect(summary).toMatch(new RegExp(`^  version +${version.replaceAll(".", "\\.")}$`, "m"))
    expect(summary).toContain(`  data      ${path.join(data, "opencode")}\n`)
    expect(summary).toContain(
      TestDatabase.postgres()
        ? "  database  PostgreSQL postgres://postgres@127.0.0.1:"
        : `  database  SQLite ${path.join(data, "opencode", "opencode.db")}\n`
    )
    expect(summary).toContain(`  config    ${file}\n`)
    expect(summary).toMatch(/^ {2}providers .*\blocal \(2\)/m)
    expect(summary).toMatch(/^ {2}auth +off\b/m)
    expect(summary).not.toContain("sk-local")
    expect(summary).not.toContain(ESC)

    const guarded = await serve(["--port", "0"], {
      XDG_DATA_HOME: tempDir("xdg"),
      OPENCODE_SERVER_PASSWORD: "secret-pw",
      OPENCODE_SERVER_USERNAME: "alice"
    })
    guarded.child.kill("SIGTERM")
    expect(await exited(guarded.child)).toBe(0)
    expect(guarded.stdout()).toMatch(/^ {2}auth +on \(HTTP Basic, user alice\)$/m)
    expect(guarded.stdout()).toMatch(/^ {2}config +none found/m)
    expect(guarded.stdout() + guarded.stderr()).not.toContain("secret-pw")
  })

  it("accepts --no-ui and --log-format", slow, async () => {
    const { child, url } = await serve(["--port", "0", "--no-ui", "--log-format", "json"], {
      XDG_DATA_HOME: tempDir("xdg")
    })
    expect(await fetch(`${url}/api/health`).then((r) => r.status)).toBe(200)
    child.kill("SIGTERM")
    expect(await exited(child)).toBe(0)
  })
})
