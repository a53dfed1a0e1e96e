import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as NodePty from "@lydell/node-pty"
import { LLMScript, ScriptedLLMServer, TestDatabase } from "@opencode-ai/core/testing"
import { Effect, Exit, Scope } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { tempDir } from "./harness.js"

/**
 * The log file of real `opencode serve` processes (the built binary) over whole sessions against a
 * loopback scripted LLM: what it tells at INFO, that session work carries its sessionID, and that no
 * credential ever reaches it, at DEBUG included.
 */

const bin = path.resolve(__dirname, "../dist/bin.js")
const running: Array<ChildProcess> = []
afterEach(() => {
  for (const child of running.splice(0)) child.kill("SIGKILL")
})

const apiKey = "sk-LOGTEST-9d1c77e2b4a0f3e8"
const password = "pw-LOGTEST-51f0c2aa93"
const username = "opencode"
const basic = Buffer.from(`${username}:${password}`).toString("base64")

/** Starts `opencode serve` and resolves with its URL once it listens. */
const serve = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ child: ChildProcess; url: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [bin, "serve", "--port", "0", ...args], {
      cwd: path.resolve(__dirname, "../../.."),
      env: {
        PATH: process.env.PATH ?? "",
        OPENCODE_DISABLE_MODELS_FETCH: "1",
        ...TestDatabase.serverEnv(env.XDG_DATA_HOME ?? tempDir("pg")),
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
      if (match) resolve({ child, url: match[1]! })
    })
    child.stderr!.on("data", (chunk) => (err += chunk))
    child.on("exit", (code) => reject(new Error(`serve exited with ${code}: ${out}\n${err}`)))
  })

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve(child.exitCode) : child.on("exit", resolve)
  )

