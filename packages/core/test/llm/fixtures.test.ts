import * as fs from "node:fs"
import * as path from "node:path"
import { it } from "@effect/vitest"
import { Effect } from "effect"
import { describe, expect } from "vitest"
import type { Provider } from "../../src/llm/provider.js"
import { LLMScript as S } from "../../src/testing/llm-script.js"
import { baseRequest, collect, failure, setup, types } from "./harness.js"

/**
 * Captured-format transcripts (test/fixtures/llm/*.sse, and Gemini's error bodies as *.json) replayed
 * byte for byte through the real adapters over loopback HTTP, sliced into small writes so SSE frames
 * straddle socket reads.
 */
const fixture = (name: string) => fs.readFileSync(path.join(__dirname, "../fixtures/llm", name), "utf8")

const replay = (protocol: Provider.Protocol, name: string) =>
  Effect.gen(function* () {
    const { server, client } = yield* setup(protocol, { sliceSize: 11 })
    yield* server.enqueue(S.raw(fixture(name)))
    return client.stream(baseRequest())
  })

describe("OpenAI-compatible transcripts", () => {
  it.scoped("gpt-4o-mini text with cached prompt tokens and unicode", () =>
    Effect.gen(function* () {
      const events = yield* collect(yield* replay("openai-compatible", "openai-text-usage.sse"))
      expect(types(events)).toEqual([
        "text-start",
        "text-delta",
        "text-delta",
        "text-delta",
        "text-delta",
        "text-end",
        "usage",
        "finish"
      ])
      expect(events[5]).toEqual({ type: "text-end", id: "text-0", text: "The build passes — ünïcödé ✓." })
      expect(events[6]).toEqual({
        type: "usage",
        tokens: { input: 425, output: 9, reasoning: 0, cache: { read: 1920, write: 0 } }
      })
      expect(events[7]).toEqual({ type: "finish", reason: "stop", raw: "stop" })
    })
  )

  it.scoped("gpt-4.1 parallel tool calls with chunked arguments", () =>
    Effect.gen(function* () {
      const events = yield* collect(yield* replay("openai-compatible", "openai-parallel-tools.sse"))
      expect(events.filter((e) => e.type === "tool-input-start")).toEqual([
        { type: "tool-input-start", id: "call_Vq3kP0rB2mXc", name: "read" },
        { type: "tool-input-start", id: "call_H8wNn4zYt6Ld", name: "grep" }
      ])
      expect(events.filter((e) => e.type === "tool-call")).toEqual([
        {
          type: "tool-call",
          id: "call_Vq3kP0rB2mXc",
          name: "read",
          input: { path: "src/index.ts" },
          inputText: '{"path": "src/index.ts"}'
        },
        {
          type: "tool-call",
          id: "call_H8wNn4zYt6Ld",
          name: "grep",
          input: { pattern: "TODO", include: "*.ts" },
          inputText: '{"pattern": "TODO", "include": "*.ts"}'
        }
      ])
      expect(events.at(-2)).toEqual({
        type: "usage",
        tokens: { input: 812, output: 58, reasoning: 0, cache: { read: 0, write: 0 } }
      })
      expect(events.at(-1)).toEqual({ type: "finish", reason: "tool-calls", raw: "tool_calls" })
    })
  )

  it.scoped("DeepSeek reasoning_content, then content, finish length with usage in the same chunk", () =>
    Effect.gen(function* () {
      const events = yield* collect(yield* replay("openai-compatible", "openai-reasoning-content.sse"))
      expect(types(events)).toEqual([
        "reasoning-start",
        "reasoning-delta",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "usage",
        "finish"
      ])
      expect(events[3]).toMatchObject({ text: "The user asks for 17 * 3, which is 51." })
      expect(events[7]).toMatchObject({ text: "17 × 3 = 51" })
      expect(events[8]).toEqual({
        type: "usage",
        tokens: { input: 64, output: 12, reasoning: 28, cache: { read: 0, write: 0 } }
      })
      expect(events[9]).toEqual({ type: "finish", reason: "length", raw: "length" })
    })
  )

  it.scoped('llama.cpp: a tool call finished with "stop" is reported as tool-calls', () =>
    Effect.gen(function* () {
      const events = yield* collect(yield* replay("openai-compatible", "llamacpp-tool-stop.sse"))
      expect(events.find((e) => e.type === "tool-call")).toMatchObject({
        id: "Ab3dEf9hIj2kLm4nOp6qRs8tUv0wXy1z",
        name: "bash",
        input: { command: "ls -la" }
      })
      expect(events.at(-2)).toEqual({
        type: "usage",
        tokens: { input: 1544, output: 21, reasoning: 0, cache: { read: 0, write: 0 } }
      })
      expect(events.at(-1)).toEqual({ type: "finish", reason: "tool-calls", raw: "stop" })
    })
  )

  it.scoped("OpenRouter: comment lines are ignored, a mid-stream error with a numeric code is retryable", () =>
    Effect.gen(function* () {
      const error = yield* failure(yield* replay("openai-compatible", "openrouter-midstream-error.sse"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        status: 502,
        retryable: true,
        message: "Upstream provider returned an error: connection reset"
      })
    })
  )
})

