/**
 * Read pages under load: `GET /api/session?limit=50` and `GET /api/session/{id}/message?limit=50` (the
 * row of issue 18), and the session page of one directory (`?directory=…`), at a fixed concurrency,
 * against `opencode serve` (the built bin, `pnpm --filter @opencode-ai/server run build`) as a child
 * process over real HTTP on loopback.
 *
 *   node --import tsx bench/pages.ts [--sessions 60] [--prompts 30] [--concurrency 10] [--seconds 3] [--rounds 5]
 *     [--bin other-checkout/packages/server/dist/bin.js] [--against baseline/dist/bin.js] [--cpu-prof dir]
 *
 * The server's database is filled first through its own API: `--sessions` sessions, and `--prompts`
 * prompts (one user and one assistant message each, answered by a ScriptedLLMServer) in one of them.
 * Then each round measures the pages in turn (interleaved, so noise hits both alike): `--concurrency`
 * keep-alive connections each send the next request as soon as the previous response ends, for
 * `--seconds`; the figure is completed requests per second. Every response is checked (200, the
 * expected item count). Prints the median over the rounds, with the server process's CPU time per
 * request (from /proc, steadier than req/s when other processes share the cores), never asserted
 * (DESIGN §7.10).
 *
 * `--against <bin>` runs a second server (another build, e.g. main's) seeded alike, and alternates the
 * two within every round (A/B on the same loaded machine); each is printed with its own figures.
 * `--cpu-prof <dir>` runs the server(s) under `node --cpu-prof` and writes the profiles there on exit
 * (summarise them with bench/cpu-profile.ts).
 */

import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { createOpencodeClient } from "@opencode-ai/client"
import { Effect } from "effect"
import { LLMScript, ScriptedLLMServer } from "../packages/core/src/testing/index.js"
import { emit, numberFlag, positive } from "./figures.js"

const TARGET = 6000

const sessionCount = numberFlag("sessions", 60, positive)
const prompts = numberFlag("prompts", 30, positive)
const concurrency = numberFlag("concurrency", 10, positive)
const seconds = numberFlag("seconds", 3, positive)
const rounds = numberFlag("rounds", 5, positive)

/** The server to measure: this checkout's build, or another's with `--bin <path to dist/bin.js>`. */
const binAt = process.argv.indexOf("--bin")
const bin =
  binAt === -1
    ? path.resolve(import.meta.dirname, "../packages/server/dist/bin.js")
    : path.resolve(process.argv[binAt + 1] ?? "")
const againstAt = process.argv.indexOf("--against")
const against = againstAt === -1 ? undefined : path.resolve(process.argv[againstAt + 1] ?? "")
const profileAt = process.argv.indexOf("--cpu-prof")
const profileDir = profileAt === -1 ? undefined : path.resolve(process.argv[profileAt + 1] ?? "")

/** `opencode serve` as a child process in a scratch directory; resolves with its base URL. */
const serve = (root: string, llmUrl: string, bin: string) =>
  Effect.gen(function* () {
    if (!fs.existsSync(bin)) return yield* Effect.dieMessage(`${bin} is missing: build the server first`)
    const directory = path.join(root, "project")
    fs.mkdirSync(directory, { recursive: true })
    fs.writeFileSync(path.join(directory, "opencode.json"), JSON.stringify(ScriptedLLMServer.config(llmUrl)))
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(
          process.execPath,
          [
            ...(profileDir === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", profileDir]),
            bin,
            "serve",
            "--port",
            "0",
            "--hostname",
            "127.0.0.1"
          ],
          {
            cwd: directory,
            env: {
              PATH: process.env.PATH ?? "",
              HOME: path.join(root, "home"),
              XDG_DATA_HOME: path.join(root, "data"),
              XDG_CONFIG_HOME: path.join(root, "config"),
              OPENCODE_DISABLE_MODELS_FETCH: "1"
            },
            stdio: ["ignore", "pipe", "inherit"]
          }
        )
      ),
      (child) =>
        Effect.async<void>((resume) => {
          if (child.exitCode !== null) return resume(Effect.void)
          child.once("exit", () => resume(Effect.void))
          child.kill("SIGTERM")
        })
    )
    const url = yield* Effect.async<string, Error>((resume) => {
      let out = ""
      child.stdout!.on("data", (chunk) => {
        out += chunk
        const match = /listening on (http:\/\/\S+)/.exec(out)
        if (match) resume(Effect.succeed(match[1]!))
      })
      child.once("exit", (code) => resume(Effect.fail(new Error(`opencode serve exited with ${code}: ${out}`))))
    })
    return { url, pid: child.pid! }
  })

