/**
 * The scenarios of the side-by-side bench, over HTTP against either server (servers.ts), each a
 * function of a running server that returns its figures. They use only what both servers answer the
 * same way (`/api/...` of the v2 contract): session create, prompt, the session event stream, the
 * session list and message pages. The end of a turn is the `session.next.step.ended` frame of a text
 * step on the session's event stream (upstream 1.18.33 answers `wait` with 503 "not available yet").
 *
 * Every scenario notes its window on the monotonic clock (µs, `process.hrtime`), so that a CPU
 * profile of the server can be cut per figure (cpu-profile.ts).
 */

import * as path from "node:path"
import { performance } from "node:perf_hooks"
import type { ScriptedLLMServer } from "../packages/core/src/testing/index.js"
import { LLMScript } from "../packages/core/src/testing/index.js"
import { median, percentile } from "./figures.js"
import {
  type Api,
  call,
  cpuMs,
  createSession,
  getBytes,
  isTitleRequest,
  lastUserText,
  prompt,
  readEvents,
  rssMiB,
  type SseEvent,
  sleep
} from "./servers.js"

const { reply, text, toolCall, finish } = LLMScript

// ---------------------------------------------------------------------------------------------------
// The scripted model both servers talk to

/**
 * A prompt's text carries what the model does: `bench-<tag>` (its provider request's arrival is
 * noted under that tag), `steps=<n>` (answer with `read` tool calls until n Steps, then text),
 * `file=<path>` (what the tool reads), `chunks=<n>` (the final text in n deltas).
 */
export const promptText = (tag: string, options: { steps?: number; file?: string; chunks?: number } = {}) =>
  [
    `bench-${tag}`,
    options.steps === undefined ? "" : `steps=${options.steps}`,
    options.file === undefined ? "" : `file=${options.file}`,
    options.chunks === undefined ? "" : `chunks=${options.chunks}`
  ]
    .filter((s) => s !== "")
    .join(" ")

/** First arrival (performance.now()) of a Step's provider request, per prompt tag. */
export const arrivals = new Map<string, number>()

export const respond = (request: ScriptedLLMServer.RecordedRequest): LLMScript.Turn => {
  const body = request.body
  if (isTitleRequest(body)) return reply(text("Bench session"), finish("stop"))
  const user = lastUserText(body)
  const tag = /bench-([\w-]+)/.exec(user)?.[1]
  if (tag !== undefined && !arrivals.has(tag)) arrivals.set(tag, performance.now())
  const steps = Number(/steps=(\d+)/.exec(user)?.[1] ?? 1)
  const file = /file=(\S+)/.exec(user)?.[1]
  const done = Array.isArray(body?.messages) ? body.messages.filter((m: any) => m?.role === "tool").length : 0
  if (file !== undefined && done < steps - 1)
    return reply(toolCall(`call_${done}`, "read", { path: file, filePath: file }), finish("tool-calls"))
  const chunks = Number(/chunks=(\d+)/.exec(user)?.[1] ?? 1)
  return reply(text(...Array.from({ length: chunks }, (_, i) => `word${i} `)), finish("stop"))
}

// ---------------------------------------------------------------------------------------------------
// Windows for the CPU profile

export interface Window {
  readonly figure: string
  readonly fromUs: number
  readonly toUs: number
}

const nowUs = () => Number(process.hrtime.bigint() / 1000n)

export const windowed = async <A>(windows: Array<Window>, figure: string, body: () => Promise<A>): Promise<A> => {
  const fromUs = nowUs()
  try {
    return await body()
  } finally {
    windows.push({ figure, fromUs, toUs: nowUs() })
  }
}

// ---------------------------------------------------------------------------------------------------
// Scenarios

export interface Server extends Api {
  readonly pid: number
}

/** The figures of one round against one server. `lower` tells whether a smaller value is better. */
export interface Measured {
  readonly name: string
  readonly value: number
  readonly unit: string
  readonly lower: boolean
}

