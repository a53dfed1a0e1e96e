import { execFileSync } from "node:child_process"
import * as path from "node:path"
import { Storage } from "@opencode-ai/core"
import { FreePort, LLMScript, ScriptedLLMServer, TestDatabase } from "@opencode-ai/core/testing"
import Database from "better-sqlite3"
import { Effect, Exit, Scope } from "effect"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { exited, listen, type Running } from "./binary.js"
import { configHome, tempDir } from "./harness.js"

/**
 * Session placement across real processes: two `opencode serve` over one SQLite file (the per-user
 * data directory two servers, or a server and an embedded host, share), or over one PostgreSQL
 * database when the suite runs with `OPENCODE_TEST_DATABASE=postgres`. Each scenario runs with both
 * placements: first-come leases (the default), and the cluster (each server a runner, `--runner-address`,
 * sessions placed by shard). Each session's drain runs on the host holding its lease; a host killed
 * with SIGKILL is taken over by the other, and a host frozen with SIGSTOP past the lease (or shard
 * lock) expiry loses its sessions and, when it wakes, is refused by the commit fence.
 */

const { reply, text, finish, hold, gate } = LLMScript

let scope: Scope.CloseableScope
beforeEach(() => {
  scope = Effect.runSync(Scope.make())
})
afterEach(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

const call = async (url: string, method: string, body?: unknown) => {
  const response = await fetch(url, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } })
  })
  const textBody = await response.text()
  return { status: response.status, body: textBody === "" ? undefined : JSON.parse(textBody) }
}

const messagesOf = (body: any): string => JSON.stringify(body?.messages ?? body?.input ?? body)

/** Where the two servers keep their sessions: the shared SQLite file, or (under the PostgreSQL pass) one database. */
type Store = { readonly file: string } | { readonly url: string }

type Row = { id: string; type: string; seq: number; data: string }

/** The durable log of a session, read from the shared store (PostgreSQL with `psql`, its own client). */
const eventsOf = (store: Store, sessionID: string): Array<Row> => {
  if ("url" in store) {
    const query = `SELECT coalesce(json_agg(json_build_object('id', id, 'type', type, 'seq', seq, 'data', data::text) ORDER BY seq), '[]') FROM event WHERE aggregate_id = '${sessionID}'`
    return JSON.parse(
      execFileSync("psql", [store.url, "-v", "ON_ERROR_STOP=1", "-qAtc", query], { encoding: "utf8" })
    ) as Array<Row>
  }
  const db = new Database(store.file, { readonly: true, fileMustExist: true })
  try {
    return db
      .prepare("SELECT id, type, seq, data FROM event WHERE aggregate_id = ? ORDER BY seq")
      .all(sessionID) as Array<Row>
  } finally {
    db.close()
  }
}

/** The sessions whose lease `host` holds, from the shared store. */
const leasedBy = (store: Store, host: Server): Array<string> => {
  const query =
    host.runner === undefined
      ? `SELECT l.session_id FROM session_lease l JOIN runtime_host h ON h.id = l.host_id WHERE h.pid = ${host.child.pid} ORDER BY l.session_id`
      : `SELECT session_id FROM session_lease WHERE host_id = '${host.runner}' ORDER BY session_id`
  if ("url" in store) {
    const out = execFileSync("psql", [store.url, "-v", "ON_ERROR_STOP=1", "-qAtc", query], { encoding: "utf8" })
    return out.split("\n").filter((line) => line !== "")
  }
  const db = new Database(store.file, { readonly: true, fileMustExist: true })
  try {
    return (db.prepare(query).all() as Array<{ session_id: string }>).map((row) => row.session_id)
  } finally {
    db.close()
  }
}

const typesOf = (events: ReadonlyArray<{ type: string }>) =>
  events.map((event) => event.type.replace("session.next.", ""))
const count = (types: ReadonlyArray<string>, type: string) => types.filter((t) => t === type).length

const activeOn = async (host: Running) =>
  Object.keys((await call(`${host.url}/api/session/active`, "GET")).body?.data ?? {})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * `step`, logging `what` it waits for and `state()` (the session's log, the servers' logs) each minute
 * it is still waiting: a scenario that hangs says where.
 */
const watched = async <A>(what: string, state: () => string, step: () => Promise<A>): Promise<A> => {
  const timer = setInterval(() => console.log(`placement: still waiting for ${what}\n${state()}`), 60_000)
  try {
    return await step()
  } finally {
    clearInterval(timer)
  }
}

