/**
 * Runtime overhead per Step, against a ScriptedLLMServer with zero artificial latency.
 *
 *   node --import tsx bench/step-overhead.ts [--iterations 200] [--warmup 30] [--spans]
 *
 * Two figures, each measured in process (Core: `SessionInput.admit` + `SessionRunner.wake`) and over
 * HTTP with the generated Promise client: against `opencode serve` (the built bin, `pnpm build`) as a
 * child process, as users run it, and, for comparison, against the listener built in this process
 * (where the client's own work shares the server's thread):
 *   (a) prompt admission → the provider request arriving at the scripted server;
 *   (b) the scripted server finishing a response → the next provider request (a tool step leads to
 *       the next step) or idle (`wait` resolving, for a final text step).
 *
 * Server-side instants come from the scripted server's own responses (Node's `http.server.*`
 * diagnostics channels, filtered to its port: request head arrival, last byte written); client-side
 * instants from `performance.now()` around the calls. The scripted server and the client share this
 * process, so every instant is on one clock. Against `opencode serve`, `serve-marks.cjs` (preloaded
 * into the child with `--require`) adds the server's own instants on the wall clock both processes
 * share, splitting (a) into transport, request handling and the drain (kept in the server's memory
 * until asked for, so that recording them costs no write). Every iteration uses a
 * fresh session (its first prompt: the Instruction Baseline is computed in the first Step), so
 * history does not grow across iterations. Figures are printed, never asserted (DESIGN §7.10).
 *
 * `--spans` adds a breakdown: one more in-process run under a tracer that sums, per iteration, the
 * wall time spent inside each `Effect.fn` span (spans nest and overlap, and tracing costs time, so
 * that run is not used for the figures above).
 */

import { spawn } from "node:child_process"
import * as diagnostics from "node:diagnostics_channel"
import * as fs from "node:fs"
import type * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { HttpServer } from "@effect/platform"
import { createOpencodeClient } from "@opencode-ai/client"
import { Deferred, Effect, Exit, Fiber, Layer, Logger, LogLevel, Metric, Tracer } from "effect"
import {
  Config,
  Locations,
  RuntimeMetrics,
  SessionInput,
  SessionRunner,
  Sessions,
  ToolRegistry
} from "../packages/core/src/index.js"
import { LLMScript, ScriptedLLMServer } from "../packages/core/src/testing/index.js"
import { Serve } from "../packages/server/src/serve.js"
import { CoreHost } from "./core-host.js"
import { emit, type Figure, isMain, numberFlag } from "./figures.js"

const TARGET_MS = 10

const iterations = numberFlag("iterations", 200)
const warmup = numberFlag("warmup", 30)
const spans = process.argv.includes("--spans")
const servedOnly = process.argv.includes("--served-only")

// ---------------------------------------------------------------------------------------------------
// Server-side instants of the scripted LLM server

interface Mark {
  readonly kind: "arrived" | "ended"
  readonly at: number
}

/**
 * Records, for one local port, when each request's head arrived and when its response's last byte
 * was written. The last write is the stream's end as the client sees it: a client that stops at the
 * final frame (`data: [DONE]`) may be done before the server gets round to `end()` and `finish`, so
 * the `finish` instant would come too late. A response's mark is pushed at `finish`.
 */