/**
 * The CPU time (ms) the process has used so far: from its threads' `/proc/<pid>/task/<tid>/schedstat`
 * (ns), else `/proc/<pid>/stat` (user + system, in clock ticks of 10 ms); NaN where neither can be read.
 * Threads that ended in between are missed by the first (the server keeps its threads).
 */
const cpuMs = (pid: number): number => {
  // Every thread's time on a CPU, in ns (`/proc/<pid>/task/*/schedstat`): finer than the 10 ms ticks below.
  try {
    let ns = 0
    for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0])
    }
    if (Number.isFinite(ns) && ns > 0) return ns / 1e6
  } catch {
    // No schedstat: the ticks below.
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return Number.NaN
  }
}

/**
 * `concurrency` keep-alive connections, each requesting `url` back to back for `ms`: completed
 * requests per second. A response other than a 200 (whose `data` has `items` entries, when given) stops the run.
 */
const load = (url: string, items: number | undefined, ms: number) =>
  new Promise<{ readonly perSecond: number; readonly requests: number }>((resolve, reject) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency })
    const end = performance.now() + ms
    let done = 0
    let running = concurrency
    let failed = false
    const next = () => {
      if (failed) return
      if (performance.now() >= end) {
        if (--running === 0) {
          agent.destroy()
          resolve({ perSecond: done / (ms / 1000), requests: done })
        }
        return
      }
      http
        .get(url, { agent }, (response) => {
          const chunks: Array<Buffer> = []
          response.on("data", (chunk: Buffer) => chunks.push(chunk))
          response.on("end", () => {
            const body = Buffer.concat(chunks).toString()
            const counted = items === undefined || (JSON.parse(body) as { data: unknown[] }).data.length === items
            if (response.statusCode !== 200 || !counted) {
              failed = true
              agent.destroy()
              reject(new Error(`${url}: ${response.statusCode} ${body.slice(0, 300)}`))
              return
            }
            done++
            next()
          })
        })
        .on("error", (error) => {
          failed = true
          reject(error)
        })
    }
    for (let i = 0; i < concurrency; i++) next()
  })

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** One server (in its own directory tree), seeded through its API; resolves with its pages to load. */
const seeded = (root: string, bin: string) =>
  Effect.gen(function* () {
    fs.mkdirSync(root, { recursive: true })
    const llm = yield* ScriptedLLMServer.make()
    const { url: base, pid } = yield* serve(root, llm.url, bin)
    const client = createOpencodeClient({ baseUrl: base })

    // Seed through the API: sessions, then prompts (a user and an assistant message each) in one.
    const sessions = []
    for (let i = 0; i < sessionCount; i++) sessions.push(yield* Effect.promise(() => client.sessions.create({})))
    const busy = sessions[0]!
    for (let i = 0; i < prompts; i++) {
      yield* llm.enqueue(LLMScript.reply(LLMScript.text(`answer ${i}`), LLMScript.finish("stop")))
      yield* Effect.promise(() => client.sessions.prompt({ sessionID: busy.id, prompt: { text: `question ${i}` } }))
      yield* Effect.promise(() => client.sessions.wait({ sessionID: busy.id }))
    }
    const messageItems = Math.min(50, prompts * 2)
    const directory = encodeURIComponent(path.join(root, "project"))
    const pages = [
      {
        label: "GET /api/session?limit=50",
        url: `${base}/api/session?limit=50`,
        items: Math.min(50, sessionCount),
        row: true
      },
      {
        label: "GET /api/session/{id}/message?limit=50",
        url: `${base}/api/session/${busy.id}/message?limit=50`,
        items: messageItems,
        row: true
      },
      // Not in the row: the list a client opened in a project asks for (every session is in it here).
      {
        label: "GET /api/session?directory=…&limit=50",
        url: `${base}/api/session?directory=${directory}&limit=50`,
        items: Math.min(50, sessionCount),
        row: false
      },
      // For reference, not a target: the same server's cheapest request, the HTTP stack alone.
      { label: "GET /api/health (the HTTP stack alone)", url: `${base}/api/health`, items: undefined, row: false }
    ]
    // Warm-up: one short run of each.
    for (const page of pages) yield* Effect.promise(() => load(page.url, page.items, 500))
    return { bin, pid, pages }
  })

