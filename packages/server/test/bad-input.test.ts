import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { startServer } from "./harness.js"

interface Case {
  readonly name: string
  readonly method: string
  readonly path: string | ((ctx: { cursor: string }) => string)
  readonly body?: string
  readonly contentType?: string
  readonly status: number
  readonly tag: string
  readonly field?: string
  readonly message?: string
}

const json = "application/json"

/** Every malformed request gets a tagged JSON 4xx, never a 5xx. */
const cases: ReadonlyArray<Case> = [
  {
    name: "non-JSON body",
    method: "POST",
    path: "/api/session",
    body: "{not json",
    contentType: json,
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    name: "empty body",
    method: "POST",
    path: "/api/session",
    body: "",
    contentType: json,
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    name: "array body",
    method: "POST",
    path: "/api/session",
    body: "[]",
    contentType: json,
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    name: "text/plain body",
    method: "POST",
    path: "/api/session",
    body: "hello",
    contentType: "text/plain",
    status: 415,
    tag: "UnsupportedMediaTypeError"
  },
  {
    name: "wrong type for id",
    method: "POST",
    path: "/api/session",
    body: `{"id":5}`,
    contentType: json,
    status: 400,
    tag: "InvalidRequestError",
    field: "id"
  },
  {
    name: "unknown body field",
    method: "POST",
    path: "/api/session",
    body: `{"colour":"red"}`,
    contentType: json,
    status: 400,
    tag: "InvalidRequestError",
    field: "colour"
  },
  {
    name: "unknown nested field",
    method: "POST",
    path: "/api/session",
    body: `{"model":{"id":"m","providerID":"p","x":1}}`,
    contentType: json,
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    name: "bad id prefix in body",
    method: "POST",
    path: "/api/session",
    body: `{"id":"msg_123"}`,
    contentType: json,
    status: 400,
    tag: "InvalidRequestError",
    field: "id"
  },
  {
    name: "missing location directory",
    method: "POST",
    path: "/api/session",
    body: `{"location":{"directory":"/definitely/not/here"}}`,
    contentType: json,
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    name: "bad id prefix in path",
    method: "GET",
    path: "/api/session/abc",
    status: 400,
    tag: "InvalidRequestError",
    field: "sessionID"
  },
  {
    name: "unknown session",
    method: "GET",
    path: "/api/session/ses_doesnotexist",
    status: 404,
    tag: "SessionNotFoundError"
  },
  {
    name: "garbage cursor",
    method: "GET",
    path: "/api/session?cursor=!!garbage",
    status: 400,
    tag: "InvalidCursorError"
  },
  {
    name: "base64 of non-cursor",
    method: "GET",
    path: `/api/session?cursor=${Buffer.from('{"a":1}').toString("base64url")}`,
    status: 400,
    tag: "InvalidCursorError"
  },
  {
    name: "cursor with order",
    method: "GET",
    path: ({ cursor }) => `/api/session?cursor=${cursor}&order=asc`,
    status: 400,
    tag: "InvalidCursorError"
  },
  {
    name: "cursor with a limit out of range",
    method: "GET",
    path: ({ cursor }) => `/api/session?cursor=${cursor}&limit=0`,
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    name: "non-numeric limit",
    method: "GET",
    path: "/api/session?limit=abc",
    status: 400,
    tag: "InvalidRequestError",
    field: "limit"
  },
  {
    name: "zero limit",
    method: "GET",
    path: "/api/session?limit=0",
    status: 400,
    tag: "InvalidRequestError",
    field: "limit"
  },
  {
    name: "limit over 200",
    method: "GET",
    path: "/api/session?limit=201",
    status: 400,
    tag: "InvalidRequestError",
    field: "limit"
  },
  {
    name: "fractional limit",
    method: "GET",
    path: "/api/session?limit=1.5",
    status: 400,
    tag: "InvalidRequestError",
    field: "limit"
  },
  {
    name: "limit far out of range",
    method: "GET",
    path: "/api/session?limit=1000",
    status: 400,
    tag: "InvalidRequestError",
    field: "limit",
    message: "Invalid request: limit: Expected a number between 1 and 200, actual 1000"
  },
  {
    name: "unknown order",
    method: "GET",
    path: "/api/session?order=sideways",
    status: 400,
    tag: "InvalidRequestError",
    field: "order"
  },
  {
    name: "bad workspace prefix",
    method: "GET",
    path: "/api/session?workspace=foo",
    status: 400,
    tag: "InvalidRequestError",
    field: "workspace"
  },
  {
    name: "missing location directory in query",
    method: "GET",
    path: "/api/location?location[directory]=/definitely/not/here",
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    name: "agents: missing location directory",
    method: "GET",
    path: "/api/agent?location[directory]=/definitely/not/here",
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    name: "agents: bad workspace prefix",
    method: "GET",
    path: "/api/agent?location[workspace]=foo",
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    name: "models: missing location directory",
    method: "GET",
    path: "/api/model?location[directory]=/definitely/not/here",
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    name: "models: POST is no route",
    method: "POST",
    path: "/api/model",
    body: "{}",
    status: 404,
    tag: "RouteNotFoundError"
  },
  {
    name: "providers: missing location directory",
    method: "GET",
    path: "/api/provider?location[directory]=/definitely/not/here",
    status: 400,
    tag: "InvalidRequestError"
  },
  { name: "unknown provider", method: "GET", path: "/api/provider/nope", status: 404, tag: "ProviderNotFoundError" },
  {
    name: "unknown provider, bad location",
    method: "GET",
    path: "/api/provider/nope?location[directory]=/definitely/not/here",
    status: 400,
    tag: "InvalidRequestError"
  },
  { name: "provider path too deep", method: "GET", path: "/api/provider/a/b", status: 404, tag: "RouteNotFoundError" },
  { name: "unknown /api route", method: "GET", path: "/api/nope", status: 404, tag: "RouteNotFoundError" },
  {
    name: "unknown method on a known path",
    method: "DELETE",
    path: "/api/health",
    status: 404,
    tag: "RouteNotFoundError"
  },
  { name: "unknown route outside /api", method: "GET", path: "/nothing-here", status: 404, tag: "RouteNotFoundError" }
]