const probe = (port: number) => {
  const marks: Array<Mark> = []
  const lastWrite = new WeakMap<http.ServerResponse, number>()
  const ours = (message: unknown) => (message as { request: http.IncomingMessage }).request.socket.localPort === port
  const arrived = (message: unknown) => {
    if (!ours(message)) return
    marks.push({ kind: "arrived", at: performance.now() })
    const response = (message as { response: http.ServerResponse }).response
    const write = response.write
    response.write = function (this: http.ServerResponse, ...args: Array<any>) {
      lastWrite.set(response, performance.now())
      return (write as (...args: Array<any>) => boolean).apply(this, args)
    } as typeof response.write
  }
  const finished = (message: unknown) => {
    if (!ours(message)) return
    const response = (message as { response: http.ServerResponse }).response
    marks.push({ kind: "ended", at: lastWrite.get(response) ?? performance.now() })
  }
  diagnostics.subscribe("http.server.request.start", arrived)
  diagnostics.subscribe("http.server.response.finish", finished)
  return {
    marks,
    /** The instants of the marks since `from`, once they are all in, checked against the expected shape. */
    since: (from: number, expected: ReadonlyArray<Mark["kind"]>) =>
      Effect.gen(function* () {
        const deadline = performance.now() + 5_000
        while (marks.length - from < expected.length && performance.now() < deadline) yield* Effect.sleep("1 millis")
        const got = marks.slice(from)
        const kinds = got.map((mark) => mark.kind)
        if (kinds.join() !== expected.join()) {
          return yield* Effect.dieMessage(`unexpected provider traffic: ${kinds.join()} (expected ${expected.join()})`)
        }
        return got.map((mark) => mark.at)
      }),
    close: () => {
      diagnostics.unsubscribe("http.server.request.start", arrived)
      diagnostics.unsubscribe("http.server.response.finish", finished)
    }
  }
}

type Probe = ReturnType<typeof probe>

// ---------------------------------------------------------------------------------------------------
// Span breakdown (`--spans`)

/**
 * A tracer that adds each ended span's duration (ms) to `totals[name]`, and its self time (the
 * duration less its child spans' durations, at least 0) to `selfTotals[name]`.
 */
const summingTracer = (totals: Map<string, number>, selfTotals: Map<string, number>) => {
  const childMs = new WeakMap<Tracer.AnySpan, number>()
  return Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const attributes = new Map<string, unknown>()
      const end = (endTime: bigint) => {
        const ms = Number(endTime - startTime) / 1e6
        totals.set(name, (totals.get(name) ?? 0) + ms)
        selfTotals.set(name, (selfTotals.get(name) ?? 0) + Math.max(0, ms - (childMs.get(span) ?? 0)))
        if (parent._tag === "Some") childMs.set(parent.value, (childMs.get(parent.value) ?? 0) + ms)
      }
      const span: Tracer.Span = {
        _tag: "Span",
        name,
        spanId: Math.random().toString(16).slice(2),
        traceId: "bench",
        parent,
        context,
        status: { _tag: "Started", startTime },
        attributes,
        links: [...links],
        sampled: true,
        kind,
        end,
        attribute: (key, value) => void attributes.set(key, value),
        event: () => {},
        addLinks: () => {}
      }
      return span
    },
    context: (f) => f()
  })
}

// ---------------------------------------------------------------------------------------------------
// Statistics

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!

interface Row {
  readonly label: string
  readonly samples: ReadonlyArray<number>
  /** Whether the row is held to the p50 target (informational rows are not). */
  readonly target: boolean
}

const report = (rows: ReadonlyArray<Row>) => {
  const width = Math.max(...rows.map((row) => row.label.length))
  const cell = (n: number) => n.toFixed(2).padStart(8)
  const lines = [
    `${"".padEnd(width)}     p50      p90      p99   p50/target`,
    ...rows.map((row) => {
      const sorted = [...row.samples].sort((a, b) => a - b)
      const p50 = percentile(sorted, 50)
      const ratio = row.target ? `${(p50 / TARGET_MS).toFixed(2).padStart(8)}×` : "        -"
      return `${row.label.padEnd(width)} ${cell(p50)} ${cell(percentile(sorted, 90))} ${cell(percentile(sorted, 99))}  ${ratio}`
    })
  ]
  return lines.join("\n")
}

// ---------------------------------------------------------------------------------------------------
// The runs

const { reply, text, toolCall, finish, hold } = LLMScript

/**
 * The scripted provider's config, with session titles off: a fresh session's title request goes to
 * the same provider in the background, and would land among the requests each figure times.
 */
const benchConfig = (url: string) =>
  ({ ...ScriptedLLMServer.config(url), agent: { title: { disable: true } } }) as ReturnType<
    typeof ScriptedLLMServer.config
  >

