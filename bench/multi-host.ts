/**
 * Several hosts over one PostgreSQL database, against one host over the same kind of database.
 *
 *   node --import tsx bench/multi-host.ts [--iterations 40] [--warmup 5] [--cluster]
 *
 * With `--cluster` every serve is a runner (`--runner-address` on a loopback port): sessions run on
 * their shard's runner, wherever they were prompted, and the figures are named `multi-host-cluster-…`.
 * The fan-outs are measured from the stream that showed an event first (the host running the
 * session), whichever host that is.
 * A throwaway PostgreSQL server (this machine's initdb/pg_ctl, see PostgresServer) and the built
 * `opencode serve` (`pnpm build`): first ONE serve over a fresh database, then THREE over another one.
 * Every host streams `GET /api/event` of the Location where host A creates the sessions (one machine,
 * so the same path on every host). Each iteration is two prompts through host A, each in a new session,
 * against a ScriptedLLMServer with no artificial latency:
 *
 * 1. a short text reply, at once; then `wait`:
 *    - `multi-host-step-single`: prompt → `wait` resolving, on the single host (the baseline);
 *    - `multi-host-step-local`: the same on host A of three (what the other hosts' presence costs);
 *    - `multi-host-to-provider-single` and `…-local`: of those, prompt → the provider request
 *      reaching the scripted LLM (the rest is the reply, the Step's end and the `wait`);
 *    - `multi-host-step-cross`: prompt on A, `wait` on B (B follows a session that runs elsewhere);
 *    - `multi-host-durable-fanout`: how much later its `step.ended` reaches B's and C's streams than
 *      A's (EventLog's NOTIFY, then a read);
 * 2. a reply whose first text chunk is held until every stream has shown it (or 5 s have passed):
 *    - `multi-host-delta-fanout`: how much later that first delta reaches B's and C's streams than
 *      A's (LiveRelay over NOTIFY);
 *    - `multi-host-delta-single`: prompt → first delta on the single host's stream, for scale.
 *    The hold matters: a relayed delta whose session's next durable event overtook it is dropped by
 *    design (the durable event carries its text), and with an instant reply text.ended commits right
 *    behind the deltas; a real model streams for seconds. Deltas that never arrived within the 5 s
 *    are counted and printed.
 *
 * Also printed: how many statements the hosts cancelled because they were interrupted while they ran
 * (`opencode_db_statements_cancelled_total` on each host's `/metrics`; each costs a connection).
 *
 * Medians, printed as `<figure>: <value> ms` (never asserted). The machine may be shared: compare the
 * figures of one run with each other rather than across runs.
 */

import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { Effect, Exit, Scope } from "effect"
import { FreePort, LLMScript, PostgresServer } from "../packages/core/src/testing/index.js"
import { type Figure, numberFlag, runWhenMain } from "./figures.js"
import { type Api, call, createSession, isTitleRequest, startLlm, startServer, waitIdle } from "./servers.js"

const iterations = numberFlag("iterations", 40)
const cluster = process.argv.includes("--cluster")

const warmup = numberFlag("warmup", 5)

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/**
 * `GET /api/event` of the Location `directory`, read in the background: when each session's first
 * delta and step end arrived. The stream carries the events of sessions in that Location only.
 */
const arrivals = async (url: string, directory: string) => {
  const controller = new AbortController()
  const response = await fetch(`${url}/api/event`, {
    headers: { accept: "text/event-stream", "x-opencode-directory": directory },
    signal: controller.signal
  })
  const firstDelta = new Map<string, number>()
  const stepEnded = new Map<string, number>()
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let pending = ""
  const reading = (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }))
      if (done) return
      const now = performance.now()
      pending += decoder.decode(value, { stream: true })
      const lines = pending.split("\n")
      pending = lines.pop() ?? ""
      for (const line of lines) {
        if (!line.startsWith("data:")) continue
        const event = JSON.parse(line.slice(5))
        const sessionID = event.data?.sessionID
        if (typeof sessionID !== "string") continue
        if (event.type === "session.next.text.delta" && !firstDelta.has(sessionID)) firstDelta.set(sessionID, now)
        if (event.type === "session.next.step.ended" && !stepEnded.has(sessionID)) stepEnded.set(sessionID, now)
      }
    }
  })()
  return {
    firstDelta,
    stepEnded,
    close: async () => {
      controller.abort()
      await reading
    }
  }
}

