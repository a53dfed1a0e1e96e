import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { LazyHttpClient } from "../../src/llm/lazy-http-client.js"

/**
 * Core's outgoing HTTP client loads undici on its first request: requests made before and after that
 * load, and concurrent first requests, behave as with the undici client; a layer closed before any
 * request closes cleanly. A real server on 127.0.0.1.
 */

interface Server {
  readonly url: string
  /** Requests received, in order (`METHOD path body`). */
  readonly received: Array<string>
}

const server = Effect.acquireRelease(
  Effect.async<readonly [http.Server, Server]>((resume) => {
    const received: Array<string> = []
    const listener = http.createServer((request, response) => {
      let body = ""
      request.on("data", (chunk) => (body += chunk))
      request.on("end", () => {
        received.push(`${request.method} ${request.url} ${body}`)
        response.writeHead(200, { "content-type": "application/json" })
        response.end(JSON.stringify({ path: request.url, body }))
      })
    })
    listener.listen(0, "127.0.0.1", () => {
      const { port } = listener.address() as AddressInfo
      resume(Effect.succeed([listener, { url: `http://127.0.0.1:${port}`, received }] as const))
    })
  }),
  ([listener]) =>
    Effect.async<void>((resume) => {
      listener.closeAllConnections()
      listener.close(() => resume(Effect.void))
    })
).pipe(Effect.map(([, info]) => info))

/** The client, its layer built in the test's scope (closed when the test ends). */
const lazyClient = Layer.build(LazyHttpClient.layer).pipe(
  Effect.map((context) => Context.get(context, HttpClient.HttpClient))
)

describe("LazyHttpClient", () => {
  it.scoped("serves concurrent first requests and later ones like the undici client", () =>
    Effect.gen(function* () {
      const { url, received } = yield* server
      const client = yield* lazyClient
      const get = (path: string) => client.get(`${url}${path}`).pipe(Effect.flatMap((response) => response.json))
      const first = yield* Effect.all([get("/a"), get("/b"), get("/c")], { concurrency: "unbounded" })
      expect(first).toEqual([
        { path: "/a", body: "" },
        { path: "/b", body: "" },
        { path: "/c", body: "" }
      ])
      const posted = yield* client
        .execute(HttpClientRequest.post(`${url}/d`).pipe(HttpClientRequest.bodyText("hello")))
        .pipe(Effect.flatMap((response) => response.json))
      expect(posted).toEqual({ path: "/d", body: "hello" })
      // Transformations of the client apply as to any client.
      const failing = yield* HttpClient.filterStatus(client, (status) => status === 201)
        .get(`${url}/e`)
        .pipe(Effect.flip)
      expect(failing._tag).toBe("ResponseError")
      expect(received.sort()).toEqual(["GET /a ", "GET /b ", "GET /c ", "GET /e ", "POST /d hello"])
    })
  )

  it.effect("a layer closed before any request closes cleanly", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      yield* Layer.buildWithScope(LazyHttpClient.layer, scope)
      yield* Scope.close(scope, Exit.void)
    })
  )
})