/** A JSON call with the server's Basic credentials. */
const call = async (url: string, method: string, route: string, body?: unknown) => {
  const response = await fetch(`${url}${route}`, {
    method,
    headers: {
      authorization: `Basic ${basic}`,
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
}

/** Polls the session's pending permission requests until there is one. */
const pendingPermission = async (url: string, sessionID: string) => {
  for (let i = 0; i < 2400; i++) {
    const listed = await call(url, "GET", `/api/session/${sessionID}/permission`)
    if (listed.body.data.length > 0) return listed.body.data[0] as { id: string; action: string }
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error("no permission request")
}

/** One logfmt line as its fields (quoted values unescaped). */
const parse = (line: string): Record<string, string> => {
  const fields: Record<string, string> = {}
  for (const m of line.matchAll(/([^\s=]+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    fields[m[1]!] = m[2]!.startsWith('"') ? JSON.parse(m[2]!) : m[2]!
  }
  return fields
}

const logDir = (data: string) => path.join(data, "opencode", "log")
/** Every line of the live log file and of its rotated ones, oldest first. */
const logLines = (data: string) =>
  fs
    .readdirSync(logDir(data))
    .filter((name) => name.startsWith("opencode.log"))
    .sort((a, b) => (b.split(".")[2] ?? "0").localeCompare(a.split(".")[2] ?? "0"))
    .flatMap((name) => fs.readFileSync(path.join(logDir(data), name), "utf8").split("\n"))
    .filter((line) => line !== "")

const { reply, toolCall, text, finish, usage, httpError, hold, gate } = LLMScript

/** A config home whose provider is the scripted LLM, its key from the environment, and bash asking first. */
const configHome = (llmURL: string) => {
  const home = tempDir("config")
  fs.mkdirSync(path.join(home, "opencode"))
  const config = ScriptedLLMServer.config(llmURL) as any
  config.provider.scripted.options.apiKey = "{env:SCRIPTED_API_KEY}"
  config.agent = { build: { permission: { bash: "ask" } } }
  fs.writeFileSync(path.join(home, "opencode", "opencode.json"), JSON.stringify(config))
  return home
}

/**
 * prompt → provider 500 → retry → a bash call that asks permission → reply `once` → the tool runs →
 * the final answer; resolves with the session's id once it is idle.
 */
const promptToolReply = async (llm: ScriptedLLMServer.ScriptedLLMServer, url: string) => {
  await Effect.runPromise(
    llm.enqueue(
      httpError(500, { headers: { "retry-after-ms": "20" } }),
      reply(
        toolCall("call_echo", "bash", { command: "echo hello" }),
        usage({ input: 40, output: 8 }),
        finish("tool-calls")
      ),
      reply(text("It printed hello."), usage({ input: 60, output: 5 }), finish("stop"))
    )
  )
  const session = await call(url, "POST", "/api/session", {})
  expect(session.status).toBe(200)
  const sessionID: string = session.body.data.id
  expect((await call(url, "POST", `/api/session/${sessionID}/prompt`, { prompt: { text: "say hello" } })).status).toBe(
    200
  )
  const request = await pendingPermission(url, sessionID)
  expect(request.action).toBe("bash")
  expect(
    (await call(url, "POST", `/api/session/${sessionID}/permission/${request.id}/reply`, { reply: "once" })).status
  ).toBe(204)
  await call(url, "POST", `/api/session/${sessionID}/wait`)
  return sessionID
}

/** Lines that belong to no session: the listener's own, and requests whose route names none. */
const sessionless = (fields: Record<string, string>) =>
  fields.msg!.startsWith("opencode server") ||
  (fields.msg === "request" && !fields.route!.includes("{sessionID}")) ||
  fields.msg!.startsWith("Config read from") ||
  fields.msg === "recovered after restart"

describe("the log file of opencode serve", () => {
  it("tells one prompt → tool → reply session in under 40 lines at INFO, each of its lines with its sessionID", async () => {
    const scope = Effect.runSync(Scope.make())
    try {
      const llm = await Effect.runPromise(
        ScriptedLLMServer.make({ title: () => reply(text("Saying hello")) }).pipe(Scope.extend(scope))
      )
      const data = tempDir("xdg")
      const env = {
        HOME: tempDir("home"),
        XDG_DATA_HOME: data,
        XDG_CONFIG_HOME: configHome(llm.url),
        SCRIPTED_API_KEY: apiKey,
        OPENCODE_SERVER_PASSWORD: password
      }
      const { child, url } = await serve([], env)
      const sessionID = await promptToolReply(llm, url)
      child.kill("SIGTERM")
      expect(await exited(child)).toBe(0)

      const lines = logLines(data)
      expect(lines.length).toBeLessThan(40)
      const entries = lines.map(parse)
      expect(entries.every((e) => e.level !== "DEBUG")).toBe(true)
      const find = (predicate: (e: Record<string, string>) => boolean) => entries.filter(predicate)

      expect(entries[0]).toMatchObject({ level: "INFO", msg: "opencode server listening" })
      expect(find((e) => e.msg === "request").map((e) => `${e.method} ${e.route} ${e.status}`)).toEqual([
        "POST /api/session 200",
        "POST /api/session/{sessionID}/prompt 200",
        "POST /api/session/{sessionID}/permission/{requestID}/reply 204",
        "POST /api/session/{sessionID}/wait 204"
      ])
      expect(find((e) => e.msg === "provider call failed")).toEqual([
        expect.objectContaining({ level: "WARN", provider: "scripted", model: "m", attempt: "1", status: "500" })
      ])
      expect(find((e) => e.msg === "retrying the provider call")).toEqual([
        expect.objectContaining({ attempt: "2", delayMs: "20" })
      ])
      expect(find((e) => e.msg === "provider call")).toEqual([
        expect.objectContaining({
          attempt: "2",
          status: "ok",
          finish: "tool-calls",
          inputTokens: "40",
          outputTokens: "8"
        }),
        expect.objectContaining({ attempt: "1", status: "ok", finish: "stop", inputTokens: "60", outputTokens: "5" })
      ])
      for (const e of find((e) => e.msg === "provider call")) expect(Number(e.latencyMs)).toBeGreaterThanOrEqual(0)
      expect(find((e) => e.msg === "permission asked")).toEqual([
        expect.objectContaining({ action: "bash", resources: "1", origin: "runner" })
      ])
      expect(find((e) => e.msg === "permission replied")).toEqual([expect.objectContaining({ reply: "once" })])
      expect(find((e) => e.msg === "tool ran")).toEqual([
        expect.objectContaining({ tool: "bash", callID: "call_echo", outcome: "success" })
      ])
      expect(entries.at(-2)).toMatchObject({ msg: "opencode server shutting down" })
      expect(entries.at(-1)).toMatchObject({ msg: "opencode server stopped" })

      // The story's order: asked before replied, replied before the tool ran, the final call last.
      const at = (msg: string) => entries.findIndex((e) => e.msg === msg)
      expect(at("permission asked")).toBeLessThan(at("permission replied"))
      expect(at("permission replied")).toBeLessThan(at("tool ran"))
      const lastCall = entries.length - 1 - [...entries].reverse().findIndex((e) => e.msg === "provider call")
      expect(at("tool ran")).toBeLessThan(lastCall)

      for (const e of entries) {
        if (!sessionless(e)) expect(e, JSON.stringify(e)).toMatchObject({ sessionID })
      }
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }, 300_000)

  it("never holds the API key or the password, at DEBUG, over a session, a cut-off shutdown, a crash and a recovery", async () => {
    const scope = Effect.runSync(Scope.make())
    try {
      const llm = await Effect.runPromise(
        ScriptedLLMServer.make({ title: () => reply(text("Saying hello")) }).pipe(Scope.extend(scope))
      )
      const data = tempDir("xdg")
      const env = {
        HOME: tempDir("home"),
        XDG_DATA_HOME: data,
        XDG_CONFIG_HOME: configHome(llm.url),
        SCRIPTED_API_KEY: apiKey,
        OPENCODE_SERVER_PASSWORD: password
      }
      const args = ["--log-level", "DEBUG"]

      // 1. A whole session, then a session whose provider stream is cut off by the shutdown.
      const first = await serve(args, env)
      const done = await promptToolReply(llm, first.url)
      // An event stream opened with a stream token in its query string.
      const { token } = (await call(first.url, "POST", "/api/event/token")).body
      expect(typeof token).toBe("string")
      const controller = new AbortController()
      const stream = await fetch(`${first.url}/api/event?token=${encodeURIComponent(token)}`, {
        signal: controller.signal
      })
      expect(stream.status).toBe(200)
      controller.abort()
      const held = gate()
      await Effect.runPromise(llm.enqueue(reply(text("Thinking"), hold(held), text("…"), finish("stop"))))
      const cut = (await call(first.url, "POST", "/api/session", {})).body.data.id as string
      await call(first.url, "POST", `/api/session/${cut}/prompt`, { prompt: { text: "think long" } })
      await Effect.runPromise(held.reached)
      first.child.kill("SIGTERM")
      expect(await exited(first.child)).toBe(0)

      // 2. A restart, a session whose provider stream is running when the process is killed.
      const second = await serve(args, env)
      const crashing = gate()
      await Effect.runPromise(llm.enqueue(reply(text("Half"), hold(crashing), finish("stop"))))
      const crashed = (await call(second.url, "POST", "/api/session", {})).body.data.id as string
      await call(second.url, "POST", `/api/session/${crashed}/prompt`, { prompt: { text: "crash" } })
      await Effect.runPromise(crashing.reached)
      // Killed once the Step is on record (its first output committed), so a Step is left open.
      for (let i = 0; i < 1200; i++) {
        const messages = await call(second.url, "GET", `/api/session/${crashed}/message`)
        if (JSON.stringify(messages.body).includes('"assistant"')) break
        await new Promise((r) => setTimeout(r, 50))
      }
      second.child.kill("SIGKILL")
      await exited(second.child)

      // 3. A restart that recovers what the crash left open.
      const third = await serve(args, env)
      third.child.kill("SIGTERM")
      expect(await exited(third.child)).toBe(0)

      // The key and the password were really in use.
      const requests = await Effect.runPromise(llm.requests)
      expect(requests.some((r) => JSON.stringify(r.headers).includes(apiKey))).toBe(true)

      const log = logLines(data).join("\n")
      for (const secret of [apiKey, password, basic, token]) expect(log).not.toContain(secret)
      // Nor the event stream token or a query string of any request line.
      const entries = logLines(data).map(parse)
      for (const e of entries.filter((e) => e.msg === "request")) expect(e.route).not.toContain("?")
      expect(entries.filter((e) => e.msg === "request" && e.route === "/api/event")).not.toEqual([])
      // At DEBUG too, whatever concerns a session says which.
      for (const e of entries) {
        if (!sessionless(e) && !/migration/i.test(e.msg!)) expect(e, JSON.stringify(e)).toHaveProperty("sessionID")
      }

      const msgs = (sessionID: string) => entries.filter((e) => e.sessionID === sessionID).map((e) => e.msg)
      expect(entries.some((e) => e.level === "DEBUG" && e.msg === "request" && e.method === "GET")).toBe(true)
      expect(msgs(done)).toEqual(
        expect.arrayContaining(["provider call failed", "retrying the provider call", "provider call", "tool ran"])
      )
      expect(msgs(cut)).toEqual(expect.arrayContaining(["shutdown interrupts the session", "step interrupted"]))
      expect(entries.find((e) => e.sessionID === cut && e.msg === "step interrupted")).toMatchObject({
        during: "provider stream"
      })
      expect(
        entries.find((e) => e.sessionID === crashed && e.msg === "settled what a stopped host left open")
      ).toMatchObject({ failedSteps: "1" })
      expect(entries.find((e) => e.msg === "recovered after restart")).toMatchObject({ failedSteps: "1" })
      expect(entries.filter((e) => e.msg === "opencode server listening")).toHaveLength(3)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }, 300_000)

  it("--print-logs on a terminal writes pretty lines, coloured unless NO_COLOR is set", async () => {
    /** Runs `opencode serve --print-logs` in a pseudo-terminal until its listening log line, then stops it. */
    const onTerminal = (env: Record<string, string>) =>
      new Promise<string>((resolve, reject) => {
        const terminal = NodePty.spawn(process.execPath, [bin, "serve", "--port", "0", "--print-logs"], {
          cwd: path.resolve(__dirname, "../../.."),
          cols: 200,
          rows: 40,
          env: {
            PATH: process.env.PATH ?? "",
            HOME: tempDir("home"),
            XDG_DATA_HOME: tempDir("xdg"),
            XDG_CONFIG_HOME: tempDir("config"),
            OPENCODE_DISABLE_MODELS_FETCH: "1",
            TERM: "xterm-256color",
            ...env
          }
        })
        let out = ""
        let stopping = false
        terminal.onData((data) => {
          out += data
          // Both the URL on stdout and the log line on stderr: then stop, and resolve at exit.
          if (!stopping && /listening on http/.test(out) && /INFO.*opencode server listening/.test(out)) {
            stopping = true
            terminal.kill("SIGTERM")
          }
        })
        terminal.onExit(({ exitCode }) => (stopping ? resolve(out) : reject(new Error(`exited ${exitCode}: ${out}`))))
      })
    const esc = String.fromCharCode(27)

    const coloured = await onTerminal({})
    const line = coloured.split(/\r?\n/).find((l) => l.includes("opencode server listening") && l.includes("INFO"))!
    expect(line).toContain(`${esc}[32mINFO `)
    expect(line).not.toContain("level=")
    expect(line).toMatch(/\d\d:\d\d:\d\d\.\d{3}/)

    const plain = await onTerminal({ NO_COLOR: "1" })
    const plainLine = plain.split(/\r?\n/).find((l) => l.includes("opencode server listening") && l.includes("INFO"))!
    expect(plainLine).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}opencode server listening url=http:\/\/127\.0\.0\.1:\d+$/)
    expect(plain).not.toContain(`${esc}[32m`)
  }, 300_000)
})
