import * as http from "node:http"
import type * as net from "node:net"
import { FetchHttpClient, HttpClient, type HttpClientResponse } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { it } from "@effect/vitest"
import { Duration, Effect, Either, Fiber, Layer, Option, Stream } from "effect"
import { describe, expect } from "vitest"
import { LLMClient } from "../../src/llm/llm-client.js"
import { Provider } from "../../src/llm/provider.js"
import { ProviderHttp } from "../../src/llm/provider-http.js"
import { LLMScript as S } from "../../src/testing/llm-script.js"
import { ScriptedLLMServer } from "../../src/testing/scripted-llm-server.js"
import { baseRequest, clientOf, collect, failure } from "./harness.js"

describe("protocolOf", () => {
  it("maps the npm package to the wire protocol", () => {
    expect(Provider.protocolOf("@ai-sdk/openai-compatible")).toEqual(Either.right("openai-compatible"))
    expect(Provider.protocolOf("@ai-sdk/openai")).toEqual(Either.right("openai-compatible"))
    expect(Provider.protocolOf("@ai-sdk/anthropic")).toEqual(Either.right("anthropic"))
    expect(Provider.protocolOf("@ai-sdk/anthropic@2.0.1")).toEqual(Either.right("anthropic"))
    expect(Provider.protocolOf("@ai-sdk/google")).toEqual(Either.right("google"))
  })

  it("rejects anything else with a typed error", () => {
    const result = Provider.protocolOf("@ai-sdk/amazon-bedrock")
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      expect(result.left._tag).toBe("UnsupportedProtocolError")
      expect(result.left.npm).toBe("@ai-sdk/amazon-bedrock")
      expect(result.left.message).toContain("@ai-sdk/openai-compatible")
    }
    expect(Either.isLeft(Provider.protocolOf("openai"))).toBe(true)
  })
})

it.scoped("layerRouted picks the provider of each request and fails unknown ones", () =>
  Effect.gen(function* () {
    const openai = yield* ScriptedLLMServer.make()
    const anthropic = yield* ScriptedLLMServer.make()
    yield* openai.enqueue(S.reply(S.text("from openai")))
    yield* anthropic.enqueue(S.reply(S.text("from anthropic")))
    const providers: Record<string, Provider.Settings> = {
      local: openai.settings("openai-compatible"),
      claude: { ...anthropic.settings("anthropic"), headers: { "x-team": "core" } }
    }
    const layer = Provider.layerRouted((providerID) => Effect.succeed(Option.fromNullable(providers[providerID]))).pipe(
      Layer.provide(NodeHttpClient.layer)
    )
    const context = yield* Layer.build(layer)
    const client = yield* Effect.provide(LLMClient.Service, context)

    const first = yield* collect(client.stream(baseRequest({ model: { providerID: "local", modelID: "m1" } })))
    const second = yield* collect(client.stream(baseRequest({ model: { providerID: "claude", modelID: "m2" } })))
    expect(first.find((e) => e.type === "text-end")).toMatchObject({ text: "from openai" })
    expect(second.find((e) => e.type === "text-end")).toMatchObject({ text: "from anthropic" })
    expect((yield* openai.awaitRequest(1)).body.model).toBe("m1")
    const claude = yield* anthropic.awaitRequest(1)
    expect(claude.body.model).toBe("m2")
    expect(claude.headers["x-team"]).toBe("core")

    expect(yield* failure(client.stream(baseRequest({ model: { providerID: "nope", modelID: "x" } })))).toMatchObject({
      _tag: "ProviderNotFoundError",
      providerID: "nope"
    })
  })
)

/**
 * A response that keeps no body stream of its own (as a client other than the platform's may make):
 * its body can be read only through `stream`.
 */
const withoutSource = (response: HttpClientResponse.HttpClientResponse): HttpClientResponse.HttpClientResponse =>
  new Proxy(response, { get: (target, key) => (key === "source" ? undefined : Reflect.get(target, key, target)) })

/** The HTTP clients an adapter may read its responses through (see `ProviderHttp.open`). */
const clients = [
  ["undici", NodeHttpClient.layerUndici],
  ["node:http", NodeHttpClient.layer],
  ["fetch", FetchHttpClient.layer],
  [
    "a client whose responses keep no body stream",
    Layer.effect(
      HttpClient.HttpClient,
      Effect.map(HttpClient.HttpClient, (client) => HttpClient.transformResponse(client, Effect.map(withoutSource)))
    ).pipe(Layer.provide(NodeHttpClient.layerUndici))
  ]
] as const