/** An open event stream, resolving `until` with the first frame that matches. */
const openStream = async (api: Api, sessionID: string) => {
  const controller = new AbortController()
  let waiter: { match: (e: SseEvent) => boolean; resolve: (e: SseEvent) => void } | undefined
  const seen: Array<SseEvent> = []
  let opened!: () => void
  const headers = new Promise<void>((resolve) => {
    opened = resolve
  })
  const reading = readEvents(
    api,
    sessionID,
    (event) => {
      opened()
      seen.push(event)
      if (waiter?.match(event)) waiter.resolve(event)
      return false
    },
    controller.signal
  ).catch(() => [])
  // Whether the server sends its headers before the first event is up to it: wait for the first
  // frame or a short while, whichever comes first.
  await Promise.race([headers, sleep(150)])
  return {
    until: (match: (e: SseEvent) => boolean, timeoutMs = 300_000) =>
      new Promise<SseEvent>((resolve, reject) => {
        const hit = seen.find(match)
        if (hit !== undefined) return resolve(hit)
        const timer = setTimeout(() => reject(new Error(`no matching event within ${timeoutMs} ms`)), timeoutMs)
        waiter = {
          match,
          resolve: (e) => {
            clearTimeout(timer)
            resolve(e)
          }
        }
      }),
    close: async () => {
      controller.abort()
      await reading
    }
  }
}

const isFinalStepEnd = (event: SseEvent) =>
  event.type === "session.next.step.ended" && !/"finish"\s*:\s*"tool-calls"/.test(event.raw)

/**
 * One turn on a session that has had `previous` turns: prompt → provider request, prompt → the end
 * of the turn's final Step (the `previous + 1`-th final step end on the stream, which replays the
 * earlier turns' ones first).
 */
const turn = async (
  api: Server,
  sessionID: string,
  tag: string,
  options: Parameters<typeof promptText>[1] = {},
  previous = 0
) => {
  const stream = await openStream(api, sessionID)
  try {
    let finals = 0
    const start = performance.now()
    const ended = stream.until((event) => isFinalStepEnd(event) && ++finals > previous)
    await prompt(api, sessionID, promptText(tag, options))
    const end = await ended
    const arrived = arrivals.get(tag)
    return { toProvider: arrived === undefined ? Number.NaN : arrived - start, toEnd: end.at - start }
  } finally {
    await stream.close()
  }
}

export interface ScenarioOptions {
  readonly creates: number
  readonly turns: number
  readonly historyTurns: number
  readonly historyChunks: number
  /** Steps per history turn: all but the last call the `read` tool. */
  readonly historySteps: number
  readonly replays: number
  readonly pageSeconds: number
  readonly concurrency: number
}

export const defaults: ScenarioOptions = {
  creates: 20,
  turns: 10,
  historyTurns: 5,
  historyChunks: 100,
  historySteps: 5,
  replays: 5,
  pageSeconds: 2,
  concurrency: 10
}

let tags = 0
const nextTag = (what: string) => `${what}-${++tags}-${Math.random().toString(36).slice(2, 8)}`

