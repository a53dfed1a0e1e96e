import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { Catalog } from "../../src/config/catalog.js"
import type { ConfigInfo } from "../../src/config/config-info.js"
import { ModelsDev } from "../../src/config/models-dev.js"

const locate: Catalog.Locate = (path) => ({ file: "/c/opencode.json", line: path.length, column: 1 })
/** Resolves over `database` (default: none, the config alone). */
const resolve = (
  info: ConfigInfo.Info,
  env: Record<string, string | undefined> = {},
  database: ModelsDev.Database = ModelsDev.empty
) => Effect.map(Effect.either(Catalog.resolve(info, { env, locate, database })), Either.getOrThrow)

describe("Catalog: Google's Gemini API", () => {
  it.effect("@ai-sdk/google selects the google protocol, with Google's endpoint unless a baseURL is set", () =>
    Effect.gen(function* () {
      const catalog = yield* resolve({
        provider: {
          gem: { npm: "@ai-sdk/google", options: { apiKey: "k" }, models: { "gemini-2.5-flash": {} } },
          proxy: { npm: "@ai-sdk/google", options: { baseURL: "http://127.0.0.1:9/v1beta/" } }
        }
      })
      assert.deepStrictEqual(
        catalog.providers.map(({ id, protocol, baseURL, apiKey }) => ({ id, protocol, baseURL, apiKey })),
        [
          { id: "gem", protocol: "google", baseURL: "https://generativelanguage.googleapis.com/v1beta", apiKey: "k" },
          { id: "proxy", protocol: "google", baseURL: "http://127.0.0.1:9/v1beta", apiKey: undefined }
        ]
      )
    })
  )

  it.effect("the catalog's google provider implies its npm and reads GOOGLE_GENERATIVE_AI_API_KEY", () =>
    Effect.gen(function* () {
      const snapshot = ModelsDev.snapshot()
      const catalog = yield* resolve({ provider: { google: {} } }, { GOOGLE_GENERATIVE_AI_API_KEY: "g-key" }, snapshot)
      assert.deepStrictEqual(
        catalog.providers.map(({ id, npm, protocol, apiKey }) => ({ id, npm, protocol, apiKey })),
        [{ id: "google", npm: "@ai-sdk/google", protocol: "google", apiKey: "g-key" }]
      )
      const configured = yield* resolve(
        { provider: { google: { options: { apiKey: "own" } } } },
        { GOOGLE_GENERATIVE_AI_API_KEY: "g-key" },
        snapshot
      )
      assert.strictEqual(configured.providers[0]?.apiKey, "own")
    })
  )
})
