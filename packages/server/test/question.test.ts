import { describe, expect, it } from "@effect/vitest"
import { createOpencodeClient } from "@opencode-ai/client"
import { LLMScript } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { scriptedHost } from "./scripted-host.js"
import { SseReader } from "./stream-harness.js"

const { reply, text, toolCall, finish } = LLMScript

/**
 * The `question` tool answered over HTTP on the real listener: Server's router over a Core whose one
 * provider is a scripted LLM server on 127.0.0.1.
 */
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

const setup = scriptedHost({ prefix: "question", requests: "question" })

describe("questions over HTTP", () => {
  it.scopedLive("ask → reply: listed by session and location, announced on /api/event, answers reach the model", () =>
    Effect.gen(function* () {
      const t = yield* setup
      const stream = yield* Effect.promise(() =>
        fetch(`${t.url}/api/event`, { headers: { accept: "text/event-stream" } })
      )
      const reader = new SseReader(stream)
      yield* Effect.addFinalizer(() => Effect.promise(() => reader.cancel()))
      expect((yield* Effect.promise(() => reader.next()))?.event).toBe("server.connected")

      yield* t.llm.enqueue(
        reply(toolCall("call_1", "question", { questions }), finish("tool-calls")),
        reply(text("done"), finish("stop"))
      )
      yield* t.prompt("set up the project")
      const [request] = yield* t.pending(1)
      expect(request.id).toMatch(/^que_/)
      expect(request).toMatchObject({
        sessionID: t.session.id,
        questions: questions.map((q) => ({ ...q, custom: true })),
        tool: { callID: "call_1" }
      })
      expect(request.tool.messageID).toMatch(/^msg_/)
      const byLocation = yield* t.call(
        "GET",
        `/api/question/request?location[directory]=${encodeURIComponent(t.directory)}`
      )
      expect(byLocation.status).toBe(200)
      expect(byLocation.body.location.directory).toBe(t.directory)
      expect(byLocation.body.data).toEqual([request])
      expect((yield* t.call("GET", "/api/question/request")).body.data).toEqual([request])

      const answered = yield* t.call("POST", `${t.base}/question/${request.id}/reply`, {
        answers: [["SQLite"], ["Auth", "Search"]]
      })
      expect(answered).toEqual({ status: 204, body: undefined })
      yield* t.wait
      const success = (yield* t.settled("call_1"))!
      expect(success.type).toBe("session.next.tool.success")
      expect((yield* t.call("GET", `${t.base}/question`)).body).toEqual({ data: [] })
      expect(yield* t.call("POST", `${t.base}/question/${request.id}/reply`, { answers: [] })).toEqual({
        status: 404,
        body: {
          _tag: "QuestionNotFoundError",
          requestID: request.id,
          message: `Question request not found: ${request.id}`
        }
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
      expect(frames[0]!.data).toMatchObject({
        type: "question.v2.asked",
        durable: { aggregateID: request.id, seq: 1, version: 1 },
        data: request
      })
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
      yield* t.llm.enqueue(
        reply(toolCall("call_1", "question", { questions }), finish("tool-calls")),
        reply(text("ok"), finish("stop"))
      )
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
      expect((yield* t.call("POST", `${t.base}/question/${request.id}/reply`, { answers: [["SQLite"]] })).status).toBe(
        404
      )
      expect(((yield* t.settled("call_1"))!.data as any).error.message).toBe("Tool execution interrupted")

      const missing = "ses_ffffffffffff00000000000000"
      expect(yield* t.call("GET", `/api/session/${missing}/question`)).toMatchObject({
        status: 404,
        body: { _tag: "SessionNotFoundError" }
      })
      expect(yield* t.call("POST", `${t.base}/question/que_unknown/reject`)).toEqual({
        status: 404,
        body: {
          _tag: "QuestionNotFoundError",
          requestID: "que_unknown",
          message: "Question request not found: que_unknown"
        }
      })
      expect((yield* t.call("POST", `${t.base}/question/que_unknown/reply`, { answers: "no" })).status).toBe(400)
      expect((yield* t.call("POST", `${t.base}/question/que_unknown/reply`, { answers: [], extra: 1 })).status).toBe(
        400
      )
    })
  )
})
