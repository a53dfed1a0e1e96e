import { describe, expect, it } from "@effect/vitest"
import type { SessionMessages } from "@opencode-ai/schema"
import { Identifier } from "@opencode-ai/schema"
import { Effect, Option } from "effect"
import { Config } from "../../src/config/config.js"
import type { ConfigInfo } from "../../src/config/config-info.js"
import { Provider } from "../../src/llm/provider.js"
import { ModelIdentity } from "../../src/prompt/model-identity.js"
import { ModelContext } from "../../src/runner/model-context.js"
import { SessionSelection } from "../../src/session/session-selection.js"
import { LLMScript as S } from "../../src/testing/llm-script.js"
import { ScriptedLLMServer } from "../../src/testing/scripted-llm-server.js"
import { clientOf, collect } from "../llm/harness.js"
import { world } from "./world.js"

/**
 * Model Request Options and Generation Controls on the wire: a config (provider options, model
 * options and variants, the agent's options, temperature and top_p) resolved by the real Config,
 * assembled by `ModelContext.build` for the session's variant, and sent by the real adapter to a
 * loopback scripted server; each test compares the exact JSON body that arrived.
 */

const system = "Be brief."
/** The system text sent: the agent's prompt, then the Model Identity line (the baseline is empty here). */
const systemSent = `${system}\n\n${ModelIdentity.line({ providerID: "p", apiID: "m" })}`
const hello: SessionMessages.SessionMessage = {
  id: "msg_00000000000000000000000001" as any,
  type: "user",
  text: "Hello",
  time: { created: 1 }
}
const readTool = {
  name: "read",
  description: "Read a file",
  inputSchema: { type: "object", properties: { path: { type: "string" } } }
}

interface Setup {
  readonly npm: string
  /** `provider.p.options` beyond baseURL and apiKey. */
  readonly providerOptions?: Record<string, unknown>
  /** `provider.p.models.m` beyond its limit (context 100,000, output 4,000). */
  readonly model?: Record<string, unknown>
  /** `agent.build` beyond its prompt. */
  readonly agent?: Record<string, unknown>
  /** The session's model variant. */
  readonly variant?: string
  readonly tools?: ReadonlyArray<typeof readTool>
}

/** The request one Step of `setup` puts on the wire: method, path, headers and the parsed body. */
const wire = (setup: Setup) =>
  Effect.gen(function* () {
    const server = yield* ScriptedLLMServer.make()
    const info = {
      provider: {
        p: {
          npm: setup.npm,
          options: { baseURL: server.url, apiKey: "test-key", ...setup.providerOptions },
          models: { m: { limit: { context: 100_000, output: 4000 }, ...setup.model } }
        }
      },
      model: "p/m",
      agent: { build: { prompt: system, ...setup.agent } }
    } as ConfigInfo.Info
    const config = yield* Effect.provide(Config.Service, Config.layerTest(info)).pipe(Effect.orDie)
    const { provider, model } = Option.getOrThrow(config.findModel({ providerID: "p", id: "m" }))
    const request = ModelContext.build({
      sessionID: Identifier.SessionID.make("ses_1"),
      agent: Option.getOrThrow(config.agent("build")),
      provider,
      model,
      variant: setup.variant,
      baseline: "",
      history: [hello],
      tools: setup.tools ?? [],
      lastStep: false
    })
    const client = yield* clientOf({
      protocol: provider.protocol,
      baseURL: provider.baseURL,
      apiKey: provider.apiKey,
      headers: provider.headers,
      dialect: Provider.dialectOf(provider.npm)
    })
    yield* server.enqueue(S.reply(S.text("ok")))
    yield* collect(client.stream(request))
    return yield* server.awaitRequest(1)
  })

const openai = "@ai-sdk/openai-compatible"
const anthropic = "@ai-sdk/anthropic"

