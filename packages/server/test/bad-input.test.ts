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
  { name: "non-JSON body", method: "POST", path: "/api/session", body: "{not json", contentType: json, status: 400, tag: "InvalidRequestError" },
  { name: "empty body", method: "POST", path: "/api/session", body: "", contentType: json, status: 400, tag: "InvalidRequestError" },
  { name: "array body", method: "POST", path: "/api/session", body: "[]", contentType: json, status: 400, tag: "InvalidRequestError" },
  { name: "text/plain body", method: "POST", path: "/api/session", body: "hello", contentType: "text/plain", status: 400, tag: "InvalidRequestError" },
  { name: "wrong type for id", method: "POST", path: "/api/session", body: `{"id":5}`, contentType: json, status: 400, tag: "InvalidRequestError", field: "id" },
  { name: "unknown body field", method: "POST", path: "/api/session", body: `{"colour":"red"}`, contentType: json, status: 400, tag: "InvalidRequestError", field: "colour" },
  { name: "unknown nested field", method: "POST", path: "/api/session", body: `{"model":{"id":"m","providerID":"p","x":1}}`, contentType: json, status: 400, tag: "InvalidRequestError" },
  { name: "bad id prefix in body", method: "POST", path: "/api/session", body: `{"id":"msg_123"}`, contentType: json, status: 400, tag: "InvalidRequestError", field: "id" },
  { name: "missing location directory", method: "POST", path: "/api/session", body: `{"location":{"directory":"/definitely/not/here"}}`, contentType: json, status: 400, tag: "InvalidRequestError" },
  { name: "bad id prefix in path", method: "GET", path: "/api/session/abc", status: 400, tag: "InvalidRequestError", field: "sessionID" },
  { name: "unknown session", method: "GET", path: "/api/session/ses_doesnotexist", status: 404, tag: "SessionNotFoundError" },
  { name: "garbage cursor", method: "GET", path: "/api/session?cursor=!!garbage", status: 400, tag: "InvalidCursorError" },
  { name: "base64 of non-cursor", method: "GET", path: `/api/session?cursor=${Buffer.from('{"a":1}').toString("base64url")}`, status: 400, tag: "InvalidCursorError" },
  { name: "cursor with order", method: "GET", path: ({ cursor }) => `/api/session?cursor=${cursor}&order=asc`, status: 400, tag: "InvalidRequestError" },
  { name: "cursor with limit", method: "GET", path: ({ cursor }) => `/api/session?cursor=${cursor}&limit=5`, status: 400, tag: "InvalidRequestError" },
  { name: "non-numeric limit", method: "GET", path: "/api/session?limit=abc", status: 400, tag: "InvalidRequestError", field: "limit" },
  { name: "zero limit", method: "GET", path: "/api/session?limit=0", status: 400, tag: "InvalidRequestError", field: "limit" },
  { name: "limit over 200", method: "GET", path: "/api/session?limit=201", status: 400, tag: "InvalidRequestError", field: "limit" },
  { name: "fractional limit", method: "GET", path: "/api/session?limit=1.5", status: 400, tag: "InvalidRequestError", field: "limit" },
  { name: "limit far out of range", method: "GET", path: "/api/session?limit=1000", status: 400, tag: "InvalidRequestError", field: "limit", message: "Invalid request: limit: Expected a number between 1 and 200, actual 1000" },
  { name: "unknown order", method: "GET", path: "/api/session?order=sideways", status: 400, tag: "InvalidRequestError", field: "order" },
  { name: "bad workspace prefix", method: "GET", path: "/api/session?workspace=foo", status: 400, tag: "InvalidRequestError", field: "workspace" },
  { name: "missing location directory in query", method: "GET", path: "/api/location?location[directory]=/definitely/not/here", status: 400, tag: "InvalidRequestError" },
  { name: "unknown /api route", method: "GET", path: "/api/nope", status: 404, tag: "RouteNotFoundError" },
  { name: "unknown method on a known path", method: "DELETE", path: "/api/health", status: 404, tag: "RouteNotFoundError" },
  { name: "unknown route outside /api", method: "GET", path: "/nothing-here", status: 404, tag: "RouteNotFoundError" }
]

describe("bad input", () => {
  it.scoped("every case is a tagged JSON 4xx", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      // A real continuation cursor, for the cases that combine it with other fields.
      for (let i = 0; i < 3; i++) {
        yield* Effect.promise(() => fetch(`${url}/api/session`, { method: "POST", headers: { "content-type": json }, body: "{}" }))
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