/** The runtime's own samples, in process: a tool step, then a final text step, per fresh session. */
const inProcess = (
  root: string,
  llm: ScriptedLLMServer.ScriptedLLMServer,
  probe: Probe,
  name = "in-process",
  perIteration?: {
    readonly start: () => void
    readonly end: (measured: boolean) => void
  }
) =>
  Effect.gen(function* () {
    const directory = path.join(root, name)
    const context = yield* CoreHost.build({
      databaseFile: path.join(root, `${name}.db`),
      directory,
      configDir: path.join(root, "config"),
      config: benchConfig(llm.url)
    })
    const sessions = Effect.runSync(Effect.provide(Sessions.Service, context))
    const input = Effect.runSync(Effect.provide(SessionInput.Service, context))
    const runner = Effect.runSync(Effect.provide(SessionRunner.Service, context))
    const location = yield* Effect.provide(
      Effect.flatMap(Locations.Service, (l) => l.resolve({ directory })),
      context
    )
    yield* Effect.provide(
      Effect.flatMap(ToolRegistry.Service, (registry) =>
        registry.register({
          name: "noop",
          description: "Does nothing",
          inputSchema: { type: "object", properties: {} },
          execute: () => Effect.succeed({ content: [{ type: "text" as const, text: "ok" }] })
        })
      ),
      context
    )

    const admission: Array<number> = []
    const toolToNext: Array<number> = []
    const textToIdle: Array<number> = []
    for (let i = 0; i < warmup + iterations; i++) {
      const session = yield* sessions.create({ location })
      yield* llm.enqueue(
        reply(toolCall(`call_${i}`, "noop", {}), finish("tool-calls")),
        reply(text("done"), finish("stop"))
      )
      const from = probe.marks.length
      perIteration?.start()
      const start = performance.now()
      yield* input.admit(session.id, { prompt: { text: `prompt ${i}` } })
      yield* runner.wake(session.id)
      yield* runner.wait(session.id)
      const idle = performance.now()
      perIteration?.end(i >= warmup)
      const [arrived1, ended1, arrived2, ended2] = yield* probe.since(from, ["arrived", "ended", "arrived", "ended"])
      if (i < warmup) continue
      admission.push(arrived1! - start)
      toolToNext.push(arrived2! - ended1!)
      textToIdle.push(idle - ended2!)
    }
    return { admission, toolToNext, textToIdle }
  }).pipe(Effect.scoped)

/**
 * Durable commits per short text turn, in process: `opencode_db_commit_duration_seconds` observes each
 * durable transition's transaction once, so its count before and after a turn is the turn's commits.
 * The provider (`coalesced`: each reply in one socket write) answers in one chunk batch. A count, not
 * a time: every sample should be equal.
 */
const commitsPerTurn = (root: string, coalesced: ScriptedLLMServer.ScriptedLLMServer, turns: number) =>
  Effect.gen(function* () {
    const directory = path.join(root, "commits")
    const context = yield* CoreHost.build({
      databaseFile: path.join(root, "commits.db"),
      directory,
      configDir: path.join(root, "config"),
      config: benchConfig(coalesced.url)
    })
    const sessions = Effect.runSync(Effect.provide(Sessions.Service, context))
    const input = Effect.runSync(Effect.provide(SessionInput.Service, context))
    const runner = Effect.runSync(Effect.provide(SessionRunner.Service, context))
    const location = yield* Effect.provide(
      Effect.flatMap(Locations.Service, (l) => l.resolve({ directory })),
      context
    )
    const count = Effect.map(Metric.value(RuntimeMetrics.dbCommitDuration), (state) => state.count)
    const samples: Array<number> = []
    for (let i = 0; i < turns; i++) {
      const session = yield* sessions.create({ location })
      yield* coalesced.enqueue(reply(text("Hel", "lo"), finish("stop")))
      const before = yield* count
      yield* input.admit(session.id, { prompt: { text: `prompt ${i}` } })
      yield* runner.wake(session.id)
      yield* runner.wait(session.id)
      samples.push((yield* count) - before)
    }
    return samples
  }).pipe(Effect.scoped)