describe("OpenAI-compatible chat: request bodies", () => {
  const messages = [
    { role: "system", content: systemSent },
    { role: "user", content: "Hello" }
  ]
  const base = { model: "m", messages, stream: true, stream_options: { include_usage: true } }

  it.scoped("no options: the model's output limit as max_tokens, nothing else", () =>
    Effect.gen(function* () {
      const request = yield* wire({ npm: openai })
      expect(request.body).toEqual({ ...base, max_tokens: 4000 })
      expect(request.headers["x-session-id"]).toBe("ses_1")
    })
  )

  it.scoped("model options: each control and option under its wire name; model headers join the request", () =>
    Effect.gen(function* () {
      const request = yield* wire({
        npm: openai,
        model: {
          headers: { "x-model-header": "on" },
          options: {
            maxOutputTokens: 2000,
            temperature: 0.3,
            topP: 0.9,
            topK: 20,
            presencePenalty: 0.5,
            frequencyPenalty: 0.25,
            stopSequences: ["END"],
            seed: 7,
            reasoningEffort: "high",
            reasoningSummary: "auto",
            textVerbosity: "low",
            store: false,
            include: ["reasoning.encrypted_content"],
            promptCacheKey: "cache-1",
            serviceTier: "flex",
            thinking: { type: "enabled", budgetTokens: 5000 }
          }
        }
      })
      expect(request.body).toEqual({
        ...base,
        max_tokens: 2000,
        temperature: 0.3,
        top_p: 0.9,
        top_k: 20,
        presence_penalty: 0.5,
        frequency_penalty: 0.25,
        stop: ["END"],
        seed: 7,
        reasoning_effort: "high",
        verbosity: "low",
        store: false,
        prompt_cache_key: "cache-1",
        service_tier: "flex"
      })
      expect(request.headers["x-model-header"]).toBe("on")
    })
  )

  it.scoped("provider extra options apply to the model; the model's own options win over them", () =>
    Effect.gen(function* () {
      const request = yield* wire({
        npm: openai,
        providerOptions: { headers: { "x-provider": "1" }, reasoningEffort: "low", top_p: 0.8 },
        model: { options: { reasoningEffort: "medium" } }
      })
      expect(request.body).toEqual({ ...base, max_tokens: 4000, top_p: 0.8, reasoning_effort: "medium" })
      expect(request.headers["x-provider"]).toBe("1")
    })
  )

  it.scoped("the session's variant layers its options over the model's", () =>
    Effect.gen(function* () {
      const model = {
        options: { reasoningEffort: "low", store: false },
        variants: { high: { reasoningEffort: "high", maxOutputTokens: 3000 }, off: { disabled: true } }
      }
      const plain = yield* wire({ npm: openai, model })
      expect(plain.body).toEqual({ ...base, max_tokens: 4000, reasoning_effort: "low", store: false })
      const high = yield* wire({ npm: openai, model, variant: "high" })
      expect(high.body).toEqual({ ...base, max_tokens: 3000, reasoning_effort: "high", store: false })
      // A variant the model no longer offers (here: disabled) is ignored.
      const off = yield* wire({ npm: openai, model, variant: "off" })
      expect(off.body).toEqual(plain.body)
    })
  )

  it.scoped("the agent's options, temperature and top_p win over the model's and the variant's", () =>
    Effect.gen(function* () {
      const request = yield* wire({
        npm: openai,
        model: {
          options: { temperature: 0.1, topP: 0.5, reasoningEffort: "low" },
          variants: { fast: { temperature: 0.2, reasoningEffort: "minimal" } }
        },
        variant: "fast",
        agent: { temperature: 0.7, top_p: 0.95, options: { reasoningEffort: "high", parallelToolCalls: false } },
        tools: [readTool]
      })
      expect(request.body).toEqual({
        ...base,
        tools: [
          {
            type: "function",
            function: { name: "read", description: "Read a file", parameters: readTool.inputSchema }
          }
        ],
        parallel_tool_calls: false,
        max_tokens: 4000,
        temperature: 0.7,
        top_p: 0.95,
        reasoning_effort: "high"
      })
    })
  )

  it.scoped("a model with temperature: false gets none, whoever configured one", () =>
    Effect.gen(function* () {
      const request = yield* wire({
        npm: openai,
        model: { temperature: false, options: { temperature: 0.2 } },
        agent: { temperature: 0.5 }
      })
      expect(request.body).toEqual({ ...base, max_tokens: 4000 })
    })
  )

  it.scoped("unknown keys (and known ones of an unexpected shape) reach the body as written", () =>
    Effect.gen(function* () {
      const request = yield* wire({
        npm: openai,
        providerOptions: { provider: { order: ["a"] } },
        model: {
          options: { chat_template_kwargs: { enable_thinking: false }, reasoningEffort: "ultra" },
          variants: { pinned: { provider: { allow_fallbacks: false } } }
        },
        variant: "pinned"
      })
      expect(request.body).toEqual({
        ...base,
        max_tokens: 4000,
        // Body fields merge deeply across the layers (provider, variant).
        provider: { order: ["a"], allow_fallbacks: false },
        chat_template_kwargs: { enable_thinking: false },
        reasoningEffort: "ultra"
      })
    })
  )

  it.scoped("OpenAI's own API (@ai-sdk/openai): max_completion_tokens, and no top_k", () =>
    Effect.gen(function* () {
      const request = yield* wire({
        npm: "@ai-sdk/openai",
        model: { options: { topK: 20, reasoningEffort: "high" } }
      })
      expect(request.body).toEqual({ ...base, max_completion_tokens: 4000, reasoning_effort: "high" })
    })
  )
})

