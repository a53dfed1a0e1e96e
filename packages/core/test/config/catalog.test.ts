import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import { Catalog } from "../../src/config/catalog.js"
import type { ConfigInfo } from "../../src/config/config-info.js"
import { ModelsDev } from "../../src/config/models-dev.js"

const locate: Catalog.Locate = (path) => ({ file: "/c/opencode.json", line: path.length, column: 1 })
/** Resolves over no model database: the config alone. */
const resolve = (info: ConfigInfo.Info, env: Record<string, string | undefined> = {}) =>
  Effect.either(Catalog.resolve(info, { env, locate, database: ModelsDev.empty }))
/** Resolves over `database` (default: the bundled snapshot). */
const over = (
  info: ConfigInfo.Info,
  env: Record<string, string | undefined>,
  database: ModelsDev.Database = ModelsDev.snapshot()
) => Effect.either(Catalog.resolve(info, { env, locate, database }))

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

  it.effect("an unknown or missing npm makes the provider unavailable, not a failure; naming it from model fails", () =>
    Effect.gen(function* () {
      const catalog = Either.getOrThrow(
        yield* resolve({
          provider: {
            g: { npm: "@ai-sdk/amazon-bedrock", models: { flash: {} } },
            mine: { options: { baseURL: "http://h" } },
            odd: { npm: "some-unknown-sdk" }
          }
        })
      )
      assert.deepStrictEqual(catalog.providers, [])
      assert.deepStrictEqual(
        catalog.unavailable.map(({ id, reason }) => ({ id, reason })),
        [
          { id: "g", reason: "Amazon Bedrock needs AWS request signing, which this runtime does not do" },
          { id: "mine", reason: 'no "npm" package: set provider.mine.npm, e.g. to "@ai-sdk/openai-compatible"' },
          { id: "odd", reason: 'no adapter for the provider package "some-unknown-sdk"' }
        ]
      )
      // its models are still listed (for display)
      assert.deepStrictEqual(
        catalog.unavailable[0]?.models.map((model) => model.id),
        ["flash"]
      )
      const named = failure(yield* resolve({ provider: { g: { npm: "@ai-sdk/amazon-bedrock" } }, model: "g/flash" }))
      assert.strictEqual(named._tag, "ConfigError")
      assert.strictEqual(named.key, "model")
      assert.strictEqual(named.file, "/c/opencode.json")
      assert.include(
        named.message,
        'names provider "g", which is unavailable: Amazon Bedrock needs AWS request signing'
      )
    })
  )

  it.effect("openai and anthropic need no npm: the model database implies theirs and their key variables", () =>
    Effect.gen(function* () {
      const implied = Either.getOrThrow(
        yield* over({ provider: { anthropic: {}, openai: {} } }, { ANTHROPIC_API_KEY: "a-key", OPENAI_API_KEY: "" })
      )
      assert.deepStrictEqual(
        implied.providers.map(({ id, protocol, apiKey, baseURL }) => ({ id, protocol, apiKey, baseURL })),
        [
          { id: "anthropic", protocol: "anthropic", apiKey: "a-key", baseURL: "https://api.anthropic.com/v1" },
          { id: "openai", protocol: "openai-compatible", apiKey: undefined, baseURL: "https://api.openai.com/v1" }
        ]
      )
    })
  )

  it.effect("an OpenAI-compatible provider without a base URL is unavailable, saying which key to set", () =>
    Effect.gen(function* () {
      const catalog = Either.getOrThrow(yield* resolve({ provider: { local: { npm: "@ai-sdk/openai-compatible" } } }))
      assert.strictEqual(
        catalog.unavailable[0]?.reason,
        'no base URL: set provider.local.options.baseURL (required for "@ai-sdk/openai-compatible")'
      )
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
          output: ["text"],
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
          output: ["text"],
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
          output: ["text"],
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
      assert.include(none.message, "no providers are available")
    })
  )
})

/** A small database in models.dev's shape: a groq-like vendor, a plain OpenAI-compatible one, a Bedrock. */
const database: ModelsDev.Database = {
  acme: {
    id: "acme",
    name: "Acme Inference",
    npm: "@ai-sdk/groq",
    env: ["ACME_API_KEY"],
    models: {
      "acme-small": {
        id: "acme-small",
        name: "Acme Small",
        tool_call: true,
        release_date: "2025-01-01",
        limit: { context: 8000, output: 1000 }
      },
      "acme-large": {
        id: "acme-large",
        name: "Acme Large",
        release_date: "2025-06-01",
        cost: { input: 1, output: 2, context_over_200k: { input: 2, output: 4 } },
        limit: { context: 128000, output: 8000 }
      },
      "acme-old": { id: "acme-old", name: "Acme Old", release_date: "2025-09-01", status: "deprecated" }
    }
  },
  hosted: {
    id: "hosted",
    name: "Hosted",
    npm: "@ai-sdk/openai-compatible",
    // models.dev writes variables in a base URL as ${NAME}: a plain string, not a template.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal ${NAME} syntax is the data under test
    api: "https://${HOSTED_REGION}.hosted.example/v1/",
    env: ["HOSTED_TOKEN"],
    models: { h1: { id: "h1", name: "H1" } }
  },
  bedrock: {
    id: "bedrock",
    name: "Bedrock",
    npm: "@ai-sdk/amazon-bedrock",
    env: ["AWS_ACCESS_KEY_ID", "AWS_REGION"],
    models: { claude: { id: "claude", name: "Claude" } }
  }
}