/** User plus system CPU time (ms) the process `pid` has used so far (Linux `/proc`; NaN elsewhere). */
const cpuOf = (pid: number | undefined): number => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // utime and stime are the 12th and 13th fields after the command (clock ticks, 100 per second).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return Number.NaN
  }
}

/**
 * Turns on one session through the Promise client, each replied to at once: the server process's
 * CPU time per short text turn (prompt + `wait`, measured over all turns, since a process's CPU time
 * has a 10 ms resolution), and a 3-step tool turn (two `bash` calls, then text), POST → idle.
 */
const turnLoop = (
  client: ReturnType<typeof createOpencodeClient>,
  llm: ScriptedLLMServer.ScriptedLLMServer,
  probe: Probe,
  pid: number | undefined
) =>
  Effect.gen(function* () {
    const session = yield* Effect.promise(() => client.sessions.create({}))
    const turn = (i: number) =>
      Effect.promise(async () => {
        await client.sessions.prompt({ sessionID: session.id, prompt: { text: `turn ${i}` } })
        await client.sessions.wait({ sessionID: session.id })
      })
    for (let i = 0; i < warmup; i++) {
      yield* llm.enqueue(reply(text("done"), finish("stop")))
      yield* turn(i)
    }
    const cpuBefore = cpuOf(pid)
    const from = process.hrtime.bigint() / 1000n
    // CPU per turn in four blocks of the turns: history grows by a quarter of them from one to the next.
    const block = Math.floor(iterations / 4)
    const blocks: Array<number> = []
    let blockStart = cpuBefore
    for (let i = 0; i < iterations; i++) {
      yield* llm.enqueue(reply(text("done"), finish("stop")))
      yield* turn(i)
      if (block > 0 && (i + 1) % block === 0 && blocks.length < 4) {
        const now = cpuOf(pid)
        blocks.push((now - blockStart) / block)
        blockStart = now
      }
    }
    const cpuPerTurn = (cpuOf(pid) - cpuBefore) / iterations
    if (profileDir !== undefined)
      console.log(`text turns' profile window: --from ${from} --to ${process.hrtime.bigint() / 1000n}`)
    const toolTurn: Array<number> = []
    // Where a tool turn's time goes, on the scripted server's instants: POST → first provider
    // request; each tool step's stream end → the next request (the `bash` call and two Step
    // boundaries); the text step's stream end → `wait` resolving.
    const toolSplit = {
      toFirst: [] as Array<number>,
      firstCall: [] as Array<number>,
      secondCall: [] as Array<number>,
      toIdle: [] as Array<number>
    }
    let toolFrom = 0n
    for (let i = 0; i < warmup + iterations; i++) {
      if (i === warmup) toolFrom = process.hrtime.bigint() / 1000n
      yield* llm.enqueue(
        reply(toolCall(`bash_a_${i}`, "bash", { command: "true", description: "nothing" }), finish("tool-calls")),
        reply(toolCall(`bash_b_${i}`, "bash", { command: "true", description: "nothing" }), finish("tool-calls")),
        reply(text("done"), finish("stop"))
      )
      const from = probe.marks.length
      const start = performance.now()
      yield* turn(i)
      const end = performance.now()
      if (i < warmup) continue
      toolTurn.push(end - start)
      const [first, firstEnd, second, secondEnd, third, thirdEnd] = yield* probe.since(from, [
        "arrived",
        "ended",
        "arrived",
        "ended",
        "arrived",
        "ended"
      ])
      toolSplit.toFirst.push(first! - start)
      toolSplit.firstCall.push(second! - firstEnd!)
      toolSplit.secondCall.push(third! - secondEnd!)
      toolSplit.toIdle.push(end - thirdEnd!)
    }
    if (profileDir !== undefined)
      console.log(`tool turns' profile window: --from ${toolFrom} --to ${process.hrtime.bigint() / 1000n}`)
    return { cpuPerTurn, blocks, block, toolTurn, toolSplit }
  })