describe("Anthropic Messages: request bodies", () => {
  const cache = { type: "ephemeral" }
  const base = (cacheControl: Record<string, unknown> = cache) => ({
    model: "m",
    system: [{ type: "text", text: systemSent, cache_control: cacheControl }],
    messages: [{ role: "user", content: [{ type: "text", text: "Hello", cache_control: cacheControl }] }],
    stream: true
  })

  it.scoped("no options: max_tokens is the model's output limit", () =>
    Effect.gen(function* () {
      const request = yield* wire({ npm: anthropic })
      expect(request.body).toEqual({ ...base(), max_tokens: 4000 })
    })
  )

  it.scoped("model options: sampling, stop sequences, service tier and a one-hour cache; the rest not sent", () =>
    Effect.gen(function* () {
      const request = yield* wire({
        npm: anthropic,
        model: {
          headers: { "anthropic-beta": "x-test" },
          options: {
            temperature: 0.3,
            topP: 0.9,
            topK: 40,
            stopSequences: ["END"],
            seed: 7,
            presencePenalty: 0.1,
            serviceTier: "standard_only",
            cacheControl: { type: "ephemeral", ttl: "1h" },
            store: false,
            textVerbosity: "low"
          }
        }
      })
      expect(request.body).toEqual({
        ...base({ type: "ephemeral", ttl: "1h" }),
        max_tokens: 4000,
        temperature: 0.3,
        top_p: 0.9,
        top_k: 40,
        stop_sequences: ["END"],
        service_tier: "standard_only"
      })
      expect(request.headers["anthropic-beta"]).toBe("x-test")
    })
  )

  it.scoped("provider extra options: a thinking budget for every model; temperature is then not sent", () =>
    Effect.gen(function* () {
      const request = yield* wire({
        npm: anthropic,
        providerOptions: { thinking: { type: "enabled", budgetTokens: 2048 } },
        model: { options: { temperature: 0.4, topK: 5, topP: 0.97 } }
      })
      expect(request.body).toEqual({
        ...base(),
        max_tokens: 4000,
        thinking: { type: "enabled", budget_tokens: 2048 },
        top_p: 0.97
      })
    })
  )

  it.scoped("the session's variant turns thinking on with its budget", () =>
    Effect.gen(function* () {
      const model = {
        limit: { context: 200_000, output: 32_000 },
        variants: { high: { thinking: { type: "enabled", budgetTokens: 16_000 } }, low: { reasoningEffort: "low" } }
      }
      const high = yield* wire({ npm: anthropic, model, variant: "high" })
      expect(high.body).toEqual({
        ...base(),
        max_tokens: 32_000,
        thinking: { type: "enabled", budget_tokens: 16_000 }
      })
      const low = yield* wire({ npm: anthropic, model, variant: "low" })
      expect(low.body).toEqual({ ...base(), max_tokens: 32_000, thinking: { type: "enabled", budget_tokens: 4096 } })
    })
  )

  it.scoped("the agent's options, temperature and top_p win: thinking off, its sampling on", () =>
    Effect.gen(function* () {
      const request = yield* wire({
        npm: anthropic,
        model: { options: { thinking: { type: "enabled", budgetTokens: 2048 }, temperature: 0.1 } },
        agent: {
          temperature: 0.6,
          top_p: 0.8,
          options: { thinking: { type: "disabled" }, disableParallelToolUse: true }
        },
        tools: [readTool]
      })
      expect(request.body).toEqual({
        ...base(),
        max_tokens: 4000,
        tools: [{ name: "read", description: "Read a file", input_schema: readTool.inputSchema }],
        tool_choice: { type: "auto", disable_parallel_tool_use: true },
        temperature: 0.6,
        top_p: 0.8
      })
    })
  )

  it.scoped("a model with temperature: false gets none, whoever configured one", () =>
    Effect.gen(function* () {
      const request = yield* wire({
        npm: anthropic,
        model: { temperature: false, options: { temperature: 0.2 } },
        agent: { temperature: 0.5, top_p: 0.9 }
      })
      expect(request.body).toEqual({ ...base(), max_tokens: 4000, top_p: 0.9 })
    })
  )

  it.scoped("unknown keys (and known ones of an unexpected shape) reach the body as written", () =>
    Effect.gen(function* () {
      const request = yield* wire({
        npm: anthropic,
        model: { options: { metadata: { user_id: "u-1" }, thinking: { type: "adaptive" } } }
      })
      expect(request.body).toEqual({
        ...base(),
        max_tokens: 4000,
        metadata: { user_id: "u-1" },
        thinking: { type: "adaptive" }
      })
    })
  )

  it.scoped("thinking budget: from a reasoning effort, cut to leave room for the answer under max_tokens", () =>
    Effect.gen(function* () {
      // `high` asks for 16,384 tokens; the model's 4,000 leave 2,976 after the 1,024 kept for the answer.
      const cut = yield* wire({ npm: anthropic, model: { options: { reasoningEffort: "high", temperature: 1 } } })
      expect(cut.body).toEqual({ ...base(), max_tokens: 4000, thinking: { type: "enabled", budget_tokens: 2976 } })
      // Without a known output limit, max_tokens grows to hold the budget and a default answer.
      const open = yield* wire({
        npm: anthropic,
        model: { limit: { context: 100_000, output: 0 }, options: { thinkingConfig: { thinkingBudget: 3000 } } }
      })
      expect(open.body).toEqual({
        ...base(),
        max_tokens: 3000 + 8192,
        thinking: { type: "enabled", budget_tokens: 3000 }
      })
      // No room for the API's minimum budget: no thinking, and the temperature stays.
      const tight = yield* wire({
        npm: anthropic,
        model: { limit: { context: 100_000, output: 1500 }, options: { reasoningEffort: "high", temperature: 1 } }
      })
      expect(tight.body).toEqual({ ...base(), max_tokens: 1500, temperature: 1 })
      // reasoningEffort `none` is no thinking.
      const none = yield* wire({ npm: anthropic, model: { options: { reasoningEffort: "none" } } })
      expect(none.body).toEqual({ ...base(), max_tokens: 4000 })
    })
  )
})

