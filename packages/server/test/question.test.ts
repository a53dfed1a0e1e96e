import { HttpApiBuilder, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { createOpencodeClient } from "@opencode-ai/client"
import { Config, type ConfigInfo, Core, EventLog } from "@opencode-ai/core"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { Router } from "../src/router.js"
import { tempDir } from "./harness.js"
import { SseReader } from "./stream-harness.js"

const { reply, text, toolCall, finish } = LLMScript

/**
 * The `question` tool answered over HTTP on the real listener: Server's router over a Core whose one
 * provider is a scripted LLM server on 127.0.0.1.
 */
const listener = () => {
  const server = http.createServer()
  const closeDrained = Effect.addFinalizer(() =>
    Effect.sync(() => {
      const timer = setInterval(() => server.closeIdleConnections(), 25)
      server.once("close", () => clearInterval(timer))
    })
  )
  return Layer.scopedDiscard(closeDrained).pipe(
    Layer.provideMerge(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" }))
  )
}

const questions = [
  {
    question: "Which database?",
    header: "Database",
    options: [
      { label: "SQLite", description: "Embedded" },
      { label: "Postgres", description: "Server" }
    ]
  },
  {
    question: "Which features?",
    header: "Features",
    options: [
      { label: "Auth", description: "Login" },
      { label: "Search", description: "Full text" }
    ],
    multiple: true
  }
]

const setup = Effect.gen(function* () {
  const llm = yield* ScriptedLLMServer.make()
  const root = fs.realpathSync(tempDir("question"))
  const directory = path.join(root, "project")
  fs.mkdirSync(directory)
  const config = Config.layerTest({
    provider: {
      scripted: {
        npm: "@ai-sdk/openai-compatible",
        options: { baseURL: llm.url, apiKey: "test-key" },
        models: { m: { name: "Scripted", tool_call: true, limit: { context: 100_000, output: 1000 } } }
      }
    },
    model: "scripted/m"
  } as ConfigInfo.Info)
  const context = yield* Layer.build(
    HttpApiBuilder.serve().pipe(
      Layer.provide(Router.layer({ auth: Option.none() })),
      Layer.provideMerge(listener()),
      Layer.provideMerge(
        Core.layer({ databaseFile: path.join(root, "opencode.db"), directory, configDir: path.join(root, "config"), env: {}, config })
      )
    )
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
  const session = (yield* call("POST", "/api/session", {})).body.data as { id: string }
  const base = `/api/session/${session.id}`
  const prompt = (words: string) => call("POST", `${base}/prompt`, { prompt: { text: words } })
  const pending = (count: number) =>
    Effect.gen(function* () {
      for (;;) {
        const listed = yield* call("GET", `${base}/question`)
        if (listed.body.data.length >= count) return listed.body.data as Array<any>
        yield* Effect.sleep("5 millis")
      }
    })
  const wait = call("POST", `${base}/wait`)
  const events = Effect.provide(
    Effect.flatMap(EventLog.Service, (log) => log.read(session.id)),
    context as Context.Context<Core.Services>
  )
  const settled = (callID: string) =>
    Effect.map(events, (all) =>
      all.find((e) => (e.type === "session.next.tool.success" || e.type === "session.next.tool.failed") && (e.data as any).callID === callID)
    )
  return { llm, url, directory, session, base, call, prompt, pending, wait, settled }
})

describe("questions over HTTP", () => {
  it.scopedLive("ask → reply: listed by session and location, announced on /api/event, answers reach the model", () =>
    Effect.gen(function* () {
      const t = yield* setup
      const stream = yield* Effect.promise(() => fetch(`${t.url}/api/event`, { headers: { accept: "text/event-stream" } }))
      const reader = new SseReader(stream)
      yield* Effect.addFinalizer(() => Effect.promise(() => reader.cancel()))
      expect((yield* Effect.promise(() => reader.next()))?.event).toBe("server.connected")

      yield* t.llm.enqueue(reply(toolCall("call_1", "question", { questions }), finish("tool-calls")), reply(text("done"), finish("stop")))
      yield* t.prompt("set up the project")
      const [request] = yield* t.pending(1)
      expect(request.id).toMatch(/^que_/)
      expect(request).toMatchObject({
        sessionID: t.session.id,
        questions: questions.map((q) => ({ ...q, custom: true })),
        tool: { callID: "call_1" }
      })
      expect(request.tool.messageID).toMatch(/^msg_/)
      const byLocation = yield* t.call("GET", `/api/question/request?location[directory]=${encodeURIComponent(t.directory)}`)
      expect(byLocation.status).toBe(200)
      expect(byLocation.body.location.directory).toBe(t.directory)
      expect(byLocation.body.data).toEqual([request])
      expect((yield* t.call("GET", "/api/question/request")).body.data).toEqual([request])

      const answered = yield* t.call("POST", `${t.base}/question/${request.id}/reply`, { answers: [["SQLite"], ["Auth", "Search"]] })
      expect(answered).toEqual({ status: 204, body: undefined })
      yield* t.wait
      const success = (yield* t.settled("call_1"))!
      expect(success.type).toBe("session.next.tool.success")
      expect((yield* t.call("GET", `${t.base}/question`)).body).toEqual({ data: [] })
      expect(yield* t.call("POST", `${t.base}/question/${request.id}/reply`, { answers: [] })).toEqual({
        status: 404,
        body: { _tag: "QuestionNotFoundError", requestID: request.id, message: `Question request not found: ${request.id}` }
      })
      // The model read the answers on the next turn.
      const requests = yield* t.llm.requests
      expect(requests[1]!.text).toContain(`\\"Which database?\\"=\\"SQLite\\"`)
      expect(requests[1]!.text).toContain(`\\"Which features?\\"=\\"Auth, Search\\"`)

      const frames: Array<{ event: string; data: any }> = []
      while (!frames.some((f) => f.event === "question.v2.replied")) {
        const frame = yield* Effect.promise(() => reader.next())
        if (frame === undefined) break
        if (frame.event.startsWith("question.")) frames.push({ event: frame.event, data: JSON.parse(frame.data) })
      }
      expect(frames.map((f) => f.event)).toEqual(["question.v2.asked", "question.v2.replied"])
      expect(frames[0]!.data).toMatchObject({ type: "question.v2.asked", durable: { aggregateID: request.id, seq: 1, version: 1 }, data: request })
      expect(frames[1]!.data).toMatchObject({
        type: "question.v2.replied",
        durable: { aggregateID: request.id, seq: 2 },
        data: { sessionID: t.session.id, requestID: request.id, answers: [["SQLite"], ["Auth", "Search"]] }
      })
    })
  )

  it.scopedLive("reject fails the call with a readable error; the generated client speaks the group", () =>
    Effect.gen(function* () {
      const t = yield* setup
      const client = createOpencodeClient({ baseUrl: t.url })
      yield* t.llm.enqueue(reply(toolCall("call_1", "question", { questions }), finish("tool-calls")), reply(text("ok"), finish("stop")))
      yield* t.prompt("ask me")
      yield* t.pending(1)
      const [request] = yield* Effect.promise(() => client.questions.list({ sessionID: t.session.id }))
      yield* Effect.promise(() => client.questions.reject({ sessionID: t.session.id, requestID: request!.id }))
      yield* t.wait
      const failed = (yield* t.settled("call_1"))!
      expect(failed.type).toBe("session.next.tool.failed")
      expect((failed.data as any).error.message).toBe(
        "The user dismissed the question without answering. Do not ask it again unless the user asks."
      )
      expect((yield* t.call("POST", `${t.base}/question/${request!.id}/reject`)).status).toBe(404)
    })
  )

  it.scopedLive("POST /interrupt rejects the pending question; errors are typed", () =>
    Effect.gen(function* () {
      const t = yield* setup
      yield* t.llm.enqueue(reply(toolCall("call_1", "question", { questions }), finish("tool-calls")))
      yield* t.prompt("ask")
      const [request] = yield* t.pending(1)
      expect((yield* t.call("POST", `${t.base}/interrupt`)).status).toBe(204)
      expect((yield* t.call("GET", `${t.base}/question`)).body).toEqual({ data: [] })
      expect((yield* t.call("POST", `${t.base}/question/${request.id}/reply`, { answers: [["SQLite"]] })).status).toBe(404)
      expect(((yield* t.settled("call_1"))!.data as any).error.message).toBe("interrupted")

      const missing = "ses_ffffffffffff00000000000000"
      expect(yield* t.call("GET", `/api/session/${missing}/question`)).toMatchObject({ status: 404, body: { _tag: "SessionNotFoundError" } })
      expect(yield* t.call("POST", `${t.base}/question/que_unknown/reject`)).toEqual({
        status: 404,
        body: { _tag: "QuestionNotFoundError", requestID: "que_unknown", message: "Question request not found: que_unknown" }
      })
      expect((yield* t.call("POST", `${t.base}/question/que_unknown/reply`, { answers: "no" })).status).toBe(400)
      expect((yield* t.call("POST", `${t.base}/question/que_unknown/reply`, { answers: [], extra: 1 })).status).toBe(400)
    })
  )
})
