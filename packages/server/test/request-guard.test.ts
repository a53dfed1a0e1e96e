import * as http from "node:http"
import * as path from "node:path"
import { HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Config } from "@opencode-ai/core"
import { TestDatabase } from "@opencode-ai/core/testing"
import { Effect, Layer, LogLevel } from "effect"
import { Serve } from "../src/serve.js"
import { WebHandler } from "../src/web-handler.js"
import { tempDir } from "./harness.js"

/** `Serve.layer` on an ephemeral port of `hostname`, over a fresh database; `cors` and `config` as given. */
const start = (
  options: {
    readonly hostname?: string
    readonly cors?: ReadonlyArray<string>
    readonly serverCors?: ReadonlyArray<string>
    readonly env?: Record<string, string>
  } = {}
) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      Serve.layer({
        port: 0,
        hostname: options.hostname ?? "127.0.0.1",
        printLogs: true,
        logLevel: LogLevel.None,
        directory: tempDir("guard-project"),
        env: {
          XDG_DATA_HOME: tempDir("guard-data"),
          XDG_CONFIG_HOME: tempDir("guard-config"),
          OPENCODE_DISABLE_MODELS_FETCH: "1",
          ...options.env
        },
        config: Config.layerTest(options.serverCors === undefined ? {} : { server: { cors: options.serverCors } }),
        ...(options.cors === undefined ? {} : { cors: options.cors })
      })
    ).pipe(Effect.orDie)
    const address = (yield* HttpServer.HttpServer.pipe(Effect.provide(context))).address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    return { url: `http://127.0.0.1:${address.port}`, port: address.port }
  })

interface Answer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: unknown
}

/** One raw HTTP/1.1 request with exactly `headers` and, when given, `body` (chunked unless a length is set). */
const request = (
  url: string,
  method: string,
  route: string,
  headers: Record<string, string> = {},
  body?: string
): Effect.Effect<Answer> =>
  Effect.async((resume) => {
    const { port } = new URL(url)
    const outgoing = http.request({ host: "127.0.0.1", port, method, path: route, headers }, (response) => {
      let text = ""
      response.on("data", (chunk) => (text += chunk))
      response.on("end", () =>
        resume(
          Effect.succeed({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: text === "" ? undefined : JSON.parse(text)
          })
        )
      )
    })
    outgoing.on("error", (error) => resume(Effect.die(error)))
    if (body !== undefined) outgoing.write(body)
    outgoing.end()
  })

const json = (body: unknown) => {
  const text = JSON.stringify(body)
  return { text, length: `${Buffer.byteLength(text)}` }
}

describe("request bodies are JSON only", () => {
  it.scoped("refuses every other type, and no type, with 415; accepts JSON with parameters", () =>
    Effect.gen(function* () {
      const { url } = yield* start()
      const body = json({})
      for (const contentType of [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
        "application/json-patch+json",
        "text/json"
      ]) {
        const refused = yield* request(
          url,
          "POST",
          "/api/session",
          { "content-type": contentType, "content-length": body.length },
          body.text
        )
        expect(refused.status, contentType).toBe(415)
        expect(refused.body, contentType).toEqual({
          _tag: "UnsupportedMediaTypeError",
          message: `Request bodies must be application/json, not ${contentType}`,
          contentType
        })
      }
      const untyped = yield* request(url, "POST", "/api/session", { "content-length": body.length }, body.text)
      expect(untyped.status).toBe(415)
      expect(untyped.body).toMatchObject({ _tag: "UnsupportedMediaTypeError" })
      expect(untyped.body).not.toHaveProperty("contentType")
      // A chunked body counts as a body too.
      const chunked = yield* request(url, "POST", "/api/session", { "transfer-encoding": "chunked" }, body.text)
      expect(chunked.status).toBe(415)
      for (const contentType of ["application/json", "application/json; charset=utf-8", "Application/JSON"]) {
        const accepted = yield* request(
          url,
          "POST",
          "/api/session",
          { "content-type": contentType, "content-length": body.length },
          body.text
        )
        expect(accepted.status, contentType).toBe(200)
      }
      const chunkedJson = yield* request(
        url,
        "POST",
        "/api/session",
        { "content-type": "application/json", "transfer-encoding": "chunked" },
        body.text
      )
      expect(chunkedJson.status).toBe(200)
    })
  )

  it.scoped("needs no type on a request without a body, and guards unknown routes and /doc alike", () =>
    Effect.gen(function* () {
      const { url } = yield* start()
      const created = yield* request(
        url,
        "POST",
        "/api/session",
        { "content-type": "application/json", "content-length": "2" },
        "{}"
      )
      const id = (created.body as { data: { id: string } }).data.id
      // wait and interrupt carry no body; neither a type nor a length is needed.
      expect((yield* request(url, "POST", `/api/session/${id}/wait`)).status).toBe(204)
      expect((yield* request(url, "POST", `/api/session/${id}/interrupt`, { "content-length": "0" })).status).toBe(204)
      expect(
        (yield* request(url, "POST", `/api/session/${id}/interrupt`, { "content-type": "text/plain" })).status
      ).toBe(204)
      for (const route of ["/doc", "/api/nope"]) {
        const refused = yield* request(url, "POST", route, { "content-type": "text/plain", "content-length": "1" }, "x")
        expect(refused.status, route).toBe(415)
      }
    })
  )
})