/** Polls `done` every 100 ms until it holds. */
const until = async (done: () => boolean | Promise<boolean>) => {
  while (!(await done())) await sleep(100)
}

/**
 * `active` on `host` once it lists `expected` (sorted), or as it stands after 10 s. Over PostgreSQL a
 * host learns what the others run from their announcements (LiveRelay), so a change elsewhere reaches
 * it within a second, and a killed host's last announcement counts until it is `presenceMs` old.
 */
const activeSettled = async (host: Running, expected: ReadonlyArray<string>) => {
  const want = [...expected].sort().join(",")
  const deadline = Date.now() + 10_000
  for (;;) {
    const active = (await activeOn(host)).sort()
    if (active.join(",") === want || Date.now() > deadline) return active
    await sleep(100)
  }
}

/** A server of the pair: with cluster placement, the runner address it registered (`host:port`). */
interface Server extends Running {
  readonly runner: string | undefined
}

/** The placements each scenario runs with, and the lock timings of each (short, for the takeovers). */
const placements = [
  { placement: "leases", cluster: false },
  { placement: "cluster", cluster: true }
] as const

/**
 * Two `opencode serve` over one data directory (one SQLite file), configured for the scripted server;
 * with `cluster`, each a runner at a loopback port of its own.
 */
const twoServers = async (llmURL: string, timings: Record<string, string>, cluster: boolean) => {
  const data = tempDir("data")
  const project = tempDir("project")
  const env = {
    HOME: tempDir("home"),
    XDG_DATA_HOME: data,
    XDG_CONFIG_HOME: configHome(ScriptedLLMServer.config(llmURL)),
    XDG_CACHE_HOME: tempDir("cache"),
    ...timings
  }
  /** A server; with the cluster at `address`, else at a fresh loopback port. */
  const start = async (address?: string): Promise<Server> => {
    const runner = cluster ? (address ?? `127.0.0.1:${await FreePort.loopback()}`) : undefined
    const argv = ["serve", "--port", "0", "--print-logs", ...(runner === undefined ? [] : ["--runner-address", runner])]
    return { ...(await listen(argv, { env, cwd: project })), runner }
  }
  const a = await start()
  const b = await start()
  const url = TestDatabase.serverEnv(data)[Storage.urlVariable]
  const file: Store = url === undefined ? { file: path.join(data, "opencode", "opencode.db") } : { url }
  return { a, b, file, start }
}

/** Of two servers, the one that holds the session's lease (runs it), and the other. */
const runnerOf = (file: Store, a: Server, b: Server, sessionID: string) =>
  leasedBy(file, a).includes(sessionID) ? { runs: a, other: b } : { runs: b, other: a }

/** Short lock timings for the takeovers: a lease heartbeat, or the cluster's lock refresh, expiry and pings. */
const timings = (cluster: boolean, expiryMs?: number): Record<string, string> =>
  cluster
    ? {
        OPENCODE_SHARD_LOCK_REFRESH_MS: "500",
        OPENCODE_SHARD_LOCK_EXPIRY_MS: String(expiryMs ?? 3000),
        OPENCODE_RUNNER_HEALTH_CHECK_MS: "500"
      }
    : {
        OPENCODE_HOST_HEARTBEAT_MS: "500",
        ...(expiryMs === undefined ? {} : { OPENCODE_HOST_EXPIRY_MS: String(expiryMs) })
      }

