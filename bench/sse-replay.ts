/**
 * Session SSE replay: `GET /api/session/{id}/event` of a session with a long durable log.
 *
 *   node --import tsx bench/sse-replay.ts [--events 5742] [--iterations 30] [--warmup 5] [--gap 0] [--profile out.cpuprofile]
 *
 * A session of `--events` durable events (synthetic user-side texts of about 200 bytes each, written
 * through SessionEvents in batches, as the runtime writes them) is replayed over real HTTP on
 * 127.0.0.1 from the listener built in this process (`Serve.layer` over a fresh temporary data
 * directory, removed at the end). Each round opens the stream with `after=0` and reads raw bytes
 * until the frame of the last seq arrives, then aborts: the stream itself never ends (it follows
 * live commits). The client is a child process (plain Node `fetch`), so it does not share the
 * server's thread. Figures per round:
 *   - first event: from sending the request to the first `id:` frame arriving;
 *   - replay: from sending the request to the frame of the last seq arriving.
 * and the server process's CPU time per replay (the average over the measured rounds). By default a
 * round starts as soon as the previous one saw its last frame, when the server is still busy after
 * that replay (releasing the stream, collecting its garbage), so the first event also waits for that;
 * `--gap <ms>` pauses between rounds, for the first event of a server that is idle when asked. The client
 * only scans bytes (no SSE parsing). Medians are printed, never asserted (DESIGN §7.10). `run()` returns them for the `pnpm bench` runner.
 */

import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as inspector from "node:inspector"
import * as os from "node:os"
import * as path from "node:path"
import { HttpServer } from "@effect/platform"
import { Effect, Layer, LogLevel } from "effect"
import { Config, Locations, SessionEvents, Sessions } from "../packages/core/src/index.js"
import { Identifier } from "../packages/schema/src/index.js"
import { Serve } from "../packages/server/src/serve.js"
import { CoreHost } from "./core-host.js"
import { emit, numberFlag } from "./figures.js"

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** Writes the session's log through Core over the data directory's database; returns its id and last seq. */
const populate = (root: string, directory: string, events: number) =>
  Effect.gen(function* () {
    const context = yield* CoreHost.build({
      databaseFile: path.join(root, "data", "opencode", "opencode.db"),
      directory,
      configDir: path.join(root, "config")
    })
    const sessions = Effect.runSync(Effect.provide(Sessions.Service, context))
    const appender = Effect.runSync(Effect.provide(SessionEvents.Service, context))
    const location = yield* Effect.provide(
      Effect.flatMap(Locations.Service, (l) => l.resolve({ directory })),
      context
    )
    const session = yield* sessions.create({ location })
    const filler = "x".repeat(160)
    let last = 0
    for (let written = 0; written < events; ) {
      const batch = Math.min(100, events - written)
      const drafts = Array.from({ length: batch }, (_, index) =>
        SessionEvents.draft("session.next.synthetic", {
          timestamp: Date.now(),
          sessionID: session.id,
          messageID:
            Identifier.newMessageID() as unknown as SessionEvents.DataOf<"session.next.synthetic">["messageID"],
          text: `note ${written + index} ${filler}`
        })
      )
      const committed = yield* appender.append(session.id, drafts)
      last = committed.at(-1)!.durable.seq
      written += batch
    }
    return { sessionID: session.id, last }
  }).pipe(Effect.scoped)

/**
 * The client, run in a child process (plain Node, no dependencies) so that reading the stream does not
 * share the server's thread: for each round it opens the stream, notes when the first `id:` frame and
 * the frame of the last seq arrive, aborts, and prints one JSON line per round.
 */
const clientSource = `
const [url, last, rounds, gap] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3]), Number(process.argv[4])]
const marker = "id: " + last + "\\n"
for (let round = 0; round < rounds; round++) {
  if (round > 0 && gap > 0) await new Promise((resolve) => setTimeout(resolve, gap))
  const controller = new AbortController()
  const start = performance.now()
  const response = await fetch(url, { headers: { accept: "text/event-stream" }, signal: controller.signal })
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  let first
  let tail = ""
  for (;;) {
    const { value, done } = await reader.read()
    if (done) throw new Error("the stream ended before the last event")
    const text = tail + decoder.decode(value, { stream: true })
    if (first === undefined && text.includes("id: ")) first = performance.now() - start
    if (text.includes(marker)) {
      const end = performance.now() - start
      controller.abort()
      await reader.cancel().catch(() => undefined)
      console.log(JSON.stringify({ first, end }))
      break
    }
    tail = text.slice(-marker.length)
  }
}
`