/** Runs every scenario on a started server (cold start and idle RSS measured by the caller). */
export const scenarios = async (
  server: Server,
  options: ScenarioOptions,
  windows: Array<Window>
): Promise<ReadonlyArray<Measured>> => {
  const out: Array<Measured> = []
  const push = (name: string, value: number, unit: string, lower = true) => out.push({ name, value, unit, lower })

  // Session create, one after another.
  await windowed(windows, "session-create", async () => {
    const samples: Array<number> = []
    const cpu0 = cpuMs(server.pid)
    for (let i = 0; i < options.creates; i++) {
      const start = performance.now()
      await createSession(server)
      samples.push(performance.now() - start)
    }
    push("session-create-p50", median(samples), "ms")
    push("session-create-cpu", (cpuMs(server.pid) - cpu0) / options.creates, "ms")
  })

  // Text turns on fresh sessions.
  await windowed(windows, "text-turn", async () => {
    const toProvider: Array<number> = []
    const toEnd: Array<number> = []
    const sessions: Array<string> = []
    for (let i = 0; i < options.turns; i++) sessions.push(await createSession(server))
    const cpu0 = cpuMs(server.pid)
    for (const sessionID of sessions) {
      const result = await turn(server, sessionID, nextTag("turn"))
      toProvider.push(result.toProvider)
      toEnd.push(result.toEnd)
    }
    const cpu = (cpuMs(server.pid) - cpu0) / options.turns
    // Title requests of the first Steps may still be running: let them end before the next scenario.
    await sleep(300)
    push("prompt-to-provider-p50", median(toProvider), "ms")
    push("prompt-to-step-end-p50", median(toEnd), "ms")
    push("prompt-to-step-end-p90", percentile(toEnd, 90), "ms")
    push("cpu-per-text-turn", cpu, "ms")
  })

  // A history: one session, turns streaming many deltas each.
  const history = await windowed(windows, "history-build", async () => {
    const sessionID = await createSession(server)
    const samples: Array<number> = []
    for (let i = 0; i < options.historyTurns; i++) {
      const result = await turn(
        server,
        sessionID,
        nextTag("history"),
        { chunks: options.historyChunks, steps: options.historySteps, file: path.join(server.directory, "notes.txt") },
        i
      )
      samples.push(result.toEnd)
    }
    push("history-turn-p50", median(samples), "ms")
    return sessionID
  })

  // SSE replay of that history: first frame and the whole stream, which ends (as far as the history
  // goes) at the final step end of its last turn. (Counting frames until the stream goes quiet is not
  // a measure: under load a replay can pause longer than any quiet period between two frames.)
  await windowed(windows, "sse-replay", async () => {
    const replay = (onFirst: (at: number) => void) => {
      let finals = 0
      return readEvents(server, history, (event, index) => {
        if (index === 0) onFirst(event.at)
        return isFinalStepEnd(event) && ++finals >= options.historyTurns
      })
    }
    const total = (await replay(() => {})).length
    const first: Array<number> = []
    const all: Array<number> = []
    const cpu0 = cpuMs(server.pid)
    for (let i = 0; i < options.replays; i++) {
      const start = performance.now()
      let firstAt = Number.NaN
      const events = await replay((at) => {
        firstAt = at
      })
      first.push(firstAt - start)
      all.push(events[events.length - 1]!.at - start)
    }
    const cpu = (cpuMs(server.pid) - cpu0) / options.replays
    push("sse-replay-events", total, "count", false)
    push("sse-replay-first-event", median(first), "ms")
    push("sse-replay", median(all), "ms")
    push("sse-replay-rate", total / (median(all) / 1000), "ev/s", false)
    push("sse-replay-cpu", cpu, "ms")
  })

  // Session list and message pages, `concurrency` clients for `pageSeconds`.
  await windowed(windows, "pages", async () => {
    const routes = [`/api/session?limit=50`, `/api/session/${history}/message?limit=50`]
    await Promise.all(routes.map((route) => getBytes(server, route)))
    const deadline = performance.now() + options.pageSeconds * 1000
    let done = 0
    const cpu0 = cpuMs(server.pid)
    const started = performance.now()
    await Promise.all(
      Array.from({ length: options.concurrency }, async (_, client) => {
        let i = client
        while (performance.now() < deadline) {
          await getBytes(server, routes[i++ % routes.length]!)
          done++
        }
      })
    )
    const seconds = (performance.now() - started) / 1000
    push("pages-rps", done / seconds, "req/s", false)
    push("page-cpu", ((cpuMs(server.pid) - cpu0) * 1000) / done, "us")
  })

  push("rss-after", rssMiB(server.pid), "MiB")
  return out
}

/** Fetches one session to check the server answers the contract's shape (used before measuring). */
export const check = async (server: Api) => {
  const sessionID = await createSession(server)
  const got = await call(server, "GET", `/api/session/${sessionID}`)
  if (got?.id !== sessionID)
    throw new Error(`GET /api/session/${sessionID} answered ${JSON.stringify(got).slice(0, 200)}`)
}
