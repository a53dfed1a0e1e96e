import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { HttpApiBuilder, HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Config, type ConfigInfo } from "@opencode-ai/core"
import { LLMScript, ScriptedLLMServer, TestDatabase } from "@opencode-ai/core/testing"
import { InstanceEvent } from "@opencode-ai/schema"
import Database from "better-sqlite3"
import { Context, Effect, Exit, Layer, Option, Schema, Scope } from "effect"
import { Router } from "../src/router.js"
import { listener, tempDir } from "./harness.js"

const { reply, text, toolCall, finish } = LLMScript

/**
 * A server (router, real listener on 127.0.0.1, Core) over `root/opencode.db` whose one provider is
 * the scripted LLM server, with tool output bounded at 5 lines (so a longer read keeps a managed
 * file). Closing it and opening another over the same root is a restart.
 */
const open = (root: string, llmURL: string) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const config = Config.layerTest({
      ...ScriptedLLMServer.config(llmURL),
      tool_output: { max_lines: 5 }
    } as ConfigInfo.Info)
    const context = yield* Layer.buildWithScope(
      HttpApiBuilder.serve().pipe(
        Layer.provide(Router.layer({ auth: Option.none() })),
        Layer.provideMerge(listener()),
        Layer.provideMerge(
          TestDatabase.coreLayer({
            databaseFile: path.join(root, "opencode.db"),
            directory: path.join(root, "project"),
            configDir: path.join(root, "config"),
            dataDir: path.join(root, "data"),
            env: {},
            config
          })
        )
      ),
      scope
    ).pipe(Effect.orDie)
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    const url = `http://127.0.0.1:${address.port}`
    const call = (method: string, route: string, body?: unknown) =>
      Effect.promise(async () => {
        const response = await fetch(`${url}${route}`, {
          method,
          ...(body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {})
        })
        const raw = await response.text()
        return { status: response.status, body: raw === "" ? undefined : JSON.parse(raw) }
      })
    return { url, call, close: Scope.close(scope, Exit.void) }
  })

/** An SSE stream read in the background: its `data:` payloads so far, and whether the server ended it. */
const sse = (url: string) => {
  const controller = new AbortController()
  const state = { events: [] as Array<any>, ended: false }
  const done = (async () => {
    const response = await fetch(url, { signal: controller.signal })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let buffer = ""
    for (;;) {
      const chunk = await reader.read()
      if (chunk.done) break
      buffer += decoder.decode(chunk.value, { stream: true })
      let end = buffer.indexOf("\n\n")
      while (end >= 0) {
        const frame = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const data = frame
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).trimStart())
          .join("\n")
        if (data !== "") state.events.push(JSON.parse(data))
        end = buffer.indexOf("\n\n")
      }
    }
    state.ended = true
  })().catch(() => undefined)
  return { state, done, abort: Effect.sync(() => controller.abort()) }
}

const until = <A>(look: Effect.Effect<A | undefined>) =>
  Effect.gen(function* () {
    for (;;) {
      const found = yield* look
      if (found !== undefined) return found
      yield* Effect.sleep("10 millis")
    }
  })

/** Every table of the database file with a column naming a session, and how many rows of `ids` each holds. */
const rowsOf = (file: string, ids: ReadonlyArray<string>) =>
  TestDatabase.postgres() ? rowsOfPostgres(TestDatabase.urlFor(file), ids) : rowsOfSqlite(file, ids)

/**
 * {@link rowsOf} over the PostgreSQL database standing for the file, read with `psql` (PostgreSQL's
 * own client, outside the runtime) from its catalog, as the SQLite reading uses `sqlite_master`.
 */
const rowsOfPostgres = (url: string, ids: ReadonlyArray<string>) => {
  const query = (statement: string) =>
    execFileSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-qAtc", statement], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 60_000
    })
      .split("\n")
      .filter((line) => line !== "")
  // Identifiers are generated ids (letters, digits, `_`): safe to write as literals.
  const list = ids.map((id) => `'${id.replace(/'/g, "''")}'`).join(", ")
  const columns = query(`
    SELECT table_name || ' ' || column_name FROM information_schema.columns
    WHERE table_schema = current_schema()
      AND (column_name IN ('session_id', 'aggregate_id') OR (table_name = 'session' AND column_name = 'id'))
    ORDER BY table_name, column_name`)
  const counts: Record<string, number> = {}
  for (const line of columns) {
    const [name, key] = line.split(" ")
    counts[`${name}.${key}`] = Number(query(`SELECT count(*) FROM "${name}" WHERE "${key}" IN (${list})`)[0])
  }
  // Logs of other aggregates about the sessions (a permission or question request keeps its own).
  counts["event.data.sessionID"] = Number(
    query(`SELECT count(*) FROM event WHERE data::jsonb ->> 'sessionID' IN (${list})`)[0]
  )
  return counts
}