describe("Anthropic transcripts", () => {
  it.scoped("claude-sonnet-4: thinking with signature, text, two tool_use blocks, cache usage", () =>
    Effect.gen(function* () {
      const events = yield* collect(yield* replay("anthropic", "anthropic-thinking-tool.sse"))
      expect(types(events)).toEqual([
        "reasoning-start",
        "reasoning-delta",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-end",
        "tool-call",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-end",
        "tool-call",
        "usage",
        "finish"
      ])
      expect(events[3]).toEqual({
        type: "reasoning-end",
        id: "reasoning-0",
        text: "I should read the config before editing it.",
        metadata: { anthropic: { signature: "EqQBCkgIBxABGAIiQLm3c2lnbmF0dXJlLWZpeHR1cmUtYWJjZGVmZ2hpams=" } }
      })
      expect(events.filter((e) => e.type === "tool-call")).toEqual([
        {
          type: "tool-call",
          id: "toolu_01A9sLk3PqW7xZ2vN8bC5mRt",
          name: "read",
          input: { path: "opencode.json" },
          inputText: '{"path": "opencode.json"}'
        },
        {
          type: "tool-call",
          id: "toolu_01B7tMn4QrX8yA3wO9cD6nSu",
          name: "glob",
          input: { pattern: "**/*.jsonc" },
          inputText: '{"pattern": "**/*.jsonc"}'
        }
      ])
      expect(events.at(-2)).toEqual({
        type: "usage",
        tokens: { input: 412, output: 187, reasoning: 0, cache: { read: 9216, write: 2048 } }
      })
      expect(events.at(-1)).toEqual({ type: "finish", reason: "tool-calls", raw: "tool_use" })
    })
  )

  it.scoped("claude-3-7: redacted thinking, max_tokens", () =>
    Effect.gen(function* () {
      const events = yield* collect(yield* replay("anthropic", "anthropic-redacted-thinking.sse"))
      expect(events[1]).toEqual({
        type: "reasoning-end",
        id: "reasoning-0",
        text: "",
        metadata: {
          anthropic: {
            redactedData:
              "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8URj2pLmu4qRXo4z"
          }
        }
      })
      expect(events.at(-1)).toEqual({ type: "finish", reason: "length", raw: "max_tokens" })
    })
  )

  it.scoped("claude-opus-4: overloaded_error after partial text", () =>
    Effect.gen(function* () {
      const error = yield* failure(yield* replay("anthropic", "anthropic-overloaded-midstream.sse"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        retryable: true,
        code: "overloaded_error",
        message: "Overloaded"
      })
    })
  )
})

