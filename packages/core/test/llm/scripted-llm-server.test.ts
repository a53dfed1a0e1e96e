import { it } from "@effect/vitest"
import { Effect } from "effect"
import { expect } from "vitest"
import { LLMScript as S } from "../../src/testing/llm-script.js"
import { ScriptedLLMServer } from "../../src/testing/scripted-llm-server.js"
import { baseRequest, collect, failure, setup } from "./harness.js"

it.scoped("records every request, even unscripted ones, which get a non-retryable 400", () =>
  Effect.gen(function* () {
    const { server, client } = yield* setup("openai-compatible")
    const error = yield* failure(client.stream(baseRequest()))
    expect(error).toMatchObject({ _tag: "ProviderError", status: 400, retryable: false })
    expect(error.message).toContain("no scripted turn left for request #1")
    const [request] = yield* server.requests
    expect(request).toMatchObject({ index: 1, method: "POST", path: "/v1/chat/completions" })
    expect(JSON.parse(request!.text)).toEqual(request!.body)
  })
)

it.scoped("with record: false it still answers, but keeps no request", () =>
  Effect.gen(function* () {
    const { server, client } = yield* setup("openai-compatible", { record: false })
    yield* server.enqueue(S.reply(S.text("one")), S.reply(S.text("two")))
    for (const text of ["one", "two"]) {
      const events = yield* collect(client.stream(baseRequest()))
      expect(events.find((event) => event.type === "text-end")).toMatchObject({ text })
    }
    expect(yield* server.requests).toEqual([])
    expect(yield* server.remaining).toBe(0)
  })
)

it.scoped("unknown routes are 404 and take no turn", () =>
  Effect.gen(function* () {
    const server = yield* ScriptedLLMServer.make()
    yield* server.enqueue(S.reply(S.text("kept")))
    const response = yield* Effect.promise(() => fetch(`${server.url}/models`))
    expect(response.status).toBe(404)
    expect(yield* server.remaining).toBe(1)
  })
)

it.scoped("a gate released before the stream gets there does not hold it", () =>
  Effect.gen(function* () {
    const { server, client } = yield* setup("anthropic")
    const gate = S.gate()
    yield* gate.release
    yield* server.enqueue(S.reply(S.text("a"), S.hold(gate), S.text("b")))
    const events = yield* collect(client.stream(baseRequest()))
    expect(events.filter((e) => e.type === "text-end").map((e) => e.type === "text-end" && e.text)).toEqual(["a", "b"])
    expect(gate.isReached).toBe(true)
    expect(yield* (yield* server.awaitRequest(1)).outcome).toBe("completed")
  })
)

it.scoped("Gemini route: models/{model}:streamGenerateContent with its query; errors in Google's shape", () =>
  Effect.gen(function* () {
    const { server, client } = yield* setup("google")
    const error = yield* failure(client.stream(baseRequest()))
    expect(error).toMatchObject({ _tag: "ProviderError", status: 400, retryable: false, code: "INVALID_ARGUMENT" })
    const [request] = yield* server.requests
    expect(request).toMatchObject({ path: "/v1/models/qwen-test:streamGenerateContent", query: "alt=sse" })
    expect(JSON.parse((error as { body: string }).body)).toEqual({
      error: {
        code: 400,
        message: "ScriptedLLMServer: no scripted turn left for request #1 (/v1/models/qwen-test:streamGenerateContent)",
        status: "INVALID_ARGUMENT"
      }
    })
    // A Gemini-looking path without the method suffix is no route.
    const response = yield* Effect.promise(() => fetch(`${server.url}/models/qwen-test`, { method: "POST" }))
    expect(response.status).toBe(404)
  })
)