/**
 * Prompts fresh sessions through the Promise client: one text step each. The reply is held until the
 * client's `wait` request has reached the server, so that neither figure includes the server
 * handling that request: (a) ends before it is sent, (b) starts after it is parked.
 */
const promptLoop = (
  client: ReturnType<typeof createOpencodeClient>,
  llm: ScriptedLLMServer.ScriptedLLMServer,
  probe: Probe
) =>
  Effect.gen(function* () {
    const admission: Array<number> = []
    const roundTrip: Array<number> = []
    const textToIdle: Array<number> = []
    const health: Array<number> = []
    // Wall-clock instants (ms) of each measured iteration, to line up with the server's own marks.
    const sentAt: Array<number> = []
    const arrivedAt: Array<number> = []
    const endedAt: Array<number> = []
    const idleAt: Array<number> = []
    for (let i = 0; i < warmup + iterations; i++) {
      const asked = performance.now()
      yield* Effect.promise(() => client.health.get())
      if (i >= warmup) health.push(performance.now() - asked)
      const session = yield* Effect.promise(() => client.sessions.create({}))
      const gate = LLMScript.gate()
      yield* llm.enqueue(reply(hold(gate), text("done"), finish("stop")))
      const from = probe.marks.length
      const start = performance.now()
      yield* Effect.promise(() => client.sessions.prompt({ sessionID: session.id, prompt: { text: `prompt ${i}` } }))
      const admitted = performance.now()
      yield* gate.reached
      const waiting = yield* Effect.fork(Effect.promise(() => client.sessions.wait({ sessionID: session.id })))
      yield* Effect.sleep("5 millis")
      yield* gate.release
      yield* Fiber.join(waiting)
      const idle = performance.now()
      const [arrived, ended] = yield* probe.since(from, ["arrived", "ended"])
      if (i < warmup) continue
      admission.push(arrived! - start)
      roundTrip.push(admitted - start)
      textToIdle.push(idle - ended!)
      sentAt.push(performance.timeOrigin + start)
      arrivedAt.push(performance.timeOrigin + arrived!)
      endedAt.push(performance.timeOrigin + ended!)
      idleAt.push(performance.timeOrigin + idle)
    }
    return { admission, roundTrip, textToIdle, health, sentAt, arrivedAt, endedAt, idleAt }
  })

/** The real listener in this process (client and server share one thread). */
const overHttp = (root: string, llm: ScriptedLLMServer.ScriptedLLMServer, probe: Probe) =>
  Effect.gen(function* () {
    const directory = path.join(root, "http")
    fs.mkdirSync(directory, { recursive: true })
    const context = yield* Layer.build(
      Serve.layer({
        port: 0,
        hostname: "127.0.0.1",
        printLogs: true,
        logLevel: LogLevel.Warning,
        directory,
        env: { XDG_DATA_HOME: path.join(root, "data"), XDG_CONFIG_HOME: path.join(root, "xdg-config") },
        config: Config.layerTest(benchConfig(llm.url))
      })
    )
    const address = Effect.runSync(Effect.provide(HttpServer.HttpServer, context)).address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    return yield* promptLoop(createOpencodeClient({ baseUrl: `http://127.0.0.1:${address.port}` }), llm, probe)
  }).pipe(Effect.scoped)

/** The built bin to serve (`--bin <path>`, e.g. another build for an A/B run); default this checkout's. */
const binAt = process.argv.indexOf("--bin")
const bin =
  binAt === -1
    ? path.resolve(import.meta.dirname, "../packages/server/dist/bin.js")
    : path.resolve(process.argv[binAt + 1] ?? "")
/** `--cpu-prof <dir>`: the served bin runs under `node --cpu-prof`, writing its profile into `<dir>`. */
const profileAt = process.argv.indexOf("--cpu-prof")
const profileDir = profileAt === -1 ? undefined : path.resolve(process.argv[profileAt + 1] ?? "")
const serveMarks = path.resolve(import.meta.dirname, "serve-marks.cjs")

