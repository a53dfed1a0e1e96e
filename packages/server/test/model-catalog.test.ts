import * as fs from "node:fs"
import * as http from "node:http"
import type * as net from "node:net"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { call, configHome, startServer, tempDir } from "./harness.js"

/**
 * The model catalog that ships with the server (issue 14, item 1) over real HTTP: the bundled model
 * database merged under the user's `provider` config, providers offered by their API key variable,
 * the ones the runtime cannot speak listed as disabled, and a refresh from a loopback models server.
 */

/** A real HTTP server on 127.0.0.1 serving `body` as a models.dev `api.json`, counting requests. */
const modelsServer = (body: string) =>
  Effect.acquireRelease(
    Effect.async<{ server: http.Server; url: string; requests: () => number }>((resume) => {
      let count = 0
      const server = http.createServer((_request, response) => {
        count += 1
        response.writeHead(200, { "content-type": "application/json" }).end(body)
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as net.AddressInfo
        resume(Effect.succeed({ server, url: `http://127.0.0.1:${port}/api.json`, requests: () => count }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

describe("the bundled model catalog over HTTP", () => {
  it.scopedLive(
    "with only OPENAI_API_KEY, model openai/gpt-4.1 starts, /api/model lists OpenAI's catalog, and a prompt reaches gpt-4.1",
    () =>
      Effect.gen(function* () {
        const llm = yield* ScriptedLLMServer.make()
        const { url } = yield* startServer({
          OPENAI_API_KEY: "sk-only-this",
          XDG_CONFIG_HOME: configHome({
            model: "openai/gpt-4.1",
            provider: { openai: { options: { baseURL: llm.url } } }
          })
        })

        const models = (yield* call(`${url}/api/model`, "GET")).body.data as Array<any>
        const openai = models.filter((model) => model.providerID === "openai")
        expect(openai.length).toBeGreaterThan(10)
        expect(openai.map((model) => model.id)).toEqual(expect.arrayContaining(["gpt-4.1", "gpt-4o", "o3"]))
        // nothing but OpenAI: no other key is set
        expect(new Set(models.map((model) => model.providerID))).toEqual(new Set(["openai"]))
        expect(openai.find((model) => model.id === "gpt-4.1")).toEqual({
          id: "gpt-4.1",
          providerID: "openai",
          name: "GPT-4.1",
          api: { id: "gpt-4.1", type: "aisdk", package: "@ai-sdk/openai", url: llm.url },
          capabilities: { tools: true, input: ["text", "image"], output: ["text"] },
          request: { headers: {}, body: {} },
          variants: [],
          time: { released: Date.UTC(2025, 3, 14) },
          cost: [{ input: 2, output: 8, cache: { read: 0.5, write: 0 } }],
          status: "active",
          enabled: true,
          limit: { context: 1047576, output: 32768 }
        })
        const provider = (yield* call(`${url}/api/provider/openai`, "GET")).body.data
        expect(provider).toEqual({
          id: "openai",
          name: "OpenAI",
          api: { type: "aisdk", package: "@ai-sdk/openai", url: llm.url },
          request: { headers: {}, body: {} }
        })
        expect(JSON.stringify(provider)).not.toContain("sk-only-this")

        const session = (yield* call(`${url}/api/session`, "POST", {})).body.data
        yield* llm.enqueue(LLMScript.reply(LLMScript.text("hello from gpt-4.1"), LLMScript.finish("stop")))
        const admitted = yield* call(`${url}/api/session/${session.id}/prompt`, "POST", { prompt: { text: "hi" } })
        expect(admitted.status).toBe(200)
        expect((yield* call(`${url}/api/session/${session.id}/wait`, "POST")).status).toBeLessThan(300)
        const request = yield* llm.awaitRequest(1)
        expect(request.path).toBe("/v1/chat/completions")
        expect(request.headers.authorization).toBe("Bearer sk-only-this")
        expect(request.body.model).toBe("gpt-4.1")
        // the output limit comes from the catalog entry; OpenAI's own API takes it as max_completion_tokens
        expect(request.body.max_completion_tokens).toBe(32768)
        expect(request.body.max_tokens).toBeUndefined()
      })
  )

  it.scopedLive(
    "a model's config `variant` is its default: listed as request.variant, applied to a session that names none",
    () =>
      Effect.gen(function* () {
        const llm = yield* ScriptedLLMServer.make()
        const variants = { fast: { reasoningEffort: "low" }, off: { disabled: true } }
        const { url } = yield* startServer({
          XDG_CONFIG_HOME: configHome({
            model: "local/m",
            provider: {
              local: {
                npm: "@ai-sdk/openai-compatible",
                options: { baseURL: llm.url, apiKey: "k" },
                models: {
                  m: { limit: { context: 8000, output: 500 }, variants, variant: "fast" },
                  // A default that is disabled (or unknown) is no default.
                  n: { limit: { context: 8000, output: 500 }, variants, variant: "off" }
                }
              }
            }
          })
        })
        const models = (yield* call(`${url}/api/model`, "GET")).body.data as Array<any>
        const byID = (id: string) => models.find((model) => model.providerID === "local" && model.id === id)
        expect(byID("m").request).toEqual({ headers: {}, body: {}, variant: "fast" })
        expect(byID("m").variants).toEqual([{ id: "fast", headers: {}, body: { reasoningEffort: "low" } }])
        expect(byID("n").request).toEqual({ headers: {}, body: {} })

        const session = (yield* call(`${url}/api/session`, "POST", {})).body.data
        yield* llm.enqueue(LLMScript.reply(LLMScript.text("ok"), LLMScript.finish("stop")))
        yield* call(`${url}/api/session/${session.id}/prompt`, "POST", { prompt: { text: "hi" } })
        expect((yield* call(`${url}/api/session/${session.id}/wait`, "POST")).status).toBeLessThan(300)
        const request = yield* llm.awaitRequest(1)
        expect(request.body.model).toBe("m")
        expect(request.body.reasoning_effort).toBe("low")
      })
  )

  it.scopedLive("providers the runtime cannot speak are listed disabled with the reason; the server still starts", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer({
        AWS_ACCESS_KEY_ID: "AKIA-test",
        GOOGLE_GENERATIVE_AI_API_KEY: "g-test",
        GROQ_API_KEY: "gsk-test"
      })
      const providers = (yield* call(`${url}/api/provider`, "GET")).body.data as Array<any>
      expect(providers.map((provider) => [provider.id, provider.disabled ?? false])).toEqual([
        ["google", false],
        ["groq", false],
        ["amazon-bedrock", true]
      ])
      expect(providers[1].api).toEqual({
        type: "aisdk",
        package: "@ai-sdk/groq",
        url: "https://api.groq.com/openai/v1"
      })
      expect(providers[2]).toMatchObject({
        disabled: true,
        disabledReason: "Amazon Bedrock needs AWS request signing, which this runtime does not do"
      })
      // Google's Gemini API has its own adapter.
      const google = (yield* call(`${url}/api/provider/google`, "GET")).body.data
      expect(google.disabled ?? false).toBe(false)
      expect(google.api).toMatchObject({ package: "@ai-sdk/google" })
      const models = (yield* call(`${url}/api/model`, "GET")).body.data as Array<any>
      const enabled = (providerID: string) =>
        new Set(models.filter((model) => model.providerID === providerID).map((model) => model.enabled))
      expect(enabled("groq")).toEqual(new Set([true]))
      expect(enabled("amazon-bedrock")).toEqual(new Set([false]))
    })
  )

  it.scopedLive("a refresh from OPENCODE_MODELS_URL is cached and shows in /api/model without a restart", () =>
    Effect.gen(function* () {
      const cacheHome = tempDir("cache")
      const database = {
        acme: {
          id: "acme",
          name: "Acme",
          npm: "@ai-sdk/openai-compatible",
          api: "http://127.0.0.1:9/v1",
          env: ["ACME_API_KEY"],
          models: {
            "acme-1": {
              id: "acme-1",
              name: "Acme One",
              release_date: "2026-01-02",
              status: "beta",
              family: "acme",
              modalities: { input: ["text"], output: ["text"] },
              cost: { input: 1, output: 2, cache_read: 0.1, context_over_200k: { input: 2, output: 4 } },
              limit: { context: 300000, output: 4000 },
              variants: { fast: { reasoningEffort: "low" }, off: { disabled: true } }
            }
          }
        }
      }
      const models = yield* modelsServer(JSON.stringify(database))
      const { url } = yield* startServer({
        XDG_CACHE_HOME: cacheHome,
        OPENCODE_MODELS_URL: models.url,
        OPENCODE_DISABLE_MODELS_FETCH: "",
        ACME_API_KEY: "k"
      })
      let listed: Array<any> = []
      for (let i = 0; i < 200 && listed.length === 0; i++) {
        listed = ((yield* call(`${url}/api/model`, "GET")).body.data as Array<any>).filter(
          (model) => model.providerID === "acme"
        )
        if (listed.length === 0) yield* Effect.sleep("25 millis")
      }
      expect(listed).toEqual([
        {
          id: "acme-1",
          providerID: "acme",
          family: "acme",
          name: "Acme One",
          api: { id: "acme-1", type: "aisdk", package: "@ai-sdk/openai-compatible", url: "http://127.0.0.1:9/v1" },
          capabilities: { tools: true, input: ["text"], output: ["text"] },
          request: { headers: {}, body: {} },
          variants: [{ id: "fast", headers: {}, body: { reasoningEffort: "low" } }],
          time: { released: Date.UTC(2026, 0, 2) },
          cost: [
            { input: 1, output: 2, cache: { read: 0.1, write: 0 } },
            { tier: { type: "context", size: 200000 }, input: 2, output: 4, cache: { read: 0, write: 0 } }
          ],
          status: "beta",
          enabled: true,
          limit: { context: 300000, output: 4000 }
        }
      ])
      expect(models.requests()).toBe(1)
      expect(JSON.parse(fs.readFileSync(path.join(cacheHome, "opencode", "models.json"), "utf8"))).toEqual(database)
    })
  )
})
