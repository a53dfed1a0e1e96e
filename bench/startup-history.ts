/**
 * Cold start with history: `opencode serve` (the built bin) from process spawn to the first 200 on
 * `GET /api/health`, over an empty database and over one grown by many sessions and crash restarts.
 *
 *   pnpm --filter @opencode-ai/server run build
 *   node --import tsx bench/startup-history.ts [--crashes 1000] [--mb 25] [--rounds 15]
 *
 * The history database is built in two parts, both real:
 *   1. growth: sessions prompted in process (Core over the same file, a ScriptedLLMServer answering
 *      every Step with a few KB of text and one tool call) until the file reaches `--mb` MB;
 *   2. crash restarts: `--crashes` times, `opencode serve` is started on the file, a session is
 *      prompted over HTTP, and once the provider request arrives (the Step is open: its reply is
 *      held) the server is killed with SIGKILL. Every restart's start-up Recovery settles what the
 *      previous one left open.
 * Then both databases are started alternately (interleaved rounds, so noise hits both alike; one
 * unmeasured start first settles the last crash), and the medians are printed with their ratio. The
 * issue 18 target is a ratio ≤ 1.2: start-up and Recovery do not scan history. Nothing is asserted.
 */

import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { Effect, Logger, LogLevel } from "effect"
import { Locations, SessionInput, SessionRunner, Sessions, ToolRegistry } from "../packages/core/src/index.js"
import { LLMScript, ScriptedLLMServer } from "../packages/core/src/testing/index.js"
import { CoreHost } from "./core-host.js"
import { emit, numberFlag } from "./figures.js"

const crashes = numberFlag("crashes", 1000)
const targetBytes = numberFlag("mb", 25) * 1024 * 1024
const rounds = numberFlag("rounds", 15)

const bin = path.resolve(import.meta.dirname, "../packages/server/dist/bin.js")
const { reply, text, toolCall, finish, hold } = LLMScript

const median = (samples: ReadonlyArray<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** The database file's size (its WAL holds page copies, not growth; it is folded in on close). */
const fileSize = (file: string) => fs.statSync(file, { throwIfNoEntry: false })?.size ?? 0

/** One data home: its project directory (with the scripted provider's opencode.json) and environment. */
const home = (root: string, name: string, llmURL: string) => {
  const base = path.join(root, name)
  const project = path.join(base, "project")
  fs.mkdirSync(project, { recursive: true })
  fs.writeFileSync(path.join(project, "opencode.json"), JSON.stringify(ScriptedLLMServer.config(llmURL)))
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: path.join(base, "home"),
    XDG_DATA_HOME: path.join(base, "data"),
    XDG_CONFIG_HOME: path.join(base, "config"),
    XDG_STATE_HOME: path.join(base, "state"),
    XDG_CACHE_HOME: path.join(base, "cache"),
    OPENCODE_DISABLE_MODELS_FETCH: "1"
  }
  return { project, env, database: path.join(base, "data", "opencode", "opencode.db") }
}
type Home = ReturnType<typeof home>

/** Spawns `opencode serve`; resolves with the child, its URL, and the ms from spawn to the first 200 on /api/health. */
const start = (h: Home) =>
  new Promise<{ readonly child: ChildProcess; readonly url: string; readonly ms: number }>((resolve, reject) => {
    const begun = performance.now()
    const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--hostname", "127.0.0.1"], {
      cwd: h.project,
      env: h.env,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    child.stderr!.on("data", (chunk) => (err += chunk))
    child.once("exit", (code) => reject(new Error(`opencode serve exited with ${code}: ${out}\n${err}`)))
    child.stdout!.on("data", async (chunk) => {
      const had = /listening on (http:\/\/\S+)/.test(out)
      out += chunk
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (had || !match) return
      const url = match[1]!
      for (;;) {
        const response = await fetch(`${url}/api/health`).catch(() => undefined)
        if (response?.status === 200) {
          await response.arrayBuffer()
          child.removeAllListeners("exit")
          return resolve({ child, url, ms: performance.now() - begun })
        }
        await new Promise((wake) => setTimeout(wake, 1))
      }
    })
  })

const stop = (child: ChildProcess, signal: NodeJS.Signals = "SIGTERM") =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill(signal)
  })