/** Runs `rounds` replays from the client process; resolves with their instants. */
const replays = (url: string, last: number, rounds: number, gap: number) =>
  new Promise<Array<{ readonly first: number; readonly end: number }>>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--input-type=module", "-e", clientSource, url, String(last), String(rounds), String(gap)],
      {
        stdio: ["ignore", "pipe", "inherit"]
      }
    )
    let output = ""
    child.stdout.on("data", (data: Buffer) => {
      output += data.toString()
    })
    child.on("error", reject)
    child.on("exit", (code) =>
      code === 0
        ? resolve(
            output
              .trim()
              .split("\n")
              .map((line) => JSON.parse(line))
          )
        : reject(new Error(`the client exited with ${code}`))
    )
  })

// `--profile <file>`: a CPU profile (`.cpuprofile`) of the measured rounds only.
const profileAt = process.argv.indexOf("--profile")
const profile = profileAt === -1 ? undefined : process.argv[profileAt + 1]
const session = new inspector.Session()
const post = (method: string, params?: object) =>
  new Promise<unknown>((resolve, reject) =>
    session.post(method, params, (error, result) => (error ? reject(error) : resolve(result)))
  )
const startProfile = async () => {
  session.connect()
  await post("Profiler.enable")
  await post("Profiler.start")
}
const stopProfile = async (file: string) => {
  const { profile } = (await post("Profiler.stop")) as { profile: unknown }
  fs.writeFileSync(file, JSON.stringify(profile))
  session.disconnect()
}

export const run = async (
  options: {
    readonly events?: number
    readonly iterations?: number
    readonly warmup?: number
    readonly gap?: number
  } = {}
): Promise<Record<string, number>> => {
  const events = options.events ?? numberFlag("events", 5742)
  const iterations = options.iterations ?? numberFlag("iterations", 30)
  const warmup = options.warmup ?? numberFlag("warmup", 5)
  const gap = options.gap ?? numberFlag("gap", 0)
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "bench-sse-replay-"))
  const directory = path.join(root, "project")
  fs.mkdirSync(directory, { recursive: true })
  const env = {
    XDG_DATA_HOME: path.join(root, "data"),
    XDG_CONFIG_HOME: path.join(root, "xdg-config"),
    OPENCODE_DISABLE_MODELS_FETCH: "1"
  }
  try {
    return await Effect.runPromise(
      Effect.gen(function* () {
        const { sessionID, last } = yield* populate(root, directory, events)
        const context = yield* Layer.build(
          Serve.layer({
            port: 0,
            hostname: "127.0.0.1",
            printLogs: true,
            logLevel: LogLevel.Warning,
            directory,
            env,
            config: Config.layerTest({})
          })
        )
        const address = Effect.runSync(Effect.provide(HttpServer.HttpServer, context)).address
        if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
        const url = `http://127.0.0.1:${address.port}/api/session/${sessionID}/event?after=0`
        yield* Effect.promise(() => replays(url, last, warmup, gap))
        if (profile !== undefined) yield* Effect.promise(() => startProfile())
        const cpu = process.cpuUsage()
        const rounds = yield* Effect.promise(() => replays(url, last, iterations, gap))
        const used = process.cpuUsage(cpu)
        if (profile !== undefined) yield* Effect.promise(() => stopProfile(profile))
        const firsts = rounds.map((round) => round.first)
        const ends = rounds.map((round) => round.end)
        const result = {
          replayMs: median(ends),
          firstEventMs: median(firsts),
          cpuMs: (used.user + used.system) / 1000 / iterations
        }
        console.log(
          `sse replay ${last} events: median ${result.replayMs.toFixed(1)} ms, first event ${result.firstEventMs.toFixed(2)} ms` +
            ` (${Math.round(last / (result.replayMs / 1000))} events/s; server CPU ${result.cpuMs.toFixed(1)} ms per replay; ${iterations} rounds${gap > 0 ? `, ${gap} ms apart` : ""})`
        )
        // The figures that answer rows of issue 18's table (bench/README.md, "Convention").
        emit([
          { name: "sse-replay", value: result.replayMs, unit: "ms" },
          { name: "sse-replay-first-event", value: result.firstEventMs, unit: "ms" }
        ])
        return {
          "sse replay ms": result.replayMs,
          "sse replay first event ms": result.firstEventMs,
          "sse replay cpu ms": result.cpuMs
        }
      }).pipe(Effect.scoped)
    )
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await run()
}
