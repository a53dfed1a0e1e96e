import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import { Catalog } from "../../src/config/catalog.js"
import type { ConfigInfo } from "../../src/config/config-info.js"

const locate: Catalog.Locate = (path) => ({ file: "/c/opencode.json", line: path.length, column: 1 })
const resolve = (info: ConfigInfo.Info, env: Record<string, string | undefined> = {}) =>
  Effect.either(Catalog.resolve(info, { env, locate }))

const failure = <A, E>(result: Either.Either<A, E>): E => {
  if (Either.isRight(result)) throw new Error("expected a failure")
  return result.left
}

describe("Catalog", () => {
  it("parseModelRef splits at the first slash", () => {
    assert.deepStrictEqual(Catalog.parseModelRef("local/qwen"), Either.right({ providerID: "local", id: "qwen" }))
    assert.deepStrictEqual(
      Catalog.parseModelRef("openrouter/anthropic/claude-sonnet-4"),
      Either.right({ providerID: "openrouter", id: "anthropic/claude-sonnet-4" })
    )
    for (const bad of ["qwen", "/qwen", "local/", ""]) assert.isTrue(Either.isLeft(Catalog.parseModelRef(bad)), bad)
  })

  it.effect("npm selects the protocol: openai-compatible and openai → OpenAI-compatible, anthropic → Anthropic", () =>
    Effect.gen(function* () {
      const catalog = Either.getOrThrow(
        yield* resolve({
          provider: {
            compat: { npm: "@ai-sdk/openai-compatible", options: { baseURL: "http://127.0.0.1:9/v1/" } },
            oai: { npm: "@ai-sdk/openai", name: "OpenAI (work)" },
            claude: { npm: "@ai-sdk/anthropic", options: { apiKey: "k", headers: { "anthropic-beta": "x" } } }
          }
        })
      )
      assert.deepStrictEqual(
        catalog.providers.map(({ id, name, protocol, baseURL }) => ({ id, name, protocol, baseURL })),
        [
          { id: "compat", name: "compat", protocol: "openai-compatible", baseURL: "http://127.0.0.1:9/v1" },
          { id: "oai", name: "OpenAI (work)", protocol: "openai-compatible", baseURL: "https://api.openai.com/v1" },
          { id: "claude", name: "claude", protocol: "anthropic", baseURL: "https://api.anthropic.com/v1" }
        ]
      )
      assert.deepStrictEqual(catalog.providers[2]?.headers, { "anthropic-beta": "x" })
      // no models anywhere: no default model
      assert.isTrue(Option.isNone(catalog.model))
    })
  )

  it.effect("an unknown or missing npm fails, naming the key; openai and anthropic imply theirs", () =>
    Effect.gen(function* () {
      const unknown = failure(yield* resolve({ provider: { g: { npm: "@ai-sdk/amazon-bedrock" } } }))
      assert.strictEqual(unknown._tag, "ConfigError")
      assert.strictEqual(unknown.key, "provider.g.npm")
      assert.strictEqual(unknown.file, "/c/opencode.json")
      assert.include(unknown.message, "@ai-sdk/openai-compatible, @ai-sdk/openai, @ai-sdk/anthropic")
      const missing = failure(yield* resolve({ provider: { mine: { options: { baseURL: "http://h" } } } }))
      assert.strictEqual(missing.key, "provider.mine.npm")
      const implied = Either.getOrThrow(
        yield* resolve({ provider: { anthropic: {}, openai: {} } }, { ANTHROPIC_API_KEY: "a-key", OPENAI_API_KEY: "" })
      )
      assert.deepStrictEqual(
        implied.providers.map(({ id, protocol, apiKey }) => ({ id, protocol, apiKey })),
        [
          { id: "anthropic", protocol: "anthropic", apiKey: "a-key" },
          { id: "openai", protocol: "openai-compatible", apiKey: undefined }
        ]
      )
    })
  )

  it.effect("an OpenAI-compatible provider needs a baseURL", () =>
    Effect.gen(function* () {
      const error = failure(yield* resolve({ provider: { local: { npm: "@ai-sdk/openai-compatible" } } }))
      assert.strictEqual(error.key, "provider.local.options.baseURL")
    })
  )

  it.effect("models: defaults for name, tool_call, reasoning and limits; id is the wire model ID", () =>
    Effect.gen(function* () {
      const catalog = Either.getOrThrow(
        yield* resolve({
          provider: {
            local: {
              npm: "@ai-sdk/openai-compatible",
              options: { baseURL: "http://h/v1" },
              models: {
                small: {},
                big: {
                  id: "org/big-v2",
                  name: "Big",
                  tool_call: false,
                  reasoning: true,
                  modalities: { input: ["text", "image"] },
                  limit: { context: 100, output: 10 }
                },
                seeing: { attachment: true }
              }
            }
          }
        })
      )
      assert.deepStrictEqual(catalog.providers[0]?.models, [
        {
          id: "small",
          apiID: "small",
          providerID: "local",
          name: "small",
          toolCall: true,
          reasoning: false,
          limit: { context: 0, output: 0 },
          input: ["text"],
          status: "active",
          temperature: true,
          options: {},
          variants: {},
          headers: {}
        },
        {
          id: "big",
          apiID: "org/big-v2",
          providerID: "local",
          name: "Big",
          toolCall: false,
          reasoning: true,
          limit: { context: 100, output: 10 },
          input: ["text", "image"],
          status: "active",
          temperature: true,
          options: {},
          variants: {},
          headers: {}
        },
        // `attachment: true` without `modalities` means images and PDFs as well as text
        {
          id: "seeing",
          apiID: "seeing",
          providerID: "local",
          name: "seeing",
          toolCall: true,
          reasoning: false,
          limit: { context: 0, output: 0 },
          input: ["text", "image", "pdf"],
          status: "active",
          temperature: true,
          options: {},
          variants: {},
          headers: {}
        }
      ])
      // without `model`, the default is the first configured model
      assert.deepStrictEqual(catalog.model, Option.some({ providerID: "local", id: "small" }))
      assert.isTrue(Option.isSome(Catalog.find(catalog, { providerID: "local", id: "big" })))
      assert.isTrue(Option.isNone(Catalog.find(catalog, { providerID: "local", id: "huge" })))
      assert.isTrue(Option.isNone(Catalog.find(catalog, { providerID: "other", id: "big" })))
    })
  )

  it.effect("model and small_model must name a configured provider and model", () =>
    Effect.gen(function* () {
      const provider = {
        local: { npm: "@ai-sdk/openai-compatible", options: { baseURL: "http://h/v1" }, models: { qwen: {} } }
      }
      const ok = Either.getOrThrow(yield* resolve({ provider, model: "local/qwen", small_model: "local/qwen" }))
      assert.deepStrictEqual(ok.smallModel, Option.some({ providerID: "local", id: "qwen" }))
      const bad = failure(yield* resolve({ provider, model: "local/llama" }))
      assert.strictEqual(bad.key, "model")
      assert.strictEqual(bad.line, 1)
      const none = failure(yield* resolve({ model: "local/qwen" }))
      assert.include(none.message, "no providers are configured")
    })
  )
})