const program = Effect.gen(function* () {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "bench-pages-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true })))
  if (profileDir !== undefined) fs.mkdirSync(profileDir, { recursive: true })
  const servers = [yield* seeded(path.join(root, "a"), bin)]
  if (against !== undefined) servers.push(yield* seeded(path.join(root, "b"), against))
  const figures = servers.map((server) => server.pages.map(() => [] as Array<number>))
  const cpu = servers.map((server) => server.pages.map(() => [] as Array<number>))
  // The profiles' clock is the monotonic one (µs): the measured window, for cpu-profile.ts --from/--to.
  const from = process.hrtime.bigint() / 1000n
  for (let round = 0; round < rounds; round++) {
    for (let index = 0; index < servers[0]!.pages.length; index++) {
      // A/B: the servers take turns on each page, their order alternating from round to round.
      for (let turn = 0; turn < servers.length; turn++) {
        const which = (turn + round) % servers.length
        const server = servers[which]!
        const page = server.pages[index]!
        const before = cpuMs(server.pid)
        const run = yield* Effect.promise(() => load(page.url, page.items, seconds * 1000))
        figures[which]![index]!.push(run.perSecond)
        cpu[which]![index]!.push(((cpuMs(server.pid) - before) * 1000) / run.requests)
      }
    }
  }
  const to = process.hrtime.bigint() / 1000n
  if (profileDir !== undefined) console.log(`profile window: --from ${from} --to ${to}`)
  console.log(
    `pages over HTTP (opencode serve, c=${concurrency}, ${rounds} rounds of ${seconds}s, median; target ≥ ${TARGET} req/s; load average ${os
      .loadavg()
      .map((value) => value.toFixed(1))
      .join(" ")})`
  )
  for (const [which, server] of servers.entries()) {
    if (servers.length > 1) console.log(`${which === 0 ? "A" : "B"}: ${path.relative(process.cwd(), server.bin)}`)
    for (const [index, page] of server.pages.entries()) {
      const value = median(figures[which]![index]!)
      const all = figures[which]![index]!.map((figure) => figure.toFixed(0)).join(", ")
      const verdict = page.items === undefined ? "" : value >= TARGET ? "ok" : "below target"
      console.log(`  ${page.label.padEnd(42)} ${value.toFixed(0).padStart(6)} req/s  ${verdict}  [${all}]`)
      // Server CPU per request: steadier than req/s on a machine others share.
      console.log(`  ${"  server CPU per request".padEnd(42)} ${median(cpu[which]![index]!).toFixed(0).padStart(6)} µs`)
    }
  }
  // The figure that answers the row of issue 18's table (bench/README.md, "Convention"): the slower
  // of the row's two pages, of the first server.
  const paged = servers[0]!.pages.flatMap((page, index) => (page.row ? [median(figures[0]![index]!)] : []))
  emit([{ name: "pages-rps", value: Math.min(...paged), unit: "req/s" }])
})

Effect.runPromise(Effect.scoped(program)).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