type ServeMark = "received" | "responded" | "created" | "sent" | "waited"

/**
 * `opencode serve` (the built bin) as a child process, configured through its project's
 * `opencode.json`, as a user runs it: only the client runs in this process.
 */
const overProcess = (root: string, llm: ScriptedLLMServer.ScriptedLLMServer, probe: Probe) =>
  Effect.gen(function* () {
    if (!fs.existsSync(bin)) return yield* Effect.dieMessage(`${bin} is missing: run \`pnpm build\` first`)
    const directory = path.join(root, "serve")
    fs.mkdirSync(directory, { recursive: true })
    fs.writeFileSync(path.join(directory, "opencode.json"), JSON.stringify(benchConfig(llm.url)))
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(
          process.execPath,
          [
            ...(profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]),
            "--require",
            serveMarks,
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
              XDG_DATA_HOME: path.join(root, "serve-data"),
              XDG_CONFIG_HOME: path.join(root, "serve-config")
            },
            stdio: ["ignore", "pipe", "inherit", "pipe"]
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
    // The server's own instants (serve-marks.cjs), by kind, in order; it writes them on SIGUSR2.
    const serverMarks: Record<ServeMark, Array<number>> = {
      received: [],
      responded: [],
      created: [],
      sent: [],
      waited: []
    }
    const flushed = yield* Deferred.make<void>()
    let pending = ""
    child.stdio[3]!.on("data", (chunk) => {
      pending += String(chunk)
      const lines = pending.split("\n")
      pending = lines.pop()!
      for (const line of lines) {
        if (line === "flushed") Deferred.unsafeDone(flushed, Exit.void)
        const [kind, at] = line.split(" ")
        serverMarks[kind as ServeMark]?.push(Number(at))
      }
    })
    const client = createOpencodeClient({ baseUrl: url })
    const result = yield* promptLoop(client, llm, probe)
    child.kill("SIGUSR2")
    yield* Deferred.await(flushed)
    const turns = yield* turnLoop(client, llm, probe, child.pid)
    return { ...result, ...turns, split: split(result, serverMarks) }
  }).pipe(Effect.scoped)

/**
 * Where the HTTP admission window goes, per measured iteration, on the wall clock both processes
 * share: the client's request reaching the server, the server handling it (admission included)
 * until its response ends, its drain until the provider request is created, that request's head
 * leaving, and it reaching the scripted server. Undefined when the marks do not line up one per
 * iteration.
 */
const split = (
  client: Record<"sentAt" | "arrivedAt" | "endedAt" | "idleAt", ReadonlyArray<number>>,
  server: Record<ServeMark, ReadonlyArray<number>>
) => {
  const all = warmup + iterations
  if (Object.values(server).some((marks) => marks.length !== all)) return undefined
  const at = (kind: ServeMark) => server[kind].slice(warmup)
  const between = (from: ReadonlyArray<number>, to: ReadonlyArray<number>) => from.map((t, i) => to[i]! - t)
  return {
    toServer: between(client.sentAt, at("received")),
    handled: between(at("received"), at("responded")),
    drained: between(at("responded"), at("created")),
    leaving: between(at("created"), at("sent")),
    toProvider: between(at("sent"), client.arrivedAt),
    settled: between(client.endedAt, at("waited")),
    toClient: between(at("waited"), client.idleAt)
  }
}