describe("through the runner", () => {
  it.scopedLive(
    "a session switched to a model variant sends the variant's options from its next Step, and records it",
    () =>
      Effect.gen(function* () {
        const w = yield* world({
          model: {
            options: { reasoningEffort: "low", store: false },
            variants: {
              high: { reasoningEffort: "high", maxOutputTokens: 800, chat_template_kwargs: { enable_thinking: true } }
            },
            headers: { "x-model-header": "m" }
          },
          agent: { build: { temperature: 0.25 } }
        })
        yield* w.server.enqueue(S.reply(S.text("one")), S.reply(S.text("two")))
        yield* w.prompt("first")
        yield* w.wait
        yield* w.run(
          Effect.flatMap(SessionSelection.Service, (selection) =>
            selection.switchModel(w.session.id, { providerID: "scripted", id: "m", variant: "high" })
          )
        )
        yield* w.prompt("second")
        yield* w.wait
        const [first, second] = yield* w.server.requests
        const settings = (body: Record<string, unknown>) => {
          const { model: _model, messages: _messages, tools: _tools, stream_options: _options, ...rest } = body
          return rest
        }
        expect(settings(first!.body)).toEqual({
          stream: true,
          max_tokens: 1000,
          temperature: 0.25,
          reasoning_effort: "low",
          store: false
        })
        expect(settings(second!.body)).toEqual({
          stream: true,
          max_tokens: 800,
          temperature: 0.25,
          reasoning_effort: "high",
          store: false,
          chat_template_kwargs: { enable_thinking: true }
        })
        expect(first!.headers["x-model-header"]).toBe("m")
        expect(second!.headers["x-model-header"]).toBe("m")
        const started = (yield* w.events).filter((event) => event.type === "session.next.step.started")
        expect(started.map((event) => (event.data as { model: unknown }).model)).toEqual([
          { providerID: "scripted", id: "m" },
          { providerID: "scripted", id: "m", variant: "high" }
        ])
      })
  )
})