describe("Catalog over a model database", () => {
  it.effect("a database provider is offered only with a credential or when the config names it", () =>
    Effect.gen(function* () {
      const none = Either.getOrThrow(yield* over({}, {}, database))
      assert.deepStrictEqual([none.providers, none.unavailable], [[], []])
      const keyed = Either.getOrThrow(yield* over({}, { ACME_API_KEY: "k-acme", HOSTED_TOKEN: "" }, database))
      assert.deepStrictEqual(
        keyed.providers.map((provider) => provider.id),
        ["acme"]
      )
      const named = Either.getOrThrow(yield* over({ provider: { acme: {} } }, {}, database))
      assert.deepStrictEqual(
        named.providers.map(({ id, apiKey }) => ({ id, apiKey })),
        [{ id: "acme", apiKey: undefined }]
      )
    })
  )

  it.effect("a groq-like package runs on the OpenAI-compatible adapter at its vendor URL, with its env key", () =>
    Effect.gen(function* () {
      const catalog = Either.getOrThrow(yield* over({}, { ACME_API_KEY: "k-acme" }, database))
      const acme = catalog.providers[0]!
      assert.deepStrictEqual(
        { protocol: acme.protocol, baseURL: acme.baseURL, apiKey: acme.apiKey, npm: acme.npm, name: acme.name },
        {
          protocol: "openai-compatible",
          baseURL: "https://api.groq.com/openai/v1",
          apiKey: "k-acme",
          npm: "@ai-sdk/groq",
          name: "Acme Inference"
        }
      )
      // the real database: Groq, DeepSeek (its own `api`), xAI, Mistral
      const real = Either.getOrThrow(
        yield* over({}, { GROQ_API_KEY: "g", DEEPSEEK_API_KEY: "d", XAI_API_KEY: "x", MISTRAL_API_KEY: "m" })
      )
      assert.deepStrictEqual(
        real.providers.map(({ id, protocol, baseURL, apiKey }) => ({ id, protocol, baseURL, apiKey })),
        [
          { id: "deepseek", protocol: "openai-compatible", baseURL: "https://api.deepseek.com", apiKey: "d" },
          { id: "groq", protocol: "openai-compatible", baseURL: "https://api.groq.com/openai/v1", apiKey: "g" },
          { id: "mistral", protocol: "openai-compatible", baseURL: "https://api.mistral.ai/v1", apiKey: "m" },
          { id: "xai", protocol: "openai-compatible", baseURL: "https://api.x.ai/v1", apiKey: "x" }
        ]
      )
    })
  )

  it.effect(
    "a database base URL reads its variables from the environment; without one the provider is unavailable",
    () =>
      Effect.gen(function* () {
        const ok = Either.getOrThrow(yield* over({}, { HOSTED_TOKEN: "t", HOSTED_REGION: "eu" }, database))
        assert.strictEqual(ok.providers[0]?.baseURL, "https://eu.hosted.example/v1")
        const missing = Either.getOrThrow(yield* over({}, { HOSTED_TOKEN: "t" }, database))
        assert.deepStrictEqual(missing.providers, [])
        assert.include(missing.unavailable[0]?.reason, "needs the environment variable HOSTED_REGION")
      })
  )

  it.effect("the config merges over the database provider key by key and model by model", () =>
    Effect.gen(function* () {
      const catalog = Either.getOrThrow(
        yield* over(
          {
            provider: {
              acme: {
                name: "Acme (work)",
                options: { baseURL: "http://127.0.0.1:9/v1", apiKey: "own-key" },
                models: {
                  custom: { name: "Custom", limit: { context: 4000 } },
                  "acme-large": { limit: { output: 500 }, cost: { input: 3, output: 6 } }
                }
              }
            }
          },
          { ACME_API_KEY: "k-acme" },
          database
        )
      )
      const acme = catalog.providers[0]!
      assert.deepStrictEqual(
        { name: acme.name, baseURL: acme.baseURL, apiKey: acme.apiKey },
        { name: "Acme (work)", baseURL: "http://127.0.0.1:9/v1", apiKey: "own-key" }
      )
      // the config's models first, then the database's others
      assert.deepStrictEqual(
        acme.models.map((model) => model.id),
        ["custom", "acme-large", "acme-small", "acme-old"]
      )
      const large = acme.models.find((model) => model.id === "acme-large")!
      // limit.output overridden, limit.context kept; cost rates overridden, the 200k tier kept
      assert.deepStrictEqual(large.limit, { context: 128000, output: 500 })
      assert.deepStrictEqual(large.cost, {
        input: 3,
        output: 6,
        cacheRead: 0,
        cacheWrite: 0,
        over200k: { input: 2, output: 4, cacheRead: 0, cacheWrite: 0 }
      })
      assert.strictEqual(large.name, "Acme Large")
      assert.strictEqual(large.releaseDate, "2025-06-01")
      // with no `model`, a model the config declares is the default
      assert.deepStrictEqual(catalog.model, Option.some({ providerID: "acme", id: "custom" }))
    })
  )

  it.effect("with only OPENAI_API_KEY, openai/gpt-4.1 resolves with its database limits and prices", () =>
    Effect.gen(function* () {
      const catalog = Either.getOrThrow(yield* over({ model: "openai/gpt-4.1" }, { OPENAI_API_KEY: "sk-test" }))
      assert.deepStrictEqual(catalog.model, Option.some({ providerID: "openai", id: "gpt-4.1" }))
      assert.deepStrictEqual(
        catalog.providers.map((provider) => provider.id),
        ["openai"]
      )
      const found = Option.getOrThrow(Catalog.find(catalog, { providerID: "openai", id: "gpt-4.1" }))
      assert.deepStrictEqual(found.model.limit, { context: 1047576, output: 32768 })
      assert.deepStrictEqual(found.model.cost, { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 0 })
      assert.deepStrictEqual(found.model.input, ["text", "image"])
      assert.isTrue(found.provider.models.length > 10)
      // without the key (and not named), openai is not offered
      const error = failure(yield* over({ model: "openai/gpt-4.1" }, {}))
      assert.include(error.message, 'names provider "openai", which is not configured')
    })
  )

  it.effect("whitelist keeps only the named models; blacklist removes the named ones", () =>
    Effect.gen(function* () {
      const listed = (info: ConfigInfo.Info) =>
        Effect.map(over(info, { ACME_API_KEY: "k" }, database), (result) =>
          Either.getOrThrow(result).providers[0]!.models.map((model) => model.id)
        )
      assert.deepStrictEqual(yield* listed({ provider: { acme: { whitelist: ["acme-small", "acme-old"] } } }), [
        "acme-small",
        "acme-old"
      ])
      assert.deepStrictEqual(yield* listed({ provider: { acme: { blacklist: ["acme-small"] } } }), [
        "acme-large",
        "acme-old"
      ])
      const hidden = failure(
        yield* over({ provider: { acme: { blacklist: ["acme-small"] } }, model: "acme/acme-small" }, {}, database)
      )
      assert.include(hidden.message, 'names model "acme-small", which provider "acme" does not offer')
    })
  )

  it.effect("providers the runtime cannot speak are listed unavailable; only a model reference to one fails", () =>
    Effect.gen(function* () {
      const env = {
        AWS_REGION: "eu-west-1",
        GOOGLE_GENERATIVE_AI_API_KEY: "g",
        GITHUB_TOKEN: "gh",
        OPENAI_API_KEY: "o"
      }
      const catalog = Either.getOrThrow(yield* over({}, env))
      assert.deepStrictEqual(
        catalog.providers.map((provider) => provider.id),
        ["github-models", "google", "openai"]
      )
      assert.deepStrictEqual(
        catalog.unavailable.map(({ id, reason }) => ({ id, reason })),
        [
          { id: "amazon-bedrock", reason: "Amazon Bedrock needs AWS request signing, which this runtime does not do" },
          {
            id: "github-copilot",
            reason: "GitHub Copilot needs its own sign-in flow, which this runtime does not implement"
          }
        ]
      )
      const named = failure(yield* over({ model: "amazon-bedrock/anthropic.claude-3-haiku-20240307-v1:0" }, env))
      assert.strictEqual(named.key, "model")
      assert.include(named.message, "which is unavailable: Amazon Bedrock needs AWS request signing")
    })
  )

  it.effect("without model, the default is the newest non-deprecated model of the first provider", () =>
    Effect.gen(function* () {
      const catalog = Either.getOrThrow(yield* over({}, { ACME_API_KEY: "k" }, database))
      assert.deepStrictEqual(catalog.model, Option.some({ providerID: "acme", id: "acme-large" }))
    })
  )
})