describe("bad input", () => {
  it.scoped("every case is a tagged JSON 4xx", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      // A real continuation cursor, for the cases that combine it with other fields.
      for (let i = 0; i < 3; i++) {
        yield* Effect.promise(() =>
          fetch(`${url}/api/session`, { method: "POST", headers: { "content-type": json }, body: "{}" })
        )
      }
      const first = yield* Effect.promise(() => fetch(`${url}/api/session?limit=1`).then((r) => r.json()))
      const cursor: string = first.cursor.next
      expect(cursor).toBeTypeOf("string")

      for (const c of cases) {
        const target = typeof c.path === "function" ? c.path({ cursor }) : c.path
        const response = yield* Effect.promise(() =>
          fetch(`${url}${target}`, {
            method: c.method,
            ...(c.body !== undefined ? { body: c.body, headers: { "content-type": c.contentType ?? json } } : {})
          })
        )
        const text = yield* Effect.promise(() => response.text())
        expect({ case: c.name, status: response.status }).toEqual({ case: c.name, status: c.status })
        expect(response.headers.get("content-type"), c.name).toContain("application/json")
        const body = JSON.parse(text)
        expect(body._tag, `${c.name}: ${text}`).toBe(c.tag)
        expect(body.message, c.name).toBeTypeOf("string")
        if (c.field !== undefined) expect(body.field, `${c.name}: ${text}`).toBe(c.field)
        if (c.message !== undefined) expect(body.message, c.name).toBe(c.message)
      }
    })
  )

  it.scoped("prompt, messages, message, context, history, agent and model: every case is a tagged JSON 4xx", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const post = (path: string, body: unknown) =>
        Effect.promise(() =>
          fetch(`${url}${path}`, {
            method: "POST",
            headers: { "content-type": json },
            body: JSON.stringify(body)
          }).then((r) => r.json())
        )
      const session: string = (yield* post("/api/session", {})).data.id
      const id = "msg_0000000000000000000000bad1"
      expect(
        (yield* post(`/api/session/${session}/prompt`, { id, prompt: { text: "a" }, resume: false })).data.id
      ).toBe(id)
      const sessionCursor: string =
        (yield* Effect.promise(() => fetch(`${url}/api/session?limit=1`).then((r) => r.json()))).cursor.next ?? ""
      const s = `/api/session/${session}`
      const sessionCases: ReadonlyArray<Case> = [
        {
          name: "prompt: prompt is not an object",
          method: "POST",
          path: `${s}/prompt`,
          body: `{"prompt":"hi"}`,
          status: 400,
          tag: "InvalidRequestError",
          field: "prompt"
        },
        {
          name: "prompt: missing prompt",
          method: "POST",
          path: `${s}/prompt`,
          body: `{}`,
          status: 400,
          tag: "InvalidRequestError",
          field: "prompt"
        },
        {
          name: "prompt: non-JSON body",
          method: "POST",
          path: `${s}/prompt`,
          body: `{"prompt":`,
          status: 400,
          tag: "InvalidRequestError"
        },
        {
          name: "prompt: unknown field",
          method: "POST",
          path: `${s}/prompt`,
          body: `{"prompt":{"text":"x"},"colour":1}`,
          status: 400,
          tag: "InvalidRequestError",
          field: "colour"
        },
        {
          name: "prompt: bad id prefix",
          method: "POST",
          path: `${s}/prompt`,
          body: `{"id":"ses_1","prompt":{"text":"x"}}`,
          status: 400,
          tag: "InvalidRequestError",
          field: "id"
        },
        {
          name: "prompt: unknown delivery",
          method: "POST",
          path: `${s}/prompt`,
          body: `{"prompt":{"text":"x"},"delivery":"later"}`,
          status: 400,
          tag: "InvalidRequestError",
          field: "delivery"
        },
        {
          name: "prompt: unreadable attachment",
          method: "POST",
          path: `${s}/prompt`,
          body: `{"prompt":{"text":"x","files":[{"uri":"/definitely/not/here.txt"}]},"resume":false}`,
          status: 400,
          tag: "InvalidRequestError",
          field: "prompt.files.0.uri"
        },
        {
          name: "prompt: same id, other content",
          method: "POST",
          path: `${s}/prompt`,
          body: JSON.stringify({ id, prompt: { text: "b" }, resume: false }),
          status: 409,
          tag: "ConflictError"
        },
        {
          name: "prompt: unknown session",
          method: "POST",
          path: "/api/session/ses_missing/prompt",
          body: `{"prompt":{"text":"x"}}`,
          status: 404,
          tag: "SessionNotFoundError"
        },
        {
          name: "message: bad message id prefix",
          method: "GET",
          path: `${s}/message/abc`,
          status: 400,
          tag: "InvalidRequestError",
          field: "messageID"
        },
        {
          name: "message: unknown message",
          method: "GET",
          path: `${s}/message/msg_nothing`,
          status: 404,
          tag: "MessageNotFoundError"
        },
        {
          name: "message: pending prompt is not a message yet",
          method: "GET",
          path: `${s}/message/${id}`,
          status: 404,
          tag: "MessageNotFoundError"
        },
        {
          name: "message: unknown session",
          method: "GET",
          path: `/api/session/ses_missing/message/${id}`,
          status: 404,
          tag: "SessionNotFoundError"
        },
        {
          name: "messages: garbage cursor",
          method: "GET",
          path: `${s}/message?cursor=!!garbage`,
          status: 400,
          tag: "InvalidCursorError"
        },
        {
          name: "messages: a session-list cursor",
          method: "GET",
          path: `${s}/message?cursor=${sessionCursor}`,
          status: 400,
          tag: "InvalidCursorError"
        },
        {
          name: "messages: zero limit",
          method: "GET",
          path: `${s}/message?limit=0`,
          status: 400,
          tag: "InvalidRequestError",
          field: "limit"
        },
        {
          name: "messages: unknown order",
          method: "GET",
          path: `${s}/message?order=up`,
          status: 400,
          tag: "InvalidRequestError",
          field: "order"
        },
        {
          name: "messages: unknown session",
          method: "GET",
          path: "/api/session/ses_missing/message",
          status: 404,
          tag: "SessionNotFoundError"
        },
        {
          name: "context: unknown session",
          method: "GET",
          path: "/api/session/ses_missing/context",
          status: 404,
          tag: "SessionNotFoundError"
        },
        {
          name: "history: negative after",
          method: "GET",
          path: `${s}/history?after=-1`,
          status: 400,
          tag: "InvalidRequestError",
          field: "after"
        },
        {
          name: "history: non-numeric limit",
          method: "GET",
          path: `${s}/history?limit=abc`,
          status: 400,
          tag: "InvalidRequestError",
          field: "limit"
        },
        {
          name: "history: unknown session",
          method: "GET",
          path: "/api/session/ses_missing/history",
          status: 404,
          tag: "SessionNotFoundError"
        },
        {
          name: "agent: unknown agent",
          method: "POST",
          path: `${s}/agent`,
          body: `{"agent":"nobody"}`,
          status: 400,
          tag: "InvalidRequestError",
          field: "agent"
        },
        {
          name: "agent: missing agent",
          method: "POST",
          path: `${s}/agent`,
          body: `{}`,
          status: 400,
          tag: "InvalidRequestError",
          field: "agent"
        },
        {
          name: "agent: unknown session",
          method: "POST",
          path: "/api/session/ses_missing/agent",
          body: `{"agent":"build"}`,
          status: 404,
          tag: "SessionNotFoundError"
        },
        {
          name: "model: unknown model",
          method: "POST",
          path: `${s}/model`,
          body: `{"model":{"providerID":"nope","id":"x"}}`,
          status: 400,
          tag: "InvalidRequestError",
          field: "model"
        },
        {
          name: "model: not a model reference",
          method: "POST",
          path: `${s}/model`,
          body: `{"model":"nope/x"}`,
          status: 400,
          tag: "InvalidRequestError",
          field: "model"
        }
      ]
      for (const c of sessionCases) {
        const response = yield* Effect.promise(() =>
          fetch(`${url}${c.path as string}`, {
            method: c.method,
            ...(c.body !== undefined ? { body: c.body, headers: { "content-type": c.contentType ?? json } } : {})
          })
        )
        const text = yield* Effect.promise(() => response.text())
        expect({ case: c.name, status: response.status }, text).toEqual({ case: c.name, status: c.status })
        expect(response.headers.get("content-type"), c.name).toContain("application/json")
        const body = JSON.parse(text)
        expect(body._tag, `${c.name}: ${text}`).toBe(c.tag)
        expect(body.message, c.name).toBeTypeOf("string")
        if (c.field !== undefined) expect(body.field, `${c.name}: ${text}`).toBe(c.field)
      }
      // Nothing the failed requests sent was admitted or recorded.
      const history = yield* Effect.promise(() => fetch(`${url}${s}/history`).then((r) => r.json()))
      expect(history.data.map((event: { type: string }) => event.type)).toEqual(["session.next.prompt.admitted"])
    })
  )

  it.scoped("a failed request leaves nothing behind", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      yield* Effect.promise(() =>
        fetch(`${url}/api/session`, {
          method: "POST",
          headers: { "content-type": json },
          body: `{"location":{"directory":"/definitely/not/here"}}`
        })
      )
      const list = yield* Effect.promise(() => fetch(`${url}/api/session`).then((r) => r.json()))
      expect(list.data).toEqual([])
    })
  )
})
