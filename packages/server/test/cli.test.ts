import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect, Exit, Scope } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { tempDir } from "./harness.js"

const bin = path.resolve(__dirname, "../dist/bin.js")
const running: Array<ChildProcess> = []
afterEach(() => {
  for (const child of running.splice(0)) child.kill("SIGKILL")
})

/** Spawns `opencode serve` as a real process and resolves with the URL it prints. */
const serve = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ child: ChildProcess; url: string; stderr: () => string }>((resolve, reject) => {
    const child = spawn(process.execPath, [bin, "serve", ...args], {
      cwd: path.resolve(__dirname, "../../.."),
      env: {
        PATH: process.env.PATH ?? "",
        HOME: env.HOME ?? tempDir("home"),
        // never models.dev from a test: a test that wants a refresh names a loopback OPENCODE_MODELS_URL
        OPENCODE_DISABLE_MODELS_FETCH: "1",
        ...env
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    running.push(child)
    let out = ""
    let err = ""
    child.stdout!.on("data", (chunk) => {
      out += chunk
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (match) resolve({ child, url: match[1]!, stderr: () => err })
    })
    child.stderr!.on("data", (chunk) => (err += chunk))
    child.on("exit", (code) => reject(new Error(`serve exited with ${code}: ${out}\n${err}`)))
  })

/** Runs `opencode serve` as a real process to its exit, with what it wrote. */
const runToExit = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [bin, "serve", ...args], {
      cwd: path.resolve(__dirname, "../../.."),
      env: {
        PATH: process.env.PATH ?? "",
        HOME: env.HOME ?? tempDir("home"),
        // never models.dev from a test: a test that wants a refresh names a loopback OPENCODE_MODELS_URL
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
    child.on("error", reject)
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.on("exit", resolve)
  )

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
    expect(await fetch(`${url}/api/health`).then((r) => r.json())).toEqual({ healthy: true })
    const created = await post(`${url}/api/session`, {})
    expect(created.data.id).toMatch(/^ses_/)
    expect(fs.existsSync(path.join(data, "opencode", "opencode.db"))).toBe(true)
    child.kill("SIGTERM")
    expect(await exited(child)).toBe(0)
  })

  it("honours OPENCODE_DB and keeps sessions across restarts", async () => {
    const db = path.join(tempDir("db"), "nested", "custom.db")
    const first = await serve(["--port", "0"], { OPENCODE_DB: db, XDG_DATA_HOME: tempDir("xdg") })
    const created = await post(`${first.url}/api/session`, {})
    first.child.kill("SIGINT")
    expect(await exited(first.child)).toBe(0)
    // A clean close checkpoints the WAL back into the database file.
    expect(fs.existsSync(`${db}-wal`)).toBe(false)

    const second = await serve(["--port", "0"], { OPENCODE_DB: db, XDG_DATA_HOME: tempDir("xdg") })
    const fetched = await fetch(`${second.url}/api/session/${created.data.id}`).then((r) => r.json())
    expect(fetched.data).toEqual(created.data)
    second.child.kill("SIGTERM")
    expect(await exited(second.child)).toBe(0)
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
    expect(result.code).toBe(1)
    expect(result.stdout).not.toContain("listening")
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
    expect(result.code).not.toBe(0)
    expect(result.stdout).not.toContain("listening")
    expect(result.stdout + result.stderr).toContain("--cors a.example/path: expected an origin")
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

  it("rejects an invalid option with a usage error", async () => {
    await expect(serve(["--port", "not-a-number"], { XDG_DATA_HOME: tempDir("xdg") })).rejects.toThrow(
      /exited with [1-9]/
    )
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
  })
})
