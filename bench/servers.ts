/**
 * What the process-level benches share: the loopback scripted LLM, `opencode serve` as a child
 * process (ours: the built bin; upstream: `opencode-ai` from npm, see upstream.ts), plain-`fetch`
 * HTTP helpers that work against both (the same `/api/...` contract), an SSE frame reader, and the
 * server's RSS and CPU read from `/proc`.
 *
 * Every server gets its own fresh directory tree (project, HOME, XDG dirs, database) under a
 * temporary root, and an environment with nothing from the caller's but PATH: no network is
 * reachable through it except loopback (proxy variables point at a closed loopback port, see
 * upstream.ts).
 */

import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { Effect, Exit, Scope } from "effect"
import { type LLMScript, ScriptedLLMServer } from "../packages/core/src/testing/index.js"

export type Implementation = "ours" | "upstream"

// ---------------------------------------------------------------------------------------------------
// The scripted LLM on loopback

export interface Llm {
  readonly server: ScriptedLLMServer.ScriptedLLMServer
  readonly close: () => Promise<void>
}

/** A ScriptedLLMServer that keeps no requests and answers every one through `respond`. */
export const startLlm = async (
  respond: (request: ScriptedLLMServer.RecordedRequest) => LLMScript.Turn | undefined,
  title: (request: ScriptedLLMServer.RecordedRequest) => LLMScript.Turn | undefined = respond
): Promise<Llm> => {
  const scope = Effect.runSync(Scope.make())
  const server = await Effect.runPromise(Scope.extend(ScriptedLLMServer.make({ record: false, respond, title }), scope))
  return { server, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** The text of a chat-completions request's system messages (for telling a title request apart). */
export const systemText = (body: any): string =>
  Array.isArray(body?.messages)
    ? body.messages
        .filter((m: any) => m?.role === "system")
        .map((m: any) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))
        .join("\n")
    : ""

/** The text of the last user message of a chat-completions request. */
export const lastUserText = (body: any): string => {
  const users = Array.isArray(body?.messages) ? body.messages.filter((m: any) => m?.role === "user") : []
  const last = users[users.length - 1]
  return last === undefined ? "" : typeof last.content === "string" ? last.content : JSON.stringify(last.content)
}

/** A title agent's request, ours (it never reaches `respond`) or upstream's ("title generator"). */
export const isTitleRequest = (body: any): boolean =>
  /title generator|generate a (brief |short )?title/i.test(systemText(body))

// ---------------------------------------------------------------------------------------------------
// Server processes

export interface ServerProcess {
  readonly implementation: Implementation
  readonly url: string
  readonly pid: number
  readonly directory: string
  /** Spawn → the first 200 answer of `GET /api/health`, ms. */
  readonly coldStartMs: number
  readonly child: ChildProcess
  /** SIGTERM, then waits for the exit (SIGKILL after 10 s; 120 s under `--cpu-prof`). */
  readonly stop: () => Promise<void>
}

export interface StartOptions {
  /** Parent of the server's own directories (created). */
  readonly root: string
  readonly llmUrl: string
  /** Our server only: write a V8 CPU profile into this directory when it exits. */
  readonly cpuProfileDir?: string | undefined
  /** Our server only: more `node` flags before the bin (V8 heap settings to compare, say). */
  readonly nodeFlags?: ReadonlyArray<string> | undefined
  /** Extra `opencode.json` fields. */
  readonly config?: Record<string, unknown>
  /** Our server only: more `opencode serve` arguments (e.g. `--runner-address`). */
  readonly args?: ReadonlyArray<string> | undefined
  /** Our server only: the built bin to run (another build, for an A/B run); default this checkout's. */
  readonly bin?: string | undefined
}

const bin = path.resolve(import.meta.dirname, "../packages/server/dist/bin.js")

/** The environment both servers get: isolated dirs, no public network, no background fetches. */
export const isolatedEnv = (root: string): Record<string, string> => ({
  PATH: process.env.PATH ?? "",
  HOME: path.join(root, "home"),
  XDG_DATA_HOME: path.join(root, "data"),
  XDG_CONFIG_HOME: path.join(root, "config"),
  XDG_CACHE_HOME: path.join(root, "cache"),
  XDG_STATE_HOME: path.join(root, "state"),
  TMPDIR: path.join(root, "tmp"),
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  OPENCODE_DISABLE_AUTOUPDATE: "1",
  OPENCODE_DISABLE_SHARE: "1",
  OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
  OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
  OPENCODE_DISABLE_CLAUDE_CODE: "1",
  OPENCODE_DISABLE_EXTERNAL_SKILLS: "1",
  // Anything that tries a non-loopback address through a proxy-aware client meets a closed port.
  HTTP_PROXY: "http://127.0.0.1:9",
  HTTPS_PROXY: "http://127.0.0.1:9",
  http_proxy: "http://127.0.0.1:9",
  https_proxy: "http://127.0.0.1:9",
  NO_PROXY: "127.0.0.1,localhost",
  no_proxy: "127.0.0.1,localhost"
})

/** The model both servers use: the scripted provider's only model. */
export const model = { providerID: "scripted", id: "m" } as const

const prepare = (options: StartOptions) => {
  const directory = path.join(options.root, "project")
  for (const dir of ["project", "home", "data", "config", "cache", "state", "tmp"])
    fs.mkdirSync(path.join(options.root, dir), { recursive: true })
  fs.writeFileSync(
    path.join(directory, "opencode.json"),
    JSON.stringify({ ...ScriptedLLMServer.config(options.llmUrl), ...options.config })
  )
  fs.writeFileSync(path.join(directory, "notes.txt"), "one\ntwo\nthree\n")
  return directory
}

/** Spawns a server and resolves once `/api/health` answers 200. */
export const startServer = async (
  implementation: Implementation,
  options: StartOptions & { readonly upstreamBinary?: string | undefined }
): Promise<ServerProcess> => {
  const directory = prepare(options)
  const env = isolatedEnv(options.root)
  let command: string
  let argv: Array<string>
  if (implementation === "ours") {
    const served = options.bin ?? bin
    if (!fs.existsSync(served)) throw new Error(`${served} is missing: run \`pnpm build\` (pnpm bench builds it)`)
    command = process.execPath
    argv = [
      ...(options.cpuProfileDir === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", options.cpuProfileDir]),
      ...(options.nodeFlags ?? []),
      served,
      "serve",
      "--port",
      "0",
      "--hostname",
      "127.0.0.1",
      ...(options.args ?? [])
    ]
  } else {
    if (options.upstreamBinary === undefined) throw new Error("upstream binary not given")
    command = options.upstreamBinary
    argv = ["serve", "--port", "0", "--hostname", "127.0.0.1", "--pure"]
  }
  const spawned = performance.now()
  const child = spawn(command, argv, { cwd: directory, env, stdio: ["ignore", "pipe", "pipe"] })
  let log = ""
  child.stderr!.on("data", (chunk) => {
    log = (log + chunk).slice(-4000)
  })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const url = await new Promise<string>((resolve, reject) => {
    let out = ""
    child.stdout!.on("data", (chunk) => {
      out += chunk
      const match = /listening on (http:\/\/[^\s]+)/.exec(out)
      if (match) resolve(match[1]!.replace(/\/$/, ""))
    })
    child.once("exit", (code) => reject(new Error(`${implementation} serve exited with ${code}: ${out}\n${log}`)))
  })
  for (;;) {
    const ok = await fetch(`${url}/api/health`)
      .then(async (response) => {
        await response.arrayBuffer()
        return response.status === 200
      })
      .catch(() => false)
    if (ok) break
    await sleep(2)
  }
  const coldStartMs = performance.now() - spawned
  return {
    implementation,
    url,
    pid: child.pid!,
    directory,
    coldStartMs,
    child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      // A server under --cpu-prof writes its profile on the way out: give it longer.
      const killer = setTimeout(() => child.kill("SIGKILL"), options.cpuProfileDir === undefined ? 10_000 : 120_000)
      child.kill("SIGTERM")
      await exited
      clearTimeout(killer)
    }
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

// ---------------------------------------------------------------------------------------------------
// /proc

const status = (pid: number, field: string): number => {
  const text = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)
  return match === null ? Number.NaN : Number(match[1]) / 1024
}

/** Resident set size now, MiB. */
export const rssMiB = (pid: number): number => status(pid, "VmRSS")
/** The process's peak resident set size so far (the kernel's high-water mark), MiB. */
export const peakRssMiB = (pid: number): number => status(pid, "VmHWM")

const ticksPerSecond = 100
/** User + system CPU time the process has used so far, ms (10 ms resolution). */
export const cpuMs = (pid: number): number => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  // After the command: state is field 3, utime 14, stime 15 (1-based over the whole line).
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond
}

// ---------------------------------------------------------------------------------------------------
// HTTP against either server

export interface Api {
  readonly url: string
  readonly directory: string
}

const headers = (api: Api) => ({ "content-type": "application/json", "x-opencode-directory": api.directory })

export const call = async (api: Api, method: string, route: string, body?: unknown): Promise<any> => {
  const response = await fetch(`${api.url}${route}`, {
    method,
    headers: headers(api),
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${method} ${route}: ${response.status} ${text.slice(0, 300)}`)
  if (text === "") return undefined
  const json = JSON.parse(text)
  return json !== null && typeof json === "object" && "data" in json && !("id" in json) ? json.data : json
}

/**
 * `POST /api/session/{id}/wait` over `node:http`, which has no headers timeout (fetch gives up after
 * 300 s without response headers, and a session under heavy load may take longer to go idle).
 */
export const waitIdle = (api: Api, sessionID: string): Promise<void> =>
  new Promise((resolve, reject) => {
    const request = http.request(
      `${api.url}/api/session/${sessionID}/wait`,
      { method: "POST", headers: { ...headers(api), "content-length": "2" } },
      (response) => {
        response.resume()
        response.once("end", () =>
          (response.statusCode ?? 500) < 300 ? resolve() : reject(new Error(`wait: ${response.statusCode}`))
        )
      }
    )
    request.once("error", reject)
    request.end("{}")
  })

/** Creates a session on the scripted model (both servers accept `model` at creation). */
export const createSession = async (api: Api): Promise<string> => {
  const session = await call(api, "POST", "/api/session", { model })
  return session.id as string
}

export const prompt = (api: Api, sessionID: string, text: string) =>
  call(api, "POST", `/api/session/${sessionID}/prompt`, { prompt: { text } })

/** GET returning only the body's size (pages: the body is read in full, not decoded). */
export const getBytes = async (api: Api, route: string): Promise<number> => {
  const response = await fetch(`${api.url}${route}`, { headers: headers(api) })
  const body = await response.arrayBuffer()
  if (response.status !== 200) throw new Error(`GET ${route}: ${response.status}`)
  return body.byteLength
}

export interface SseEvent {
  readonly type: string
  readonly at: number
  readonly raw: string
}

/**
 * Reads a session's event stream (`GET /api/session/{id}/event`): calls `onEvent` with each frame's
 * `type` until it returns true or `signal` aborts; resolves with the events read.
 */
export const readEvents = async (
  api: Api,
  sessionID: string,
  onEvent: (event: SseEvent, index: number) => boolean,
  signal?: AbortSignal
): Promise<ReadonlyArray<SseEvent>> => {
  const controller = new AbortController()
  signal?.addEventListener("abort", () => controller.abort())
  const response = await fetch(`${api.url}/api/session/${sessionID}/event`, {
    headers: { ...headers(api), accept: "text/event-stream" },
    signal: controller.signal
  })
  if (response.status !== 200 || response.body === null) throw new Error(`event stream: ${response.status}`)
  const events: Array<SseEvent> = []
  const decoder = new TextDecoder()
  let pending = ""
  try {
    const reader = response.body.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      pending += decoder.decode(value, { stream: true })
      let end = pending.indexOf("\n\n")
      while (end !== -1) {
        const frame = pending.slice(0, end)
        pending = pending.slice(end + 2)
        end = pending.indexOf("\n\n")
        const data = frame
          .split("\n")
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).trimStart())
          .join("\n")
        if (data === "") continue
        let type = ""
        try {
          type = String(JSON.parse(data).type ?? "")
        } catch {
          type = ""
        }
        const event = { type, at: performance.now(), raw: data }
        events.push(event)
        if (onEvent(event, events.length - 1)) {
          controller.abort()
          return events
        }
      }
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error
  }
  return events
}