describe("the Origin header", () => {
  it.scoped("must be the server's own or allowed, on every route and method, event streams included", () =>
    Effect.gen(function* () {
      const { url, port } = yield* start()
      for (const origin of [
        "http://evil.example",
        "null",
        `http://127.0.0.1:${port + 1}`,
        `https://127.0.0.1:${port}`,
        `http://localhost:${port}.evil.example`,
        "file://"
      ]) {
        for (const [method, route] of [
          ["GET", "/api/health"],
          ["GET", "/api/event"],
          ["GET", "/doc"],
          ["GET", "/api/nope"],
          ["POST", "/api/session/ses_x/interrupt"],
          ["OPTIONS", "/api/session"]
        ] as const) {
          const refused = yield* request(url, method, route, { origin, "access-control-request-method": "POST" })
          expect(refused.status, `${origin} ${method} ${route}`).toBe(403)
          expect(refused.body).toEqual({
            _tag: "ForbiddenOriginError",
            message: `Origin ${origin} is not allowed: start the server with --cors <origin> (or set server.cors) to allow it`,
            origin
          })
          expect(refused.headers["access-control-allow-origin"]).toBeUndefined()
        }
      }
      // The server's own origin, under any loopback name the Host header uses.
      for (const [host, origin] of [
        [`127.0.0.1:${port}`, `http://127.0.0.1:${port}`],
        [`localhost:${port}`, `http://localhost:${port}`],
        [`localhost:${port}`, `http://LOCALHOST:${port}`]
      ] as const) {
        const own = yield* request(url, "GET", "/api/health", { host, origin })
        expect(own.status, origin).toBe(200)
      }
      // The own origin follows the Host header: 127.0.0.1's page is not localhost's.
      expect((yield* request(url, "GET", "/api/health", { host: `localhost:${port}`, origin: url })).status).toBe(403)
      // No Origin header at all (curl, the clients, the CLI) is not a browser page.
      expect((yield* request(url, "GET", "/api/health")).status).toBe(200)
    })
  )

  it.scoped("is refused before auth, and a too long one is quoted in part only", () =>
    Effect.gen(function* () {
      const { url } = yield* start({ env: { OPENCODE_SERVER_PASSWORD: "pw" } })
      const long = `http://${"a".repeat(1000)}.example`
      const refused = yield* request(url, "GET", "/api/health", { origin: long })
      expect(refused.status).toBe(403)
      expect((refused.body as { origin: string }).origin).toBe(`${long.slice(0, 200)}…`)
      expect((refused.body as { message: string }).message.length).toBeLessThan(400)
    })
  )
})

