/**
 * Start-up and memory of `opencode serve` (the built bin, `pnpm build`), as a user runs it.
 *
 *   node --import tsx bench/startup.ts [--runs 7] [--sessions 1000] [--bin path/to/bin.js]
 *
 * Each run starts the server as a child process in a fresh data directory twice: the first start
 * creates and migrates the database, the second (the figure to quote) opens it as every later start
 * does. A start is timed from `spawn` to the first 200 answer on `GET /api/health` (the first line on
 * stdout says where it listens; the request goes out as soon as it is read); the CPU time the child
 * used until then is read from `/proc/<pid>/stat` where there is one (it holds on a loaded machine,
 * where the wall time does not). Then the idle figures, ten seconds after that 200 (after the
 * server's first Idle Collection, see below; RSS two seconds after it is printed beside): RSS as the
 * operating system counts it, and the heap in use before and after a full collection (`memory-probe.cjs`,
 * preloaded with `--require`, answers SIGUSR2 with `process.memoryUsage()`); from the second to the
 * tenth second, the server's CPU time and the fibers it starts (`effect_fiber_started` on `/metrics`),
 * per second.
 *
 * Last, one server creates `--sessions` sessions over HTTP (the generated Promise client) and sends
 * one prompt to each, waiting for each to go idle, against a ScriptedLLMServer on 127.0.0.1 that
 * answers every request at once with a short text; the same memory figures are printed after ten
 * idle seconds, by which time the server's Idle Collection (`packages/server/src/idle-collection.ts`:
 * a collection on a quiet second, a second one on the next, V8's release of the pages, and after six
 * quiet seconds the collection that lets V8 shrink its young generation) has given back what it
 * will; the RSS two seconds after the load is printed beside it. Figures are medians over the runs,
 * printed, never asserted (DESIGN §7.10).
 *
 * The bin runs its bundle through V8's code cache (`packages/server/src/code-cache.ts`), in a
 * directory of this bench's own (`NODE_COMPILE_CACHE`), empty when it begins: the first two starts
 * compile everything (the second saves the cache, two seconds in), the later ones use it. The
 * medians are of starts with the cache, as a user's server starts after its first; the very first
 * start is printed on its own.
 *
 * `--bin` measures another build (say, the bin of a commit to compare with), which must find its
 * native dependencies (`better-sqlite3`) the way `packages/server/dist/bin.js` does.
 */

import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { createOpencodeClient } from "@opencode-ai/client"
import { Effect, Exit, Scope } from "effect"
import { LLMScript, ScriptedLLMServer } from "../packages/core/src/testing/index.js"
import { emit, numberFlag } from "./figures.js"

const runs = Math.max(1, numberFlag("runs", 7))
const sessionCount = numberFlag("sessions", 1000)
const binAt = process.argv.indexOf("--bin")
const bin = path.resolve(
  binAt === -1 ? path.join(import.meta.dirname, "../packages/server/dist/bin.js") : process.argv[binAt + 1]!
)
const probe = path.resolve(import.meta.dirname, "memory-probe.cjs")
const MiB = 1024 * 1024
const clockTicks = 100 // USER_HZ on Linux

interface Memory {
  readonly rss: number
  readonly heapUsed: number
  readonly rssAfterGc: number
  readonly heapUsedAfterGc: number
  readonly heapTotalAfterGc: number
}

interface Server {
  readonly child: ChildProcess
  readonly url: string
  /** spawn → first 200 on /api/health, ms. */
  readonly startMs: number
  /** CPU the child used until then, ms (NaN without /proc). */
  readonly startCpuMs: number
  readonly memory: () => Promise<Memory>
  readonly stop: () => Promise<void>
}

const cpuMs = (pid: number): number => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks
  } catch {
    return Number.NaN
  }
}

/** The child's resident set as the kernel counts it, bytes (NaN without /proc). */
const rssOf = (pid: number | undefined): number => {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) * 1024
  } catch {
    return Number.NaN
  }
}

const health = (url: string) =>
  new Promise<number>((resolve, reject) => {
    const request = http.get(`${url}/api/health`, { agent: false }, (response) => {
      response.resume()
      response.on("end", () => resolve(response.statusCode ?? 0))
    })
    request.on("error", reject)
  })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Effect's `effect_fiber_started` counter on the server's `/metrics` (every fiber it has started). */