/** Polls `check` every millisecond until it holds (true) or `ms` have passed (false). */
const until = async (check: () => boolean, ms = Number.POSITIVE_INFINITY): Promise<boolean> => {
  const deadline = performance.now() + ms
  while (!check()) {
    if (performance.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  return true
}

/** The prompt whose reply holds after its first text chunk. */
const heldPrompt = "hold after the first delta"

/** The gates of held replies, in request order. */
const held: Array<LLMScript.Gate> = []

/** When each instant reply's request reached the scripted LLM (`performance.now()`), in order. */
const instant: Array<number> = []

interface Round {
  readonly step: number
  /** Prompt → its provider request reaching the scripted LLM. */
  readonly toProvider: number
  readonly cross?: number
  readonly durableFanout?: number
  /** Absent when the first delta did not reach host A's stream. */
  readonly deltaLocal?: number
  /** Absent when it reached neither B's nor C's stream. */
  readonly deltaFanout?: number
  /** How many of the other hosts' streams never showed the held first delta. */
  readonly deltasMissing: number
}

/** `count` serve over one fresh database; `iterations` prompts through the first, measured. */
const measure = async (postgres: PostgresServer.PostgresServer, scope: Scope.Scope, llmUrl: string, count: number) => {
  const database = await Effect.runPromise(postgres.database().pipe(Scope.extend(scope)))
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-bench-multihost-"))
  const servers = await Promise.all(
    Array.from({ length: count }, async (_, i) =>
      startServer("ours", {
        root: path.join(root, `host-${i}`),
        llmUrl,
        config: { server: { database } },
        args: cluster ? ["--runner-address", `127.0.0.1:${await FreePort.loopback()}`] : []
      })
    )
  )
  const apis: Array<Api> = servers.map((server) => ({ url: server.url, directory: server.directory }))
  // Every host streams the Location where host A creates the sessions (one machine: the same path).
  const streams = await Promise.all(servers.map((server) => arrivals(server.url, apis[0]!.directory)))
  const rounds: Array<Round> = []
  const others = streams.slice(1)
  try {
    for (let i = 0; i < warmup + iterations; i++) {
      // 1. An instant reply: the Step, and the durable fan-out.
      const sessionID = await createSession(apis[0]!)
      const requests = instant.length
      const start = performance.now()
      await call(apis[0]!, "POST", `/api/session/${sessionID}/prompt`, { prompt: { text: "hello" } })
      // The wait on the host that runs the session and, with several hosts, on another one, together.
      const [step, cross] = await Promise.all([
        waitIdle(apis[0]!, sessionID).then(() => performance.now() - start),
        count > 1 ? waitIdle(apis[1]!, sessionID).then(() => performance.now() - start) : undefined
      ])
      await until(() => streams.every((stream) => stream.stepEnded.has(sessionID)))

      // 2. A reply held after its first chunk: the live fan-out.
      const deltaSession = await createSession(apis[0]!)
      const gates = held.length
      const deltaStart = performance.now()
      await call(apis[0]!, "POST", `/api/session/${deltaSession}/prompt`, { prompt: { text: heldPrompt } })
      await until(() => held.length > gates && held[gates]!.isReached)
      await until(() => streams.every((stream) => stream.firstDelta.has(deltaSession)), 5_000)
      await Effect.runPromise(held[gates]!.release)
      await waitIdle(apis[0]!, deltaSession)

      if (i < warmup) continue
      // The stream that showed the delta (or the step end) first is the one of the host that ran it.
      const deltaArrivals = streams.flatMap((stream) => {
        const at = stream.firstDelta.get(deltaSession)
        return at === undefined ? [] : [at]
      })
      const localDelta = deltaArrivals.length === 0 ? undefined : Math.min(...deltaArrivals)
      const fanouts =
        deltaArrivals.length < 2
          ? []
          : deltaArrivals
              .map((at) => at - localDelta!)
              .sort((a, b) => a - b)
              .slice(1)
      const ends = streams.map((stream) => stream.stepEnded.get(sessionID)!).sort((a, b) => a - b)
      rounds.push({
        step,
        toProvider: instant[requests]! - start,
        ...(cross === undefined ? {} : { cross }),
        ...(others.length === 0
          ? {}
          : {
              durableFanout: median(ends.slice(1).map((at) => at - ends[0]!))
            }),
        ...(localDelta === undefined ? {} : { deltaLocal: localDelta - deltaStart }),
        ...(fanouts.length === 0 ? {} : { deltaFanout: median(fanouts) }),
        deltasMissing: streams.length - deltaArrivals.length
      })
    }
    const cancelled = (await Promise.all(servers.map((server) => statementsCancelled(server.url)))).reduce(
      (a, b) => a + b
    )
    return { rounds, cancelled }
  } finally {
    await Promise.all(streams.map((stream) => stream.close()))
    await Promise.all(servers.map((server) => server.stop()))
  }
}

/** A host's `opencode_db_statements_cancelled_total` (statements interrupted while they ran), from `/metrics`. */
const statementsCancelled = async (url: string): Promise<number> => {
  const text = await (await fetch(`${url}/metrics`)).text()
  const sample = /^opencode_db_statements_cancelled_total(?:\{[^}]*\})? (\S+)$/m.exec(text)
  return sample === null ? 0 : Number(sample[1])
}

export const run = async (): Promise<ReadonlyArray<Figure>> => {
  if (!PostgresServer.available()) throw new Error("no PostgreSQL server binaries (initdb, pg_ctl) on this machine")
  const scope = Effect.runSync(Scope.make())
  try {
    const postgres = await Effect.runPromise(PostgresServer.make().pipe(Scope.extend(scope)))
    const llm = await startLlm((request) => {
      if (isTitleRequest(request.body)) return LLMScript.reply(LLMScript.text("A title"), LLMScript.finish("stop"))
      if (!JSON.stringify(request.body).includes(heldPrompt)) {
        instant.push(performance.now())
        return LLMScript.reply(LLMScript.text("Hi", " there"), LLMScript.finish("stop"))
      }
      const gate = LLMScript.gate()
      held.push(gate)
      return LLMScript.reply(
        LLMScript.text("Hi"),
        LLMScript.hold(gate),
        LLMScript.text(" there"),
        LLMScript.finish("stop")
      )
    })
    try {
      const { rounds: single, cancelled: cancelledSingle } = await measure(postgres, scope, llm.server.url, 1)
      const { rounds: multi, cancelled } = await measure(postgres, scope, llm.server.url, 3)
      const defined = (values: ReadonlyArray<number | undefined>) => values.filter((v): v is number => v !== undefined)
      const missing = multi.reduce((sum, round) => sum + round.deltasMissing, 0)
      console.log(
        `multi-host: ${multi.length * 2 - missing} of ${multi.length * 2} held first deltas reached the hosts not running their session within 5 s`
      )
      const prompts = (warmup + iterations) * 2
      console.log(
        `multi-host: statements interrupted while they ran (cancelled, their connection retired): ${cancelledSingle} on the single host, ${cancelled} on the three, ${prompts} prompts each`
      )
      const name = cluster ? "multi-host-cluster" : "multi-host"
      return [
        { name: `${name}-step-single`, value: median(single.map((r) => r.step)), unit: "ms" },
        { name: `${name}-to-provider-single`, value: median(single.map((r) => r.toProvider)), unit: "ms" },
        { name: `${name}-step-local`, value: median(multi.map((r) => r.step)), unit: "ms" },
        { name: `${name}-to-provider-local`, value: median(multi.map((r) => r.toProvider)), unit: "ms" },
        { name: `${name}-step-cross`, value: median(multi.map((r) => r.cross!)), unit: "ms" },
        { name: `${name}-delta-single`, value: median(defined(single.map((r) => r.deltaLocal))), unit: "ms" },
        { name: `${name}-delta-fanout`, value: median(defined(multi.map((r) => r.deltaFanout))), unit: "ms" },
        { name: `${name}-durable-fanout`, value: median(multi.map((r) => r.durableFanout!)), unit: "ms" }
      ]
    } finally {
      await llm.close()
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

runWhenMain(import.meta.url, run)
