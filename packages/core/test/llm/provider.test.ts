import { NodeHttpClient } from "@effect/platform-node"
import { it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import { describe, expect } from "vitest"
import { LLMClient } from "../../src/llm/llm-client.js"
import { Provider } from "../../src/llm/provider.js"
import { LLMScript as S } from "../../src/testing/llm-script.js"
import { ScriptedLLMServer } from "../../src/testing/scripted-llm-server.js"
import { baseRequest, collect, failure } from "./harness.js"

describe("protocolOf", () => {
  it("maps the npm package to the wire protocol", () => {
    expect(Provider.protocolOf("@ai-sdk/openai-compatible")).toEqual(Either.right("openai-compatible"))
    expect(Provider.protocolOf("@ai-sdk/openai")).toEqual(Either.right("openai-compatible"))
    expect(Provider.protocolOf("@ai-sdk/anthropic")).toEqual(Either.right("anthropic"))
    expect(Provider.protocolOf("@ai-sdk/anthropic@2.0.1")).toEqual(Either.right("anthropic"))
  })

  it("rejects anything else with a typed error", () => {
    const result = Provider.protocolOf("@ai-sdk/google")
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      expect(result.left._tag).toBe("UnsupportedProtocolError")
      expect(result.left.npm).toBe("@ai-sdk/google")
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