describe.each(placements)("two opencode serve over one database, $placement placement", ({ cluster }) => {
  it("SIGKILL one mid-Step: its sessions settle and resume on the other; nothing admitted is lost or run twice", async () => {
    const gates = new Map<string, LLMScript.Gate>()
    const llm = await Effect.runPromise(
      ScriptedLLMServer.make({
        // Each session's first prompt streams, then holds; the prompt queued behind it is answered at once.
        respond: (request) => {
          const sent = messagesOf(request.body)
          const after = /after-(\d+)/.exec(sent)
          if (after) return reply(text(`done ${after[1]}`), finish("stop"))
          const first = /hold-(\d+)/.exec(sent)
          if (first === null) return undefined
          const held = gate()
          gates.set(first[1]!, held)
          return reply(text("partial"), hold(held), text(" rest"), finish("stop"))
        },
        title: () => reply(text("A title"), finish("stop"))
      }).pipe(Scope.extend(scope))
    )
    const { a, b, file } = await twoServers(llm.url, timings(cluster), cluster)
    const sessions: Array<string> = []
    const allHeld = () =>
      watched(
        "every Step to stream",
        () =>
          `held so far: ${[...gates.entries()].filter(([, held]) => held.isReached).map(([i]) => i)}\nA: ${a.stderr().slice(-3000)}\nB: ${b.stderr().slice(-3000)}`,
        () => until(() => gates.size === sessions.length && [...gates.values()].every((held) => held.isReached))
      )
    /** A new session, prompted through A or B in turn: with leases the server that wakes it claims it. */
    const startOne = async () => {
      const created = await call(`${a.url}/api/session`, "POST", {})
      expect(created.status).toBe(200)
      const i = sessions.length
      sessions.push(created.body.data.id)
      const via = i % 2 === 0 ? a : b
      expect(
        (await call(`${via.url}/api/session/${sessions[i]}/prompt`, "POST", { prompt: { text: `hold-${i}` } })).status
      ).toBe(200)
    }
    for (let i = 0; i < 4; i++) await startOne()
    await allHeld()
    // With the cluster a session runs on its shard's runner: more sessions until each server runs one
    // (16 on one runner out of two would be a 1 in 32,768 draw).
    while (cluster && (leasedBy(file, a).length === 0 || leasedBy(file, b).length === 0) && sessions.length < 16) {
      await startOne()
      await allHeld()
    }
    console.log("placement: every Step is streaming")
    // Queued behind every running Step, all through B (also those A runs).
    for (let i = 0; i < sessions.length; i++) {
      const admitted = await call(`${b.url}/api/session/${sessions[i]}/prompt`, "POST", {
        prompt: { text: `after-${i}` },
        delivery: "queue"
      })
      expect(admitted.status).toBe(200)
    }
    // Each session runs on exactly one server: the one that holds its lease.
    const onA = leasedBy(file, a)
    const onB = leasedBy(file, b)
    expect([...onA, ...onB].sort()).toEqual([...sessions].sort())
    // `active` answers for the sessions a server runs; over PostgreSQL, for those running on any host.
    const everywhere = "url" in file
    expect(await activeSettled(a, everywhere ? sessions : onA)).toEqual(everywhere ? [...sessions].sort() : onA)
    expect(await activeSettled(b, everywhere ? sessions : onB)).toEqual(everywhere ? [...sessions].sort() : onB)
    expect(onA.filter((id) => onB.includes(id))).toEqual([])
    expect(onA.length).toBeGreaterThan(0)

    const killedAt = Date.now()
    a.child.kill("SIGKILL")
    for (const held of gates.values()) await Effect.runPromise(held.release)
    // `wait` through the survivor: every session (also those the killed server ran) ends settled and idle.
    for (const sessionID of sessions) {
      const waited = await watched(
        `${sessionID} to settle`,
        () => `${typesOf(eventsOf(file, sessionID)).join(" ")}\n${b.stderr().slice(-6000)}`,
        () => call(`${b.url}/api/session/${sessionID}/wait`, "POST")
      )
      expect(waited.status).toBe(204)
    }
    console.log(`placement: every session settled on the survivor ${Date.now() - killedAt} ms after the SIGKILL`)

    for (const sessionID of sessions) {
      const events = eventsOf(file, sessionID)
      const types = typesOf(events)
      const context = `${sessionID} (${onA.includes(sessionID) ? "killed" : "survivor"}): ${types.join(" ")}`
      // Gapless from the session's origin (seq 0); no event recorded twice.
      expect(
        events.map((event) => event.seq),
        context
      ).toEqual(events.map((_, i) => i))
      expect(new Set(events.map((event) => event.id)).size, context).toBe(events.length)
      // Both prompts admitted once and promoted once: nothing lost, nothing run twice.
      expect(count(types, "prompt.admitted"), context).toBe(2)
      expect(count(types, "prompted"), context).toBe(2)
      expect(count(types, "step.started"), context).toBe(2)
      // The last Step ended (the survivor's title may land after it, in the background).
      expect(types.filter((type) => type !== "title.updated").at(-1), context).toBe("step.ended")
      if (onA.includes(sessionID)) {
        // Its first Step was cut off with its server and settled by the survivor; the queued prompt ran there.
        expect(count(types, "step.failed"), context).toBe(1)
        expect(count(types, "step.ended"), context).toBe(1)
        expect(types.indexOf("step.failed"), context).toBeLessThan(types.lastIndexOf("step.started"))
      } else {
        expect(count(types, "step.failed"), context).toBe(0)
        expect(count(types, "step.ended"), context).toBe(2)
      }
    }
    // Settled everywhere: over PostgreSQL the killed server's last announcement still counts for a
    // few seconds, but no live server holds those sessions' leases, so they are not listed.
    expect(await activeOn(b)).toEqual([])
  }, 600_000)

  it("interrupt and wait through the server that does not run the session", async () => {
    const held = gate()
    const llm = await Effect.runPromise(
      ScriptedLLMServer.make({
        respond: () => reply(text("partial"), hold(held), text(" rest"), finish("stop")),
        title: () => reply(text("A title"), finish("stop"))
      }).pipe(Scope.extend(scope))
    )
    const { a, b, file } = await twoServers(llm.url, {}, cluster)
    const sessionID = (await call(`${a.url}/api/session`, "POST", {})).body.data.id
    expect((await call(`${a.url}/api/session/${sessionID}/prompt`, "POST", { prompt: { text: "go" } })).status).toBe(
      200
    )
    await Effect.runPromise(held.reached)
    // With leases A runs it (it woke it); with the cluster, the runner of its shard.
    const { runs, other } = runnerOf(file, a, b, sessionID)
    if (!cluster) expect(runs).toBe(a)
    expect(await activeOn(runs)).toEqual([sessionID])
    // Over PostgreSQL the other lists it too (the runner announces what it runs); over SQLite each lists its own.
    const elsewhere = "url" in file ? [sessionID] : []
    expect(await activeSettled(other, elsewhere)).toEqual(elsewhere)
    // Through the other server: the runner interrupts the Step; then the session is idle everywhere.
    expect((await call(`${other.url}/api/session/${sessionID}/interrupt`, "POST")).status).toBe(204)
    await Effect.runPromise(held.aborted)
    expect((await call(`${other.url}/api/session/${sessionID}/wait`, "POST")).status).toBe(204)
    expect(await activeOn(runs)).toEqual([])
    expect(await activeSettled(other, [])).toEqual([])
    const types = typesOf(eventsOf(file, sessionID))
    expect(types.at(-1)).toBe("step.failed")
    expect(count(types, "step.started")).toBe(1)
  }, 240_000)

  it("a server frozen (SIGSTOP) past its lease expiry mid-Step, then resumed: its session moved, its late commits are refused, nothing is recorded twice", async () => {
    const held = gate()
    const llm = await Effect.runPromise(
      ScriptedLLMServer.make({
        respond: (request) =>
          /after/.test(messagesOf(request.body))
            ? reply(text("done"), finish("stop"))
            : reply(text("partial"), hold(held), text(" rest"), finish("stop")),
        title: () => reply(text("A title"), finish("stop"))
      }).pipe(Scope.extend(scope))
    )
    const { a, b, file } = await twoServers(llm.url, timings(cluster, 3000), cluster)
    const sessionID = (await call(`${a.url}/api/session`, "POST", {})).body.data.id
    expect((await call(`${a.url}/api/session/${sessionID}/prompt`, "POST", { prompt: { text: "go" } })).status).toBe(
      200
    )
    await Effect.runPromise(held.reached)
    const { runs, other } = runnerOf(file, a, b, sessionID)
    expect(await activeOn(runs)).toEqual([sessionID])
    // Queued behind the running Step, through the server that stays up.
    expect(
      (
        await call(`${other.url}/api/session/${sessionID}/prompt`, "POST", {
          prompt: { text: "after" },
          delivery: "queue"
        })
      ).status
    ).toBe(200)

    /** What a hung wait logs: the session's log, and both servers' logs. */
    const state = () =>
      `${typesOf(eventsOf(file, sessionID)).join(" ")}\nfrozen: ${runs.stderr().slice(-4000)}\nother: ${other.stderr().slice(-4000)}`
    runs.child.kill("SIGSTOP")
    try {
      // Once the frozen server's heartbeat (or shard lock) is older than the expiry, the other takes
      // the session over: it settles the frozen Step and runs the queued prompt.
      const waited = await watched("the takeover", state, () =>
        call(`${other.url}/api/session/${sessionID}/wait`, "POST")
      )
      expect(waited.status).toBe(204)
    } finally {
      runs.child.kill("SIGCONT")
    }
    // The survivor names the session after its first settled Step, in the background: wait for that commit.
    await watched("the title", state, () => until(() => typesOf(eventsOf(file, sessionID)).includes("title.updated")))
    const settled = eventsOf(file, sessionID)
    const settledTypes = typesOf(settled)
    expect(count(settledTypes, "step.failed"), settledTypes.join(" ")).toBe(1)
    expect(count(settledTypes, "step.ended"), settledTypes.join(" ")).toBe(1)
    expect(count(settledTypes, "step.started"), settledTypes.join(" ")).toBe(2)
    expect(settledTypes.filter((type) => type !== "title.updated").at(-1)).toBe("step.ended")

    // The frozen server wakes mid-Step: its stream goes on, and its drain tries to record the rest.
    await Effect.runPromise(held.release)
    await watched("the fence", state, () => until(() => runs.stderr().includes("CommitFenced")))
    await watched("the woken Step to end", state, () => until(async () => !(await activeOn(runs)).includes(sessionID)))
    // Refused by the fence: nothing more was recorded for the session.
    expect(eventsOf(file, sessionID)).toEqual(settled)
    // The session lives on: a new prompt through the resumed server runs once (there, or with the
    // cluster on whichever runner holds its shard now).
    expect(
      (await call(`${runs.url}/api/session/${sessionID}/prompt`, "POST", { prompt: { text: "after again" } })).status
    ).toBe(200)
    for (const via of [runs, other]) {
      const waited = await watched("the new prompt", state, () =>
        call(`${via.url}/api/session/${sessionID}/wait`, "POST")
      )
      expect(waited.status).toBe(204)
    }
    const final = eventsOf(file, sessionID)
    const finalTypes = typesOf(final)
    expect(final.map((event) => event.seq)).toEqual(final.map((_, i) => i))
    expect(final.slice(0, settled.length)).toEqual(settled)
    expect(count(finalTypes, "step.ended"), finalTypes.join(" ")).toBe(2)
    expect(count(finalTypes, "step.started"), finalTypes.join(" ")).toBe(3)
    expect(count(finalTypes, "prompted"), finalTypes.join(" ")).toBe(3)
    expect(finalTypes.filter((type) => type !== "title.updated").at(-1)).toBe("step.ended")
  }, 240_000)

  it("a server killed mid-Step and started again (at the same runner address): the Step is settled and the queued prompt runs, once", async () => {
    const held = gate()
    const llm = await Effect.runPromise(
      ScriptedLLMServer.make({
        respond: (request) =>
          /after/.test(messagesOf(request.body))
            ? reply(text("done"), finish("stop"))
            : reply(text("partial"), hold(held), text(" rest"), finish("stop")),
        title: () => reply(text("A title"), finish("stop"))
      }).pipe(Scope.extend(scope))
    )
    const { a, b, file, start } = await twoServers(llm.url, timings(cluster), cluster)
    // One server only: the other stops first, so that nobody else takes the session over.
    b.child.kill("SIGTERM")
    await exited(b.child)
    const sessionID = (await call(`${a.url}/api/session`, "POST", {})).body.data.id
    expect((await call(`${a.url}/api/session/${sessionID}/prompt`, "POST", { prompt: { text: "go" } })).status).toBe(
      200
    )
    await Effect.runPromise(held.reached)
    expect(
      (await call(`${a.url}/api/session/${sessionID}/prompt`, "POST", { prompt: { text: "after" }, delivery: "queue" }))
        .status
    ).toBe(200)
    a.child.kill("SIGKILL")
    await exited(a.child)
    // The same server again: its own lease (and, with the cluster, its own address) from before.
    const again = await start(a.runner)
    expect((await call(`${again.url}/api/session/${sessionID}/wait`, "POST")).status).toBe(204)
    const types = typesOf(eventsOf(file, sessionID)).filter((type) => type !== "title.updated")
    expect(count(types, "step.failed"), types.join(" ")).toBe(1)
    expect(count(types, "step.started"), types.join(" ")).toBe(2)
    expect(count(types, "step.ended"), types.join(" ")).toBe(1)
    expect(count(types, "prompted"), types.join(" ")).toBe(2)
    expect(types.at(-1), types.join(" ")).toBe("step.ended")
  }, 240_000)
})