const fibersStarted = async (url: string): Promise<number> => {
  const text = await (await fetch(`${url}/metrics`)).text()
  return Number(/^effect_fiber_started(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? Number.NaN)
}

/** The code cache directory of this run of the bench (see above). */
let compileCache = ""

const start = async (root: string, directory: string): Promise<Server> => {
  const began = performance.now()
  const child = spawn(process.execPath, ["--require", probe, bin, "serve", "--port", "0", "--hostname", "127.0.0.1"], {
    cwd: directory,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: path.join(root, "home"),
      TMPDIR: os.tmpdir(),
      NODE_COMPILE_CACHE: compileCache,
      XDG_DATA_HOME: path.join(root, "data"),
      XDG_CONFIG_HOME: path.join(root, "config"),
      XDG_CACHE_HOME: path.join(root, "cache"),
      XDG_STATE_HOME: path.join(root, "state"),
      OPENCODE_DISABLE_MODELS_FETCH: "1"
    },
    stdio: ["ignore", "pipe", "inherit", "pipe"]
  })
  const url = await new Promise<string>((resolve, reject) => {
    let out = ""
    child.stdout!.on("data", (chunk) => {
      out += chunk
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (match) resolve(match[1]!)
    })
    child.once("exit", (code) => reject(new Error(`opencode serve exited with ${code}: ${out}`)))
  })
  let status = await health(url).catch(() => 0)
  while (status !== 200) {
    await sleep(1)
    status = await health(url).catch(() => 0)
  }
  const startMs = performance.now() - began
  const startCpuMs = cpuMs(child.pid!)
  const lines: Array<(memory: Memory) => void> = []
  let pending = ""
  child.stdio[3]!.on("data", (chunk) => {
    pending += String(chunk)
    const parts = pending.split("\n")
    pending = parts.pop()!
    for (const line of parts) lines.shift()?.(JSON.parse(line) as Memory)
  })
  return {
    child,
    url,
    startMs,
    startCpuMs,
    memory: () =>
      new Promise<Memory>((resolve) => {
        lines.push(resolve)
        child.kill("SIGUSR2")
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      })
  }
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = values.filter((value) => !Number.isNaN(value)).sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const main = async () => {
  if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run \`pnpm build\` first`)
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-startup-")))
  compileCache = path.join(base, "compile-cache")
  const scope = Effect.runSync(Scope.make())
  try {
    const first: Array<Server> = []
    const again: Array<Server> = []
    const idle: Array<Memory> = []
    const idleSoon: Array<number> = []
    const idleCpu: Array<number> = []
    const idleFibers: Array<number> = []
    for (let run = 0; run < runs; run++) {
      const root = path.join(base, `run-${run}`)
      const directory = path.join(root, "project")
      fs.mkdirSync(directory, { recursive: true })
      const created = await start(root, directory)
      await created.stop()
      first.push(created)
      const server = await start(root, directory)
      again.push(server)
      await sleep(2000)
      idleSoon.push(rssOf(server.child.pid))
      const idleFrom = cpuMs(server.child.pid!)
      const fibersFrom = await fibersStarted(server.url)
      await sleep(8000)
      idleCpu.push((cpuMs(server.child.pid!) - idleFrom) / 8)
      // Less what a reading's own request starts (the difference of two readings back to back).
      const fibersTo = await fibersStarted(server.url)
      const perReading = (await fibersStarted(server.url)) - fibersTo
      idleFibers.push((fibersTo - fibersFrom - perReading) / 8)
      idle.push(await server.memory())
      await server.stop()
    }

    // A server that served `sessionCount` sessions with one prompt each.
    const turn = LLMScript.reply(LLMScript.text("done"), LLMScript.finish("stop"))
    const llm = await Effect.runPromise(
      Scope.extend(ScriptedLLMServer.make({ record: false, respond: () => turn, title: () => turn }), scope)
    )
    const root = path.join(base, "load")
    const directory = path.join(root, "project")
    fs.mkdirSync(directory, { recursive: true })
    fs.writeFileSync(path.join(directory, "opencode.json"), JSON.stringify(ScriptedLLMServer.config(llm.url)))
    const server = await start(root, directory)
    let loaded: Memory
    let loadMs: number
    let rssSoon = Number.NaN
    try {
      const client = createOpencodeClient({ baseUrl: server.url })
      const began = performance.now()
      let next = 0
      const worker = async () => {
        while (next < sessionCount) {
          next++
          const session = await client.sessions.create({})
          await client.sessions.prompt({ sessionID: session.id, prompt: { text: "hello" } })
          await client.sessions.wait({ sessionID: session.id })
        }
      }
      await Promise.all(Array.from({ length: 4 }, worker))
      loadMs = performance.now() - began
      await sleep(2000)
      rssSoon = rssOf(server.child.pid)
      await sleep(8000)
      loaded = await server.memory()
    } finally {
      await server.stop()
    }

    const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`
    const ms = (value: number) => (Number.isNaN(value) ? "n/a" : `${value.toFixed(0)} ms`)
    const cpus = os.cpus()
    console.log(
      `opencode serve start-up and memory: ${runs} run(s), medians; ${path.relative(process.cwd(), bin)}\n` +
        `node ${process.version}, ${os.platform()} ${os.arch()}, ${cpus.length} × ${cpus[0]?.model ?? "cpu"}, load average ${os
          .loadavg()
          .map((load) => load.toFixed(1))
          .join(" ")}\n`
    )
    const rows: Array<readonly [string, string, string]> = [
      ["cold start → first 200 on /api/health", ms(median(again.map((s) => s.startMs))), "≤ 150 ms"],
      ["    CPU used by the server until then", ms(median(again.map((s) => s.startCpuMs))), ""],
      ["first start (new data directory) → first 200", ms(median(first.map((s) => s.startMs))), ""],
      ["    CPU used by the server until then", ms(median(first.map((s) => s.startCpuMs))), ""],
      ["the very first start (empty code cache, new data directory)", ms(first[0]!.startMs), ""],
      ["    CPU used by the server until then", ms(first[0]!.startCpuMs), ""],
      ["RSS idle (10 s after the first 200)", mib(median(idle.map((m) => m.rss))), "≤ 70 MiB"],
      ["    the same 2 s after it", mib(median(idleSoon)), ""],
      ["    server CPU per idle second (from 2 to 10 s)", `${median(idleCpu).toFixed(1)} ms`, ""],
      ["    fibers the server starts per idle second (the same)", median(idleFibers).toFixed(1), ""],
      ["heap idle (in use after a full GC)", mib(median(idle.map((m) => m.heapUsedAfterGc))), "< 30 MiB"],
      ["    heap in use before the GC", mib(median(idle.map((m) => m.heapUsed))), ""],
      [`RSS after ${sessionCount} sessions and ${sessionCount} prompts (10 idle s)`, mib(loaded.rss), "≤ 110 MiB"],
      ["    the same 2 idle s after the load", Number.isNaN(rssSoon) ? "n/a" : mib(rssSoon), ""],
      ["    heap in use then, after a full GC", mib(loaded.heapUsedAfterGc), ""],
      ["    heap committed then (V8 keeps it after the GC)", mib(loaded.heapTotalAfterGc), ""],
      [`    time for those sessions and prompts (4 clients)`, ms(loadMs), ""]
    ]
    const width = Math.max(...rows.map(([label]) => label.length))
    console.log(`${"".padEnd(width)}  ${"median".padStart(10)}  target`)
    for (const [label, value, target] of rows) console.log(`${label.padEnd(width)}  ${value.padStart(10)}  ${target}`)
    // The figures that answer rows of issue 18's table (bench/README.md, "Convention").
    emit([
      { name: "cold-start", value: median(again.map((s) => s.startMs)), unit: "ms" },
      { name: "rss-idle", value: median(idle.map((m) => m.rss)) / MiB, unit: "MiB" },
      { name: "heap-idle", value: median(idle.map((m) => m.heapUsedAfterGc)) / MiB, unit: "MiB" },
      { name: "rss-after-1000", value: loaded.rss / MiB, unit: "MiB" }
    ])
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    fs.rmSync(base, { recursive: true, force: true })
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
