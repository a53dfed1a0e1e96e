import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { FreePort, LLMScript, PostgresServer, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest"
import * as Binary from "./binary.js"
import { configHome, tempDir } from "./harness.js"
import { SseReader } from "./stream-harness.js"

/*
 * Several hosts over one database: three `opencode serve` processes of the built binary over one real
 * PostgreSQL server, a scripted model on loopback. Clients talk to whichever host; each host's event
 * streams show every session's durable events (from the log, gapless) and the live deltas of sessions
 * that run on another host (relayed over LISTEN/NOTIFY); `active`, `wait` and `interrupt` answer for
 * sessions running anywhere; and a host killed with SIGKILL mid-Step leaves its sessions to the others.
 * The tests speak HTTP only, so they hold whatever places sessions on hosts: they run with first-come
 * leases (the default) and with the cluster (each host a runner, `--runner-address`, sessions placed
 * by shard).
 */

const { reply, text, hold, finish, gate } = LLMScript

type Gate = LLMScript.Gate

/** Polls `check` every 250 ms until it holds; fails naming `what` after `ms`. */
const until = async (what: string, ms: number, check: () => boolean | Promise<boolean>): Promise<number> => {
  const start = Date.now()
  for (;;) {
    if (await check()) return Date.now() - start
    if (Date.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

const api = async (url: string, method: string, route: string, body?: unknown) => {
  const response = await fetch(`${url}${route}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
}

/** An SSE response read in the background into `frames` (data parsed as JSON) until `close`. */
const watch = async (url: string, route: string) => {
  const controller = new AbortController()
  const response = await fetch(`${url}${route}`, {
    headers: { accept: "text/event-stream" },
    signal: controller.signal
  })
  expect(response.status).toBe(200)
  const reader = new SseReader(response)
  const frames: Array<{ readonly id: string | undefined; readonly data: any }> = []
  const state = { ended: false }
  const done = (async () => {
    for (;;) {
      const frame = await reader.next().catch(() => undefined)
      if (frame === undefined) {
        state.ended = true
        return
      }
      frames.push({ id: frame.id, data: JSON.parse(frame.data) })
    }
  })()
  return {
    frames,
    state,
    close: async () => {
      controller.abort()
      await reader.cancel()
      await done
    }
  }
}
type Watch = Awaited<ReturnType<typeof watch>>

/** PostgreSQL's own client, without blocking this process (it also serves the model and reads the streams). */
const psql = promisify(execFile)

/** Each session's durable events (seq > 0) as stored, in seq order: `<seq>:<event id>:<type>`, read with psql. */
const storedLogs = async (databaseUrl: string): Promise<Map<string, Array<string>>> => {
  const { stdout: out } = await psql(
    "psql",
    [
      databaseUrl,
      "-v",
      "ON_ERROR_STOP=1",
      "-qAtc",
      "SELECT aggregate_id, seq, id, type FROM event WHERE seq > 0 ORDER BY aggregate_id, seq"
    ],
    { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 }
  )
  const logs = new Map<string, Array<string>>()
  for (const line of out.split("\n")) {
    if (line === "") continue
    const [aggregate, seq, id, type] = line.split("|")
    const log = logs.get(aggregate!) ?? []
    log.push(`${seq}:${id}:${type}`)
    logs.set(aggregate!, log)
  }
  return logs
}

/** Each session's stored event types, in seq order, read with psql. */
const storedTypes = async (databaseUrl: string): Promise<Map<string, Array<string>>> => {
  const { stdout: out } = await psql(
    "psql",
    [databaseUrl, "-v", "ON_ERROR_STOP=1", "-qAtc", "SELECT aggregate_id, type FROM event ORDER BY aggregate_id, seq"],
    { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 }
  )
  const types = new Map<string, Array<string>>()
  for (const line of out.split("\n")) {
    if (line === "") continue
    const [aggregate, type] = line.split("|")
    const list = types.get(aggregate!) ?? []
    list.push(type!)
    types.set(aggregate!, list)
  }
  return types
}

/** The text of the last user message of a recorded chat-completions request. */
const lastUserText = (body: any): string => {
  const users = (body?.messages ?? []).filter((message: { role: string }) => message.role === "user")
  const content = users.at(-1)?.content
  if (typeof content === "string") return content
  if (Array.isArray(content)) return content.map((part: { text?: string }) => part.text ?? "").join("")
  return ""
}

/** A long delta with multi-byte characters: well over NOTIFY's 8000-byte payload. */
const bigDelta = (tag: string) => `big ${tag} ${"é€😀 ".repeat(3_000)}end ${tag}`

/**
 * Waits (at most `limitMs`) until the cluster's runners have spread the shards: every shard's lock
 * held, by each of `runners`, each with at least a fair share less a tenth, and no lock changed hands
 * over `quietMs`. Runners that start together keep moving shards for a few seconds, so the test
 * places its sessions once that has settled.
 */
const placementSettled = async (
  databaseUrl: string,
  runners: ReadonlyArray<string>,
  quietMs = 3_000,
  limitMs = 60_000
) => {
  const read = async () =>
    (
      await psql(
        "psql",
        [
          databaseUrl,
          "-v",
          "ON_ERROR_STOP=1",
          "-qAtc",
          "SELECT shard_id, address FROM cluster_locks ORDER BY shard_id"
        ],
        { encoding: "utf8" }
      )
    ).stdout
  const spread = (locks: string) => {
    const perRunner = new Map(runners.map((runner) => [runner, 0]))
    const lines = locks.split("\n").filter((line) => line !== "")
    for (const line of lines) {
      const address = line.slice(line.indexOf("|") + 1)
      if (perRunner.has(address)) perRunner.set(address, perRunner.get(address)! + 1)
    }
    const fair = lines.length / runners.length
    return lines.length > 0 && [...perRunner.values()].every((held) => held >= fair * 0.9)
  }
  const start = Date.now()
  let last = await read()
  while (Date.now() < start + limitMs) {
    await new Promise((resolve) => setTimeout(resolve, quietMs))
    const now = await read()
    if (now === last && spread(now)) {
      console.log(
        `multi-host: the runners' shards were spread and still ${Date.now() - start} ms after the hosts listened`
      )
      return
    }
    last = now
  }
  console.log(`multi-host: the runners' shards were still moving ${limitMs} ms after the hosts listened`)
}

const holders = async (
  databaseUrl: string,
  started: ReadonlyArray<{ readonly child: { readonly pid?: number | undefined }; readonly runner: string | undefined }>
): Promise<Map<string, number>> => {
  const { stdout } = await psql(
    "psql",
    [
      databaseUrl,
      "-v",
      "ON_ERROR_STOP=1",
      "-qAtc",
      "SELECT l.session_id, l.host_id, coalesce(h.pid, 0) FROM session_lease l LEFT JOIN runtime_host h ON h.id = l.host_id"
    ],
    { encoding: "utf8" }
  )
  const held = new Map<string, number>()
  for (const line of stdout.split("\n")) {
    if (line === "") continue
    const [sessionID, host, pid] = line.split("|")
    const index = started.findIndex((one) =>
      one.runner === undefined ? one.child.pid === Number(pid) : one.runner === host
    )
    if (index !== -1) held.set(sessionID!, index)
  }
  return held
}

describe.runIf(PostgresServer.testable()).each([
  { placement: "leases", cluster: false },
  { placement: "cluster", cluster: true }
])("three opencode serve over one PostgreSQL, $placement placement", ({ cluster }) => {
  let scope: Scope.CloseableScope
  let postgres: PostgresServer.PostgresServer
  let llm: ScriptedLLMServer.ScriptedLLMServer
  /** What the model does for a prompt whose text starts with a tag: the gate it holds at, if any. */
  const heldAt = new Map<string, Gate>()
  /** How many Step requests each prompt text got. */
  const requested = new Map<string, number>()

  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    postgres = await Effect.runPromise(PostgresServer.make().pipe(Scope.extend(scope)))
    llm = await Effect.runPromise(
      ScriptedLLMServer.make({
        record: false,
        title: () => reply(text("A title"), finish("stop")),
        respond: (request) => {
          const prompt = lastUserText(request.body)
          requested.set(prompt, (requested.get(prompt) ?? 0) + 1)
          const tag = prompt.split(" ")[0]!
          const held = heldAt.get(prompt)
          const first = prompt.includes("big") ? bigDelta(tag) : `alpha ${tag} `
          if (held !== undefined) return reply(text(first), hold(held), text(`omega ${tag}`), finish("stop"))
          // A pause between the first delta and the end, so that they travel in separate commits.
          const pause = gate()
          setTimeout(() => Effect.runSync(pause.release), 150)
          return reply(text(first), hold(pause), text(`omega ${tag}`), finish("stop"))
        }
      }).pipe(Scope.extend(scope))
    )
  }, 120_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)

  /**
   * Three hosts over a fresh database; their URLs and processes. Should the test fail, each host's
   * warnings and errors are printed beside the failure (a runner that lost its shard locks says so).
   */
  const hosts = async (count = 3) => {
    const databaseUrl = await Effect.runPromise(postgres.database().pipe(Scope.extend(scope)))
    const project = tempDir("project")
    // No file snapshots: they are beside the point here, and each one is a git process on a loaded machine.
    const config = configHome({ ...ScriptedLLMServer.config(llm.url), snapshot: false })
    const started = await Promise.all(
      Array.from({ length: count }, async () => {
        const runner = cluster ? `127.0.0.1:${await FreePort.loopback()}` : undefined
        const host = await Binary.listen(
          ["serve", "--port", "0", "--print-logs", ...(runner === undefined ? [] : ["--runner-address", runner])],
          {
            cwd: project,
            env: {
              OPENCODE_DATABASE_URL: databaseUrl,
              XDG_CONFIG_HOME: config,
              XDG_DATA_HOME: tempDir("data"),
              XDG_CACHE_HOME: tempDir("cache"),
              // A runner whose shard-lock query takes longer than min(refresh, expiry / 3) drops every
              // shard at once and cuts its Steps off (the cluster's rule). Three servers, PostgreSQL and
              // the rest of the suite on a shared machine can stall a query past the default 1 s, so
              // the locks are refreshed every 2 s and expire after 6 s here (a killed runner's
              // sessions then move in about 7 s).
              ...(runner === undefined
                ? {}
                : { OPENCODE_SHARD_LOCK_REFRESH_MS: "2000", OPENCODE_SHARD_LOCK_EXPIRY_MS: "6000" })
            }
          }
        )
        return { ...host, runner }
      })
    )
    onTestFailed(() => {
      for (const [h, host] of started.entries()) {
        const lines = `${host.stdout()}\n${host.stderr()}`
          .split("\n")
          .filter((line) => /level=(WARN|ERROR|FATAL)|Error/.test(line))
        console.log(`multi-host: host ${h}'s warnings and errors (${lines.length}):\n${lines.slice(-40).join("\n")}`)
      }
    })
    if (cluster)
      await placementSettled(
        databaseUrl,
        started.map((host) => host.runner!)
      )
    return { databaseUrl, started, urls: started.map((host) => host.url) }
  }

  const createSession = async (url: string): Promise<string> => {
    const created = await api(url, "POST", "/api/session", {})
    expect(created.status).toBe(200)
    return created.body.data.id
  }

  const prompt = async (url: string, sessionID: string, body: Record<string, unknown>) => {
    const admitted = await api(url, "POST", `/api/session/${sessionID}/prompt`, body)
    expect(admitted.status, JSON.stringify(admitted.body)).toBe(200)
  }

  const activeOn = async (url: string): Promise<ReadonlyArray<string>> => {
    const answer = await api(url, "GET", "/api/session/active")
    expect(answer.status).toBe(200)
    return Object.keys(answer.body.data)
  }

  /** The global stream's events about `sessionID`, in arrival order. */
  const about = (stream: Watch, sessionID: string) =>
    stream.frames.map((frame) => frame.data).filter((event) => event.data?.sessionID === sessionID)

  it("60 sessions across three hosts: every host streams every session's log and deltas; active, wait and interrupt through any host", {
    timeout: 600_000
  }, async () => {
    const { databaseUrl, urls } = await hosts()
    const global = await Promise.all(urls.map((url) => watch(url, "/api/event")))
    const count = 60
    const sessions = await Promise.all(Array.from({ length: count }, (_, i) => createSession(urls[i % 3]!)))
    // Every session's own stream on every host, open before anything runs.
    const streams = await Promise.all(
      sessions.map((sessionID) => Promise.all(urls.map((url) => watch(url, `/api/session/${sessionID}/event`))))
    )
    // Sessions 5, 25 and 45 hold mid-Step until interrupted through yet another host.
    const held = new Set([5, 25, 45])
    const texts = sessions.map((_, i) => `s${i} ${i % 10 === 0 ? "big" : "go"}`)
    const gates = new Map<number, Gate>()
    for (const i of held) {
      const g = gate()
      gates.set(i, g)
      heldAt.set(texts[i]!, g)
    }
    // Prompted through the host after the one that created it: with leases the session runs there;
    // with the cluster, on its shard's runner.
    await Promise.all(
      sessions.map((sessionID, i) => prompt(urls[(i + 1) % 3]!, sessionID, { prompt: { text: texts[i] } }))
    )

    // The held sessions are active on every host, wherever they run.
    for (const i of held) await Effect.runPromise(gates.get(i)!.reached)
    for (const url of urls) {
      await until("every host to list the held sessions as active", 30_000, async () => {
        const active = new Set(await activeOn(url))
        return [...held].every((i) => active.has(sessions[i]!))
      })
    }
    // Interrupted through another host (with leases, one that does not run them).
    await Promise.all(
      [...held].map(async (i) => {
        const interrupted = await api(urls[(i + 2) % 3]!, "POST", `/api/session/${sessions[i]}/interrupt`)
        expect(interrupted.status, JSON.stringify(interrupted.body)).toBe(204)
        await Effect.runPromise(gates.get(i)!.aborted)
      })
    )
    // `wait` through the third host resolves once each session is idle wherever it ran.
    await Promise.all(
      sessions.map(async (sessionID, i) => {
        const waited = await api(urls[(i + 2) % 3]!, "POST", `/api/session/${sessionID}/wait`)
        expect(waited.status, JSON.stringify(waited.body)).toBe(204)
      })
    )
    for (const url of urls) {
      await until("no host to list a session as active", 30_000, async () => (await activeOn(url)).length === 0)
    }

    // Every host's stream of every session shows its whole log as stored: gapless, in order, once.
    let logs = await storedLogs(databaseUrl)
    // (On a timeout the comparison below shows what is missing where.)
    await until("every session stream on every host to carry the stored log", 120_000, async () => {
      logs = await storedLogs(databaseUrl)
      return streams.every((perHost, i) =>
        perHost.every((stream) => {
          const expected = logs.get(sessions[i]!) ?? []
          return stream.frames.length >= expected.length
        })
      )
    }).catch(() => undefined)
    const stored = await storedTypes(databaseUrl)
    sessions.forEach((sessionID, i) => {
      const expected = logs.get(sessionID)!
      // A held session interrupted before its Step's first durable event has only its prompt's two.
      expect(expected.length).toBeGreaterThanOrEqual(held.has(i) ? 2 : 5)
      for (const [h, stream] of streams[i]!.entries()) {
        expect(
          stream.frames.map((frame) => `${frame.id}:${frame.data.id}:${frame.data.type}`),
          `session ${i} on host ${h} (stream ended early: ${stream.state.ended})`
        ).toEqual(expected)
      }
      const types = stored.get(sessionID)!
      if (held.has(i)) expect(types).not.toContain("session.next.step.ended")
      else expect(types).toContain("session.next.step.ended")
    })
    // Each prompt reached the model once.
    for (const prompted of texts) expect(requested.get(prompted)).toBe(1)

    // Deltas are best-effort across hosts: one whose session's next durable event overtakes it is
    // dropped, never shown out of place. So first deltas reach hosts that do not run their session
    // (long ones whole), and every first delta that arrived anywhere sits between the durable events
    // around it.
    // (The host running a session always shows its deltas: every host beyond one that shows a first
    // delta got it relayed.)
    let relayed = 0
    sessions.forEach((sessionID, i) => {
      const tag = `s${i}`
      const first = i % 10 === 0 ? bigDelta(tag) : `alpha ${tag} `
      let shown = 0
      urls.forEach((_, h) => {
        const events = about(global[h]!, sessionID)
        const types = events.map((event) => event.type)
        const delta = events.findIndex(
          (event) => event.type === "session.next.text.delta" && event.data.delta === first
        )
        if (delta === -1) return
        shown++
        expect(types.indexOf("session.next.text.started")).toBeLessThan(delta)
        const ended = types.indexOf("session.next.text.ended")
        expect(ended === -1 || ended > delta).toBe(true)
      })
      relayed += Math.max(0, shown - 1)
    })
    console.log(`multi-host: ${relayed} of ${count * 2} first deltas reached the hosts not running their session`)
    expect(relayed).toBeGreaterThan(0)

    await Promise.all([...global, ...streams.flat()].map((stream) => stream.close()))
  })

  it("a host killed with SIGKILL mid-Step: its sessions settle and resume on the others; nothing admitted is lost or run twice", {
    timeout: 600_000
  }, async () => {
    const { databaseUrl, started, urls } = await hosts()
    const count = 12
    const sessions = await Promise.all(Array.from({ length: count }, (_, i) => createSession(urls[i % 3]!)))
    const gates = sessions.map(() => gate())
    const first = sessions.map((_, i) => `k${i} first`)
    sessions.forEach((_, i) => heldAt.set(first[i]!, gates[i]!))
    // With leases, sessions 0-5 run on host 0 (it wakes them), 6-11 on the others; with the cluster,
    // each on its shard's runner.
    const wakesOn = (i: number) => (i < 6 ? 0 : 1 + (i % 2))
    await Promise.all(
      sessions.map((sessionID, i) => prompt(urls[wakesOn(i)]!, sessionID, { prompt: { text: first[i] } }))
    )
    await Promise.all(gates.map((g) => Effect.runPromise(g.reached)))
    const runsOn = await holders(databaseUrl, started)
    expect(runsOn.size).toBe(count)
    // The host that runs the most sessions dies (with leases, host 0).
    const load = [0, 1, 2].map((h) => sessions.filter((id) => runsOn.get(id) === h).length)
    const victimIndex = load.indexOf(Math.max(...load))
    if (!cluster) expect(victimIndex).toBe(0)
    const victim = started[victimIndex]!
    const survivors = started.filter((_, h) => h !== victimIndex)
    const onVictim = (i: number) => runsOn.get(sessions[i]!) === victimIndex
    // A second prompt for each, admitted through another host while the Step runs: it waits behind it.
    await Promise.all(
      sessions.map((sessionID, i) =>
        prompt(urls[(runsOn.get(sessionID)! + 1) % 3]!, sessionID, {
          prompt: { text: `k${i} second` },
          delivery: "queue"
        })
      )
    )

    victim.child.kill("SIGKILL")
    await Binary.exited(victim.child)
    // The dead host's Steps are settled and its sessions resumed on the others (the second prompt runs).
    // The target is 10 s; the bound here is generous because the machine running the tests may
    // be loaded many times over. The time it took is printed.
    const settled = await until("the dead host's sessions to settle and resume elsewhere", 30_000, async () => {
      const stored = await storedTypes(databaseUrl)
      return sessions
        .filter((_, i) => onVictim(i))
        .every((sessionID) => {
          const types = stored.get(sessionID) ?? []
          const failed = types.indexOf("session.next.step.failed")
          // Settled (the Step failed) and resumed (the prompt admitted meanwhile is promoted after it).
          return failed !== -1 && types.indexOf("session.next.prompted", failed) !== -1
        })
    })
    console.log(`multi-host: the killed host's sessions settled and resumed ${settled} ms after its exit`)
    for (const [i, g] of gates.entries()) if (!onVictim(i)) Effect.runSync(g.release)

    await Promise.all(
      sessions.map(async (sessionID, i) => {
        const waited = await api(survivors[i % 2]!.url, "POST", `/api/session/${sessionID}/wait`)
        expect(waited.status, JSON.stringify(waited.body)).toBe(204)
      })
    )
    for (const host of survivors) {
      await until("the dead host to drop out of active", 30_000, async () => (await activeOn(host.url)).length === 0)
    }
    const stored = await storedTypes(databaseUrl)
    sessions.forEach((sessionID, i) => {
      const types = stored.get(sessionID)!.map((type) => type.replace("session.next.", ""))
      // Both prompts admitted once and promoted once; the log is whole.
      expect(types.filter((type) => type === "prompt.admitted")).toHaveLength(2)
      expect(types.filter((type) => type === "prompted")).toHaveLength(2)
      if (onVictim(i)) {
        expect(types.filter((type) => type === "step.failed")).toHaveLength(1)
        expect(types.filter((type) => type === "step.started")).toHaveLength(2)
        expect(types.filter((type) => type === "step.ended")).toHaveLength(1)
      } else {
        expect(types).not.toContain("step.failed")
        expect(types.filter((type) => type === "step.ended").length).toBeGreaterThanOrEqual(1)
      }
      // No Step ran twice: the model saw each prompt once.
      expect(requested.get(first[i]!)).toBe(1)
      expect(requested.get(`k${i} second`)).toBe(1)
    })
    const logs = await storedLogs(databaseUrl)
    for (const sessionID of sessions) {
      const seqs = logs.get(sessionID)!.map((entry) => Number(entry.split(":")[0]))
      expect(seqs).toEqual(seqs.map((_, i) => i + 1))
    }
  })
})