const main = Effect.gen(function* () {
  const root = yield* Effect.acquireRelease(
    Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-bench-")))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  // Its own requests are not kept: the probe reads the diagnostics channels instead.
  const llm = yield* ScriptedLLMServer.make({ record: false })
  const marks = yield* Effect.acquireRelease(
    Effect.sync(() => probe(llm.port)),
    (p) => Effect.sync(p.close)
  )

  const coalesced = yield* ScriptedLLMServer.make({ record: false, coalesce: true })
  // `--served-only`: only the rows against `opencode serve` (an A/B of two builds with `--bin`).
  const none = { admission: [], roundTrip: [], textToIdle: [], toolToNext: [] }
  const commits = servedOnly ? [] : yield* commitsPerTurn(root, coalesced, Math.min(iterations, 50))
  const local = servedOnly ? none : yield* inProcess(root, llm, marks)
  const served = yield* overProcess(root, llm, marks)
  const shared = servedOnly ? none : yield* overHttp(root, llm, marks)

  const cpus = os.cpus()
  console.log(
    `step overhead: ${iterations} iterations after ${warmup} warm-up, ScriptedLLMServer with zero latency\n` +
      `node ${process.version}, ${os.platform()} ${os.arch()}, ${cpus.length} × ${cpus[0]?.model ?? "cpu"}; times in ms, target p50 ≤ ${TARGET_MS} ms\n`
  )
  console.log(
    report([
      { label: "(a) admit + wake → provider request (in process)", samples: local.admission, target: true },
      { label: "(a) HTTP prompt → provider request (opencode serve)", samples: served.admission, target: true },
      { label: "    HTTP prompt round trip (opencode serve)", samples: served.roundTrip, target: false },
      {
        label: "    HTTP health round trip (opencode serve: the transport alone)",
        samples: served.health,
        target: false
      },
      ...(served.split === undefined
        ? []
        : [
            {
              label: "      of (a): client → server receives the prompt",
              samples: served.split.toServer,
              target: false
            },
            {
              label: "      of (a): server handles it, admission included, until its response ends",
              samples: served.split.handled,
              target: false
            },
            {
              label: "      of (a): response end → provider request created (the drain)",
              samples: served.split.drained,
              target: false
            },
            {
              label: "      of (a): provider request created → its head sent",
              samples: served.split.leaving,
              target: false
            },
            {
              label: "      of (a): head sent → arrives at the scripted server",
              samples: served.split.toProvider,
              target: false
            }
          ]),
      {
        label: "    HTTP prompt → provider request (listener in this thread)",
        samples: shared.admission,
        target: false
      },
      { label: "    HTTP prompt round trip (listener in this thread)", samples: shared.roundTrip, target: false },
      { label: "(b) tool step stream end → next provider request", samples: local.toolToNext, target: true },
      { label: "(b) text step stream end → idle (wait resolves, in process)", samples: local.textToIdle, target: true },
      {
        label: "(b) text step stream end → idle (HTTP wait, opencode serve)",
        samples: served.textToIdle,
        target: true
      },
      ...(served.split === undefined
        ? []
        : [
            {
              label: "      of (b): stream end → the server ends its wait response",
              samples: served.split.settled,
              target: false
            },
            {
              label: "      of (b): wait response end → the client has it",
              samples: served.split.toClient,
              target: false
            }
          ]),
      {
        label: "    text step stream end → idle (HTTP wait, listener in this thread)",
        samples: shared.textToIdle,
        target: false
      },
      {
        label: "3-step tool turn (two bash calls), HTTP POST → idle (opencode serve)",
        samples: served.toolTurn,
        target: false
      },
      { label: "      of it: POST → first provider request", samples: served.toolSplit.toFirst, target: false },
      {
        label: "      of it: first tool step's stream end → second request (a bash call)",
        samples: served.toolSplit.firstCall,
        target: false
      },
      {
        label: "      of it: second tool step's stream end → third request (a bash call)",
        samples: served.toolSplit.secondCall,
        target: false
      },
      { label: "      of it: text step's stream end → idle", samples: served.toolSplit.toIdle, target: false }
    ])
  )
  const sortedCommits = [...commits].sort((a, b) => a - b)
  console.log(
    `\ndurable commits per short text turn (one provider chunk batch), in process: p50 ${percentile(sortedCommits, 50)}, ` +
      `min ${sortedCommits[0]}, max ${sortedCommits.at(-1)} (target ≤ 4)\n` +
      `server CPU per text turn (opencode serve, prompt + wait, mean of ${iterations}): ${served.cpuPerTurn.toFixed(2)} ms (target ≤ 5)\n` +
      `  the same in four blocks of ${served.block} turns on one session, its history growing: ` +
      `${served.blocks.map((ms) => ms.toFixed(1)).join(" / ")} ms`
  )
  console.log(
    "issue 18 targets (p50): HTTP prompt → provider ≤ 3 ms; in process ≤ 1.5 ms; text stream end → idle ≤ 2 ms; " +
      "3-step tool turn ≤ 20 ms"
  )

  // The figures that answer rows of issue 18's table (bench/README.md, "Convention").
  const p50 = (samples: ReadonlyArray<number>) =>
    percentile(
      [...samples].sort((a, b) => a - b),
      50
    )
  const figures: ReadonlyArray<Figure> = [
    { name: "prompt-to-provider-http", value: p50(served.admission), unit: "ms" },
    { name: "prompt-to-provider-embedded", value: p50(local.admission), unit: "ms" },
    { name: "stream-end-to-idle", value: p50(served.textToIdle), unit: "ms" },
    { name: "stream-end-to-idle-embedded", value: p50(local.textToIdle), unit: "ms" },
    { name: "tool-step-to-next-request", value: p50(local.toolToNext), unit: "ms" },
    { name: "cpu-per-text-turn", value: served.cpuPerTurn, unit: "ms" },
    { name: "commits-per-text-turn", value: percentile(sortedCommits, 50), unit: "count" },
    { name: "tool-turn-3-step", value: p50(served.toolTurn), unit: "ms" }
  ]
  console.log("")
  // `--served-only` leaves the in-process rows unmeasured: they are not printed as figures.
  emit(servedOnly ? figures.filter((figure) => Number.isFinite(figure.value)) : figures)

  if (spans) {
    // Per iteration (one prompt: a tool step, then a text step), the time inside each span name, and
    // the self time (outside its child spans).
    const current = new Map<string, number>()
    const currentSelf = new Map<string, number>()
    const perName = new Map<string, { total: Array<number>; self: Array<number> }>()
    let measured = 0
    yield* inProcess(root, llm, marks, "spans", {
      start: () => {
        current.clear()
        currentSelf.clear()
      },
      end: (counted) => {
        if (!counted) return
        measured++
        for (const [name, ms] of current) {
          const samples = perName.get(name) ?? { total: [], self: [] }
          samples.total.push(ms)
          samples.self.push(currentSelf.get(name) ?? 0)
          perName.set(name, samples)
        }
      }
    }).pipe(Effect.withTracer(summingTracer(current, currentSelf)))
    // Iterations where the span did not run count as 0.
    const mean = (samples: ReadonlyArray<number>) => samples.reduce((a, b) => a + b, 0) / measured
    const rows = [...perName]
      .map(([name, { total, self }]) => {
        const all = [...total, ...Array.from({ length: measured - total.length }, () => 0)].sort((a, b) => a - b)
        return { name, p50: percentile(all, 50), mean: mean(total), self: mean(self) }
      })
      .sort((a, b) => b.mean - a.mean)
      .slice(0, 30)
    const width = Math.max(...rows.map((row) => row.name.length))
    console.log(
      "\nspans: wall time inside each span per prompt (a tool step + a text step), ms; nested spans overlap;\n" +
        "self: the mean time outside the span's own child spans\n"
    )
    console.log(`${"".padEnd(width)}      p50     mean     self`)
    for (const row of rows)
      console.log(
        `${row.name.padEnd(width)} ${row.p50.toFixed(2).padStart(8)} ${row.mean.toFixed(2).padStart(8)} ${row.self.toFixed(2).padStart(8)}`
      )
  }
  return figures
})

/** Runs the whole bench (it prints as it goes) and resolves to its figures. */
export const run = (): Promise<ReadonlyArray<Figure>> =>
  Effect.runPromise(main.pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.Warning)))

if (isMain(import.meta.url)) {
  run().then(
    () => process.exit(0),
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
}