describe("CORS for allowed origins (--cors and server.cors)", () => {
  it.scoped("answers the preflight, echoes the exact origin with credentials on every answer, never *", () =>
    Effect.gen(function* () {
      const allowed = "http://localhost:5173"
      const configured = "https://app.example"
      const { url } = yield* start({
        cors: [allowed],
        serverCors: [`${configured}/`, "not an origin"],
        env: { OPENCODE_SERVER_PASSWORD: "pw" }
      })
      for (const origin of [allowed, configured]) {
        const preflight = yield* request(url, "OPTIONS", "/api/session", {
          origin,
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type, authorization"
        })
        expect(preflight.status, origin).toBe(204)
        expect(preflight.headers).toMatchObject({
          "access-control-allow-origin": origin,
          "access-control-allow-credentials": "true",
          "access-control-allow-methods": "GET, HEAD, POST, PUT, PATCH, DELETE",
          "access-control-allow-headers": "Content-Type, Authorization, Last-Event-ID",
          "access-control-max-age": "600",
          vary: "Origin"
        })
        // The answers themselves, errors included (401 here: no credentials), carry the origin.
        for (const route of ["/api/health", "/api/event", "/api/nope"]) {
          const answer = yield* request(url, "GET", route, { origin })
          expect(answer.status, route).toBe(401)
          expect(answer.headers["access-control-allow-origin"], route).toBe(origin)
          expect(answer.headers["access-control-allow-credentials"], route).toBe("true")
        }
        const authorization = `Basic ${Buffer.from("opencode:pw").toString("base64")}`
        const ok = yield* request(url, "GET", "/api/health", { origin, authorization })
        expect(ok.status).toBe(200)
        expect(ok.headers["access-control-allow-origin"]).toBe(origin)
        const unsupported = yield* request(url, "POST", "/api/session", { origin, "content-length": "2" }, "{}")
        expect(unsupported.status).toBe(415)
        expect(unsupported.headers["access-control-allow-origin"]).toBe(origin)
      }
      // Nothing else is allowed by the list, and no answer says *.
      const other = yield* request(url, "OPTIONS", "/api/session", {
        origin: "http://localhost:5174",
        "access-control-request-method": "POST"
      })
      expect(other.status).toBe(403)
      expect(other.headers["access-control-allow-origin"]).toBeUndefined()
    })
  )
})

describe("the Host header", () => {
  it.scoped("is not checked on a non-loopback bind (where a password is the protection)", () =>
    Effect.gen(function* () {
      const { url, port } = yield* start({ hostname: "0.0.0.0" })
      expect((yield* request(url, "GET", "/api/health", { host: `evil.example:${port}` })).status).toBe(200)
      // The Origin rule still holds there.
      expect(
        (yield* request(url, "GET", "/api/health", { host: `evil.example:${port}`, origin: "http://other.example" }))
          .status
      ).toBe(403)
    })
  )
})

describe("the embedded host", () => {
  it.scoped("applies the body and Origin rules to in-process requests, and has no Host to check", () =>
    Effect.gen(function* () {
      const root = tempDir("guard-embedded")
      const handler = yield* WebHandler.make({
        databaseFile: path.join(root, "opencode.db"),
        database: TestDatabase.selection(path.join(root, "opencode.db")),
        directory: root,
        env: {},
        config: Config.layerTest({ server: { cors: ["http://localhost:3000"] } })
      }).pipe(Effect.orDie)
      const call = (init: RequestInit & { readonly route?: string }) =>
        Effect.promise(async () => {
          const response = await handler(new Request(`http://opencode.internal${init.route ?? "/api/session"}`, init))
          return { status: response.status, origin: response.headers.get("access-control-allow-origin") }
        })
      expect(
        yield* call({ method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
      ).toMatchObject({ status: 200 })
      // A string body is sent as text/plain by the Request constructor.
      expect(yield* call({ method: "POST", body: "{}" })).toMatchObject({ status: 415 })
      expect(yield* call({ headers: { origin: "http://evil.example" } })).toMatchObject({ status: 403 })
      expect(yield* call({ headers: { origin: "http://localhost:3000" } })).toEqual({
        status: 200,
        origin: "http://localhost:3000"
      })
      expect(yield* call({ route: "/api/health" })).toMatchObject({ status: 200 })
    })
  )
})