const post = async (url: string, route: string, body: unknown) => {
  const response = await fetch(`${url}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  if (!response.ok) throw new Error(`${route}: ${response.status} ${await response.text()}`)
  return response.status === 204 ? undefined : ((await response.json()) as any)
}

/** Part 1: sessions prompted in process until the database file is `targetBytes` large. */
const grow = (h: Home, llm: ScriptedLLMServer.ScriptedLLMServer) =>
  Effect.gen(function* () {
    const context = yield* CoreHost.build({
      databaseFile: h.database,
      directory: h.project,
      configDir: h.env.XDG_CONFIG_HOME,
      config: ScriptedLLMServer.config(llm.url)
    })
    const sessions = Effect.runSync(Effect.provide(Sessions.Service, context))
    const input = Effect.runSync(Effect.provide(SessionInput.Service, context))
    const runner = Effect.runSync(Effect.provide(SessionRunner.Service, context))
    const location = yield* Effect.provide(
      Effect.flatMap(Locations.Service, (l) => l.resolve({ directory: h.project })),
      context
    )
    yield* Effect.provide(
      Effect.flatMap(ToolRegistry.Service, (registry) =>
        registry.register({
          name: "noop",
          description: "Does nothing",
          inputSchema: { type: "object", properties: {} },
          execute: () => Effect.succeed({ content: [{ type: "text" as const, text: "ok ".repeat(200) }] })
        })
      ),
      context
    )
    const body = "history ".repeat(400)
    let prompts = 0
    while (fileSize(h.database) < targetBytes) {
      const session = yield* sessions.create({ location })
      for (let turn = 0; turn < 5; turn++) {
        yield* llm.enqueue(
          reply(toolCall(`call_${prompts}`, "noop", {}), finish("tool-calls")),
          reply(text(body), finish("stop"))
        )
        yield* input.admit(session.id, { prompt: { text: `prompt ${prompts} ${body}` } })
        yield* runner.wake(session.id)
        yield* runner.wait(session.id)
        prompts++
      }
    }
    return prompts
  }).pipe(Effect.scoped)

/** Part 2: start, prompt, kill with SIGKILL while the Step's provider request is held open. */
const crashRestarts = (h: Home, llm: ScriptedLLMServer.ScriptedLLMServer) =>
  Effect.gen(function* () {
    for (let i = 0; i < crashes; i++) {
      const { child, url } = yield* Effect.promise(() => start(h))
      const gate = LLMScript.gate()
      yield* llm.enqueue(reply(hold(gate), text("never sent"), finish("stop")))
      const session = yield* Effect.promise(() => post(url, "/api/session", {}))
      yield* Effect.promise(() =>
        post(url, `/api/session/${session.data.id}/prompt`, { prompt: { text: `crash ${i}` } })
      )
      yield* gate.reached
      yield* Effect.promise(() => stop(child, "SIGKILL"))
      if ((i + 1) % 100 === 0) console.error(`  ${i + 1}/${crashes} crash restarts, ${mb(fileSize(h.database))} MB`)
    }
  })

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1)

const main = Effect.gen(function* () {
  if (!fs.existsSync(bin)) return yield* Effect.dieMessage(`${bin} is missing: run \`pnpm build\` first`)
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "startup-history-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true })))
  // Titles are answered (a session's first Step asks for one) and nothing is recorded: memory stays flat.
  const llm = yield* ScriptedLLMServer.make({
    record: false,
    title: () => reply(text("History"), finish("stop"))
  })
  const empty = home(root, "empty", llm.url)
  const history = home(root, "history", llm.url)

  console.error(`growing the history database to ${mb(targetBytes)} MB…`)
  const prompts = yield* grow(history, llm)
  console.error(`  ${prompts} prompts, ${mb(fileSize(history.database))} MB; ${crashes} crash restarts…`)
  yield* crashRestarts(history, llm)
  // The empty one is created and migrated by a first start; the history one settles its last crash.
  for (const h of [empty, history]) {
    const { child } = yield* Effect.promise(() => start(h))
    yield* Effect.promise(() => stop(child))
  }

  const samples = { empty: [] as Array<number>, history: [] as Array<number> }
  for (let round = 0; round < rounds; round++) {
    for (const [name, h] of round % 2 === 0
      ? ([
          ["empty", empty],
          ["history", history]
        ] as const)
      : ([
          ["history", history],
          ["empty", empty]
        ] as const)) {
      const { child, ms } = yield* Effect.promise(() => start(h))
      samples[name].push(ms)
      yield* Effect.promise(() => stop(child))
    }
  }
  const e = median(samples.empty)
  const hist = median(samples.history)
  const rows: ReadonlyArray<readonly [string, string]> = [
    ["empty database", e.toFixed(1)],
    [`${mb(fileSize(history.database))} MB database after ${crashes} crash restarts`, hist.toFixed(1)],
    ["ratio (target ≤ 1.2)", (hist / e).toFixed(2)]
  ]
  const width = Math.max(...rows.map(([label]) => label.length))
  console.log(`cold start → first 200 on /api/health, median of ${rounds} rounds (ms)`)
  for (const [label, value] of rows) console.log(`  ${label.padEnd(width)}  ${value.padStart(9)}`)
  // The figure that answers the row of issue 18's table (bench/README.md, "Convention").
  emit([{ name: "cold-start-25mb-ratio", value: hist / e, unit: "x" }])
}).pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.Error))

Effect.runPromise(main).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