describe("reading the response body", () => {
  for (const [name, layer] of clients) {
    it.scoped(`a reply in small slices gives the events of the same reply in one write (${name})`, () =>
      Effect.gen(function* () {
        const whole = yield* ScriptedLLMServer.make({ coalesce: true })
        const sliced = yield* ScriptedLLMServer.make({ sliceSize: 7 })
        const reply = S.reply(
          S.reasoning("thinking"),
          S.text("Hel", "lo, wörld"),
          S.toolCall("call_1", "read", { path: "a.ts" }),
          S.usage({ input: 5, output: 3 })
        )
        yield* whole.enqueue(reply)
        yield* sliced.enqueue(reply)
        const expected = yield* collect(
          (yield* clientOf(whole.settings("openai-compatible"), layer)).stream(baseRequest())
        )
        const events = yield* collect(
          (yield* clientOf(sliced.settings("openai-compatible"), layer)).stream(baseRequest())
        )
        expect(events).toEqual(expected)
        expect(events.find((event) => event.type === "text-end")).toMatchObject({ text: "Hello, wörld" })
        expect(events.at(-1)).toMatchObject({ type: "finish" })
      })
    )

    it.scoped(`a body cut before the response is complete is a retryable TransportError (${name})`, () =>
      Effect.gen(function* () {
        const server = yield* ScriptedLLMServer.make()
        const client = yield* clientOf(server.settings("openai-compatible"), layer)
        yield* server.enqueue(S.reply(S.text("partial"), S.cut))
        expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "TransportError", retryable: true })
      })
    )

    it.scoped(`interrupting the consumer mid-body aborts the HTTP request (${name})`, () =>
      Effect.gen(function* () {
        const server = yield* ScriptedLLMServer.make()
        const client = yield* clientOf(server.settings("openai-compatible"), layer)
        const gate = S.gate()
        yield* server.enqueue(S.reply(S.text("partial"), S.hold(gate), S.text(" never")))
        const fiber = yield* Effect.fork(collect(client.stream(baseRequest())))
        yield* gate.reached
        yield* Fiber.interrupt(fiber)
        yield* gate.aborted
        expect(yield* (yield* server.awaitRequest(1)).outcome).toBe("aborted")
      })
    )
  }
})

describe("connection reuse", () => {
  // Core sends through undici (`NodeHttpClient.layerUndici`); the node:http layer's default agent
  // does not keep connections alive at all.
  for (const protocol of ["openai-compatible", "anthropic"] as const) {
    // Live clock: the pause stands for the work a Step does between two provider requests.
    it.live(`consecutive complete responses share one connection (${protocol})`, () =>
      Effect.gen(function* () {
        const server = yield* ScriptedLLMServer.make()
        const client = yield* clientOf(server.settings(protocol), NodeHttpClient.layerUndici)
        yield* server.enqueue(S.reply(S.text("one")), S.reply(S.text("two")), S.reply(S.text("three")))
        for (let i = 0; i < 3; i++) {
          const events = yield* collect(client.stream(baseRequest()))
          expect(events.at(-1)).toMatchObject({ type: "finish" })
          yield* Effect.sleep("10 millis")
        }
        const requests = yield* server.requests
        expect(requests.map((request) => request.connection)).toEqual([1, 1, 1])
        for (const request of requests) expect(yield* request.outcome).toBe("completed")
      }).pipe(Effect.scoped)
    )
  }

  it.live("a connection reset right after [DONE] does not fail the complete response", () =>
    Effect.gen(function* () {
      // A provider that drops the connection instead of ending the chunked body.
      const server = http.createServer((_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write(
          `data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta: { content: "hi" }, finish_reason: "stop" }] })}\n\n`
        )
        res.write("data: [DONE]\n\n", () => setTimeout(() => res.socket?.destroy(), 5))
      })
      const port = yield* Effect.acquireRelease(
        Effect.async<number>((resume) => {
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as net.AddressInfo).port)))
        }),
        () => Effect.sync(() => server.close())
      )
      const settings = { protocol: "openai-compatible", baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "k" } as const
      const client = yield* clientOf(settings, NodeHttpClient.layerUndici)
      const events = yield* collect(client.stream(baseRequest()))
      expect(events.map((event) => event.type)).toEqual(["text-start", "text-delta", "text-end", "finish"])
    }).pipe(Effect.scoped)
  )

  /** A provider that says it is done but never ends the body. */
  const bodyLeftOpen = Effect.gen(function* () {
    const sockets = new Set<net.Socket>()
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(
        `data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta: { content: "hi" }, finish_reason: null }] })}\n\n`
      )
      res.write(`data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`)
      res.write("data: [DONE]\n\n")
    })
    server.on("connection", (socket) => sockets.add(socket))
    const port = yield* Effect.acquireRelease(
      Effect.async<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as net.AddressInfo).port)))
      }),
      () => Effect.sync(() => server.close())
    )
    const closed = new Promise<void>((resolve) =>
      server.on("connection", (socket) => socket.on("close", () => resolve()))
    )
    const settings = { protocol: "openai-compatible", baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "k" } as const
    const client = yield* clientOf(settings, NodeHttpClient.layerUndici)
    const seen: Array<{ readonly type: string; readonly at: number }> = []
    const started = Date.now()
    yield* client
      .stream(baseRequest())
      .pipe(Stream.runForEach((event) => Effect.sync(() => seen.push({ type: event.type, at: Date.now() - started }))))
    expect(seen.map((event) => event.type)).toEqual(["text-start", "text-delta", "text-end", "finish"])
    // The finish came with [DONE], not after the grace period; the stream ended after it.
    expect(seen.at(-1)!.at).toBeLessThan(Duration.toMillis(ProviderHttp.tailGrace))
    yield* Effect.promise(() => closed)
    expect(sockets.size).toBe(1)
  }).pipe(Effect.scoped)

  it.live("a body left open after [DONE] still delivers everything at once, then is cut off", () => bodyLeftOpen)

  // The grace period runs on the wall clock: a test's TestClock (which nothing advances here) must
  // not hold the stream open for ever.
  it.scoped("a body left open after [DONE] is cut off under a TestClock too", () => bodyLeftOpen)
})

