import { describe, expect, it } from "@effect/vitest"
import { OpenApiDocument } from "@opencode-ai/protocol"
import { Effect } from "effect"
import { startServer } from "./harness.js"

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`
const get = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { headers })
    return { status: response.status, headers: response.headers, body: await response.json() }
  })

describe("Basic auth (OPENCODE_SERVER_PASSWORD)", () => {
  it.scoped("guards every route, including /doc, /doc/ui and unknown paths", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer({ OPENCODE_SERVER_PASSWORD: "s3cret" })
      for (const route of ["/api/health", "/api/session", "/api/location", "/doc", "/doc/ui", "/api/nope"]) {
        const denied = yield* get(`${url}${route}`)
        expect(denied.status, route).toBe(401)
        expect(denied.body._tag).toBe("UnauthorizedError")
        expect(denied.headers.get("www-authenticate")).toMatch(/^Basic/)
        const wrong = yield* get(`${url}${route}`, { authorization: basic("opencode", "nope") })
        expect(wrong.status, route).toBe(401)
      }
      const ok = yield* get(`${url}/api/health`, { authorization: basic("opencode", "s3cret") })
      expect(ok).toMatchObject({ status: 200, body: { healthy: true } })
      const wrongUser = yield* get(`${url}/api/health`, { authorization: basic("admin", "s3cret") })
      expect(wrongUser.status).toBe(401)
    })
  )

  it.scoped("honours OPENCODE_SERVER_USERNAME", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer({ OPENCODE_SERVER_PASSWORD: "pw", OPENCODE_SERVER_USERNAME: "alice" })
      expect((yield* get(`${url}/api/health`, { authorization: basic("alice", "pw") })).status).toBe(200)
      expect((yield* get(`${url}/api/health`, { authorization: basic("opencode", "pw") })).status).toBe(401)
    })
  )

  it.scoped("is off without a password", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      expect((yield* get(`${url}/api/health`)).status).toBe(200)
    })
  )
})

describe("/doc", () => {
  it.scoped("serves the OpenAPI document of the API", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const doc = yield* get(`${url}/doc`)
      expect(doc.status).toBe(200)
      expect(doc.body).toEqual(JSON.parse(JSON.stringify(OpenApiDocument.make())))
    })
  )
})