describe("Gemini transcripts", () => {
  it.scoped("gemini-2.5-pro: thought summaries, parallel calls without ids (the first signed), cached usage", () =>
    Effect.gen(function* () {
      const events = yield* collect(yield* replay("google", "gemini-thinking-tool.sse"))
      expect(types(events)).toEqual([
        "reasoning-start",
        "reasoning-delta",
        "reasoning-delta",
        "reasoning-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-end",
        "tool-call",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-end",
        "tool-call",
        "usage",
        "finish"
      ])
      // The run of thought parts had no signature of its own: the signature belongs to the call.
      expect(events[3]).toEqual({
        type: "reasoning-end",
        id: "reasoning-0",
        text: "**Locating the config**\n\nI should read the config before editing it. Then find every JSONC file."
      })
      expect(events.filter((e) => e.type === "tool-call")).toEqual([
        {
          type: "tool-call",
          id: "call_kX1aaOeGFtuQ1MkP9r3mYQ4_0",
          name: "read",
          input: { path: "opencode.json" },
          inputText: '{"path":"opencode.json"}',
          metadata: { google: { thoughtSignature: "CiQB0e2Kb3Bfc2lnbmF0dXJlX2ZpeHR1cmVfZ2VtaW5pXzI1X3Bybw==" } }
        },
        {
          type: "tool-call",
          id: "call_kX1aaOeGFtuQ1MkP9r3mYQ4_1",
          name: "glob",
          input: { pattern: "**/*.jsonc" },
          inputText: '{"pattern":"**/*.jsonc"}'
        }
      ])
      // promptTokenCount includes the cached tokens; thoughts are counted apart from candidates.
      expect(events.at(-2)).toEqual({
        type: "usage",
        tokens: { input: 3330, output: 41, reasoning: 187, cache: { read: 8192, write: 0 } }
      })
      expect(events.at(-1)).toEqual({ type: "finish", reason: "tool-calls", raw: "STOP" })
    })
  )

  it.scoped("gemini-3-flash: unicode text, a signature-only last part, MAX_TOKENS", () =>
    Effect.gen(function* () {
      const events = yield* collect(yield* replay("google", "gemini-text-signature.sse"))
      expect(types(events)).toEqual([
        "text-start",
        "text-delta",
        "text-delta",
        "text-delta",
        "text-end",
        "reasoning-start",
        "reasoning-end",
        "usage",
        "finish"
      ])
      expect(events[4]).toEqual({
        type: "text-end",
        id: "text-0",
        text: "The build passes — ünïcödé ✓. Next I would run the"
      })
      expect(events[6]).toEqual({
        type: "reasoning-end",
        id: "reasoning-1",
        text: "",
        metadata: { google: { thoughtSignature: "EjQKMgEMOdbHc2lnbmF0dXJlLW9uLWEtdGV4dC1wYXJ0" } }
      })
      expect(events.at(-2)).toEqual({
        type: "usage",
        tokens: { input: 64, output: 16, reasoning: 240, cache: { read: 0, write: 0 } }
      })
      expect(events.at(-1)).toEqual({ type: "finish", reason: "length", raw: "MAX_TOKENS" })
    })
  )

  it.scoped("gemini-2.5-flash: an UNAVAILABLE error after partial text is retryable", () =>
    Effect.gen(function* () {
      const error = yield* failure(yield* replay("google", "gemini-midstream-error.sse"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        status: 503,
        retryable: true,
        code: "UNAVAILABLE",
        message: "The model is overloaded. Please try again later."
      })
    })
  )

  it.scoped("a prompt blocked before generation: usage, then content-filter", () =>
    Effect.gen(function* () {
      expect(yield* collect(yield* replay("google", "gemini-prompt-blocked.sse"))).toEqual([
        { type: "usage", tokens: { input: 37, output: 0, reasoning: 0, cache: { read: 0, write: 0 } } },
        { type: "finish", reason: "content-filter", raw: "PROHIBITED_CONTENT" }
      ])
    })
  )

  it.scoped("HTTP error bodies: a free-tier 429 waits its RetryInfo delay; API_KEY_INVALID is an auth error", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("google")
      const json = { contentType: "application/json; charset=UTF-8" }
      yield* server.enqueue(
        S.raw(fixture("gemini-quota-429.json"), { status: 429, ...json }),
        S.raw(fixture("gemini-api-key-invalid.json"), { status: 400, ...json })
      )
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderError",
        status: 429,
        retryable: true,
        retryAfterMs: 41_000,
        code: "RESOURCE_EXHAUSTED"
      })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderAuthError",
        status: 400,
        message: "API key not valid. Please pass a valid API key."
      })
    })
  )
})