/** The events `forEachChunk` hands over, flattened, or the error it failed with. */
const consumed = (client: LLMClient.Interface, request = baseRequest()) =>
  Effect.suspend(() => {
    const events: Array<unknown> = []
    return client
      .forEachChunk(request, (chunk) =>
        Effect.sync(() => {
          for (const event of chunk) events.push(event)
        })
      )
      .pipe(Effect.as(events), Effect.either)
  })

describe("forEachChunk: the attempt consumed without a stream", () => {
  for (const protocol of ["openai-compatible", "anthropic", "google"] as const) {
    it.scoped(`hands over the events the stream emits, in order (${protocol})`, () =>
      Effect.gen(function* () {
        const server = yield* ScriptedLLMServer.make()
        const client = yield* clientOf(server.settings(protocol), NodeHttpClient.layerUndici)
        const reply = () =>
          S.reply(
            S.reasoning("thinking"),
            S.text("Hel", "lo"),
            S.toolCall("call_1", "read", { path: "a.ts" }),
            S.usage({ input: 5, output: 3 })
          )
        yield* server.enqueue(reply(), reply(), S.httpError(400), S.httpError(400))
        const streamed = yield* collect(client.stream(baseRequest()))
        const handed = yield* consumed(client)
        expect(Either.getOrThrow(handed)).toEqual(streamed)
        // A failure is the stream's failure.
        const failed = yield* failure(client.stream(baseRequest()))
        expect(Either.flip(yield* consumed(client))).toEqual(Either.right(failed))
      })
    )
  }

  it.scoped("interrupting it aborts the HTTP request", () =>
    Effect.gen(function* () {
      const server = yield* ScriptedLLMServer.make()
      const client = yield* clientOf(server.settings("openai-compatible"), NodeHttpClient.layerUndici)
      const gate = S.gate()
      yield* server.enqueue(S.reply(S.text("partial"), S.hold(gate), S.text(" never")))
      const fiber = yield* Effect.fork(consumed(client))
      yield* gate.reached
      yield* Fiber.interrupt(fiber)
      yield* gate.aborted
      expect(yield* (yield* server.awaitRequest(1)).outcome).toBe("aborted")
    })
  )

  it.scoped("a routed client resolves the provider per request and fails unknown ones", () =>
    Effect.gen(function* () {
      const server = yield* ScriptedLLMServer.make()
      yield* server.enqueue(S.reply(S.text("routed")))
      const providers: Record<string, Provider.Settings> = { local: server.settings("openai-compatible") }
      const layer = Provider.layerRouted((providerID) =>
        Effect.succeed(Option.fromNullable(providers[providerID]))
      ).pipe(Layer.provide(NodeHttpClient.layerUndici))
      const client = yield* Effect.provide(LLMClient.Service, yield* Layer.build(layer))
      const events = Either.getOrThrow(yield* consumed(client))
      expect(events.find((event) => (event as { type: string }).type === "text-end")).toMatchObject({ text: "routed" })
      const unknown = yield* consumed(client, baseRequest({ model: { providerID: "nope", modelID: "x" } }))
      expect(Either.flip(unknown)).toEqual(Either.right(expect.objectContaining({ _tag: "ProviderNotFoundError" })))
    })
  )
})