const rowsOfSqlite = (file: string, ids: ReadonlyArray<string>) => {
  const db = new Database(file, { readonly: true })
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .all() as Array<{ name: string }>
    const counts: Record<string, number> = {}
    for (const { name } of tables) {
      const columns = (db.prepare(`PRAGMA table_info(${name})`).all() as Array<{ name: string }>).map((c) => c.name)
      const keys = columns.filter(
        (c) => c === "session_id" || c === "aggregate_id" || (name === "session" && c === "id")
      )
      for (const key of keys) {
        const marks = ids.map(() => "?").join(", ")
        const row = db.prepare(`SELECT count(*) AS n FROM ${name} WHERE ${key} IN (${marks})`).get(...ids) as {
          n: number
        }
        counts[`${name}.${key}`] = row.n
      }
    }
    // Logs of other aggregates about the sessions (a permission or question request keeps its own).
    const marks = ids.map(() => "?").join(", ")
    counts["event.data.sessionID"] = (
      db
        .prepare(`SELECT count(*) AS n FROM event WHERE json_extract(data, '$.sessionID') IN (${marks})`)
        .get(...ids) as {
        n: number
      }
    ).n
    return counts
  } finally {
    db.close()
  }
}

describe("DELETE /api/session/{sessionID}", () => {
  it.scopedLive(
    "interrupts the running tree, rejects its ask, deletes its rows and files, announces it, ends its streams; a restart shows nothing",
    () =>
      Effect.gen(function* () {
        const llm = yield* ScriptedLLMServer.make()
        const root = fs.realpathSync(tempDir("delete"))
        const project = path.join(root, "project")
        fs.mkdirSync(project)
        fs.writeFileSync(
          path.join(project, "big.txt"),
          `${Array.from({ length: 40 }, (_, i) => `line ${i}`).join("\n")}\n`
        )
        fs.writeFileSync(path.join(project, ".env"), "TOKEN=s3cret\n")
        const dbFile = path.join(root, "opencode.db")
        const host = yield* open(root, llm.url)
        const { call } = host

        // Another session, which the deletion must not touch.
        const other = (yield* call("POST", "/api/session", {})).body.data
        yield* llm.enqueue(reply(text("hello"), finish("stop")))
        expect((yield* call("POST", `/api/session/${other.id}/prompt`, { prompt: { text: "hi" } })).status).toBe(200)
        expect((yield* call("POST", `/api/session/${other.id}/wait`)).status).toBe(204)
        const otherBefore = rowsOf(dbFile, [other.id])

        // The session: a read whose output is kept in a managed file, then a task whose child asks.
        const session = (yield* call("POST", "/api/session", {})).body.data
        const base = `/api/session/${session.id}`
        yield* llm.enqueue(
          reply(toolCall("call_big", "read", { path: "big.txt" }), finish("tool-calls")),
          reply(text("read it"), finish("stop"))
        )
        expect((yield* call("POST", `${base}/prompt`, { prompt: { text: "read big.txt" } })).status).toBe(200)
        expect((yield* call("POST", `${base}/wait`)).status).toBe(204)
        const history = (yield* call("GET", `${base}/message`)).body.data as Array<any>
        const toolPart = history
          .flatMap((message) => message.content ?? [])
          .find((part: any) => part.type === "tool" && part.id === "call_big")
        const kept = toolPart.state.outputPaths as Array<string>
        expect(kept).toHaveLength(1)
        expect(path.dirname(kept[0]!)).toBe(path.join(root, "data", "tool-output"))
        expect(fs.existsSync(kept[0]!)).toBe(true)
        // The session's plan file in the data directory (where the plan agent writes it outside git).
        const plan = path.join(root, "data", "plans", `${session.time.created}-${session.id}.md`)
        fs.mkdirSync(path.dirname(plan), { recursive: true })
        fs.writeFileSync(plan, "# plan\n")

        yield* llm.enqueue(
          reply(
            toolCall("call_task", "task", { description: "Read env", prompt: "Read .env.", subagent_type: "general" }),
            finish("tool-calls")
          ),
          reply(toolCall("call_env", "read", { path: ".env" }), finish("tool-calls"))
        )
        expect((yield* call("POST", `${base}/prompt`, { prompt: { text: "what is in .env?" } })).status).toBe(200)
        const asked = yield* until(
          Effect.map(call("GET", "/api/permission/request"), (listed) => listed.body.data[0] as any)
        )
        const child = asked.sessionID as string
        expect(child).not.toBe(session.id)
        expect((yield* call("GET", `/api/session/${child}`)).body.data.parentID).toBe(session.id)
        expect(Object.keys((yield* call("GET", "/api/session/active")).body.data).sort()).toEqual(
          [session.id, child].sort()
        )
        const ids = [session.id, child]
        expect(Object.values(rowsOf(dbFile, ids)).some((n) => n > 0)).toBe(true)

        // Streams open before the delete: the instance stream and each session's own.
        const global = sse(`${host.url}/api/event`)
        const parentStream = sse(`${host.url}${base}/event`)
        const childStream = sse(`${host.url}/api/session/${child}/event`)
        yield* until(Effect.sync(() => (global.state.events.length > 0 ? true : undefined)))
        yield* until(Effect.sync(() => (childStream.state.events.length > 0 ? true : undefined)))

        const deleted = yield* call("DELETE", base)
        expect(deleted).toEqual({ status: 204, body: undefined })

        // Both are gone, by every route; a second delete is the 404 of `get`.
        const missing = yield* call("GET", base)
        expect(missing.status).toBe(404)
        expect(missing.body._tag).toBe("SessionNotFoundError")
        expect((yield* call("GET", `/api/session/${child}`)).status).toBe(404)
        const again = yield* call("DELETE", base)
        expect(again).toEqual(missing)
        expect((yield* call("DELETE", `/api/session/${child}`)).status).toBe(404)
        expect((yield* call("GET", `${base}/message`)).status).toBe(404)
        expect((yield* call("GET", "/api/session/active")).body.data).toEqual({})
        expect((yield* call("GET", "/api/permission/request")).body.data).toEqual([])
        const listed = (yield* call("GET", "/api/session")).body.data as Array<any>
        expect(listed.map((s) => s.id)).toEqual([other.id])

        // No row of either session is left in any table of the file; the other session's rows are intact.
        const after = rowsOf(dbFile, ids)
        expect(Object.keys(after)).toEqual(
          expect.arrayContaining(["session.id", "event.aggregate_id", "message.session_id", "event.data.sessionID"])
        )
        expect(Object.entries(after).filter(([, n]) => n > 0)).toEqual([])
        expect(rowsOf(dbFile, [other.id])).toEqual(otherBefore)
        // The managed files are gone; the project's own files are not.
        expect(fs.existsSync(kept[0]!)).toBe(false)
        expect(fs.existsSync(plan)).toBe(false)
        expect(fs.existsSync(path.join(project, "big.txt"))).toBe(true)

        // The instance stream: the child's ask was rejected (the interrupt), then each session was announced deleted.
        yield* until(
          Effect.sync(() =>
            global.state.events.filter((e) => e.type === "session.deleted").length === 2 ? true : undefined
          )
        )
        const types = global.state.events.map((e) => `${e.type}:${e.data?.sessionID ?? ""}`)
        const rejected = global.state.events.findIndex(
          (e) => e.type === "permission.v2.replied" && e.data.requestID === asked.id
        )
        expect(rejected).toBeGreaterThanOrEqual(0)
        expect(global.state.events[rejected].data.reply).toBe("reject")
        expect(types.indexOf(`session.deleted:${session.id}`)).toBeGreaterThan(rejected)
        expect(types.indexOf(`session.deleted:${child}`)).toBeGreaterThan(
          types.indexOf(`session.deleted:${session.id}`)
        )
        const announced = global.state.events.find((e) => e.type === "session.deleted" && e.data.sessionID === child)
        expect(announced.data.info).toMatchObject({ id: child, parentID: session.id, directory: project })
        expect(announced.location).toEqual({ directory: project })
        // Each is the contract's SessionDeleted member of V2Event.
        for (const event of global.state.events.filter((e) => e.type === "session.deleted")) {
          expect(Schema.decodeUnknownSync(InstanceEvent.V2Event)(event).type).toBe("session.deleted")
        }

        // Each session's own stream ended after its last events, and the instance stream stays open.
        yield* Effect.promise(() => parentStream.done)
        yield* Effect.promise(() => childStream.done)
        expect(parentStream.state.ended && childStream.state.ended).toBe(true)
        expect(global.state.ended).toBe(false)
        yield* global.abort

        // A restart over the same file shows nothing of them, and the other session as it was.
        yield* host.close
        const restarted = yield* open(root, llm.url)
        expect((yield* restarted.call("GET", base)).status).toBe(404)
        expect((yield* restarted.call("GET", `/api/session/${child}`)).status).toBe(404)
        expect(((yield* restarted.call("GET", "/api/session")).body.data as Array<any>).map((s) => s.id)).toEqual([
          other.id
        ])
        expect((yield* restarted.call("GET", `/api/session/${other.id}/message`)).body.data).toHaveLength(2)
        expect(Object.entries(rowsOf(dbFile, ids)).filter(([, n]) => n > 0)).toEqual([])
        // The log keeps working after the deletion: a new session of the same id starts afresh.
        const recreated = yield* restarted.call("POST", "/api/session", { id: session.id })
        expect(recreated.status).toBe(200)
        expect((yield* restarted.call("GET", `${base}/message`)).body.data).toEqual([])
        yield* restarted.close
      })
  )

  it.scopedLive("an unknown id is the 404 of `get`; a malformed one a 400", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const root = fs.realpathSync(tempDir("delete-unknown"))
      fs.mkdirSync(path.join(root, "project"))
      const { call, close } = yield* open(root, llm.url)
      const unknown = yield* call("DELETE", "/api/session/ses_0000000000000000000000000000")
      const got = yield* call("GET", "/api/session/ses_0000000000000000000000000000")
      expect(unknown.status).toBe(404)
      expect(unknown).toEqual(got)
      expect((yield* call("DELETE", "/api/session/not-a-session")).status).toBe(400)
      yield* close
    })
  )
})
