import { it } from "@effect/vitest"
import { Effect } from "effect"
import { describe, expect } from "vitest"
import { Anthropic } from "../../src/llm/anthropic.js"
import type { LLMEvent } from "../../src/llm/llm-event.js"
import { LLMRequest } from "../../src/llm/llm-request.js"
import { LLMScript as S } from "../../src/testing/llm-script.js"
import { baseRequest as base, collect, failure, interruptionAbortsRequest, setup, types } from "./harness.js"

const baseRequest = (overrides: Partial<LLMRequest.Request> = {}) =>
  base({ model: { providerID: "anthropic", modelID: "claude-sonnet-4-20250514" }, ...overrides })

const ephemeral = { type: "ephemeral" }

describe("request shape", () => {
  it.scoped("x-api-key, version, system block, max_tokens, tools, controls, options, headers", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("anthropic")
      yield* server.enqueue(S.reply(S.text("ok")))
      const system = "AGENT PROMPT\n\n<env>cwd: /repo</env>\n\nInstructions from: /repo/AGENTS.md\nBe terse."
      yield* collect(
        client.stream(
          baseRequest({
            system,
            tools: [{ name: "read", description: "Read a file", inputSchema: { type: "object", properties: {} } }],
            toolChoice: "required",
            generation: { maxOutputTokens: 2048, temperature: 1 },
            providerOptions: { anthropic: { thinking: { type: "enabled", budget_tokens: 1024 }, messages: "ignored" } },
            headers: { "x-session-id": "ses_1", "x-session-affinity": "ses_1" }
          })
        )
      )
      const request = yield* server.awaitRequest(1)
      expect(request.path).toBe("/v1/messages")
      expect(request.headers).toMatchObject({
        "x-api-key": "test-key",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
        "x-session-id": "ses_1",
        "x-session-affinity": "ses_1"
      })
      expect(request.headers.authorization).toBeUndefined()
      expect(request.body).toEqual({
        model: "claude-sonnet-4-20250514",
        max_tokens: 2048,
        system: [{ type: "text", text: system, cache_control: ephemeral }],
        messages: [{ role: "user", content: [{ type: "text", text: "Hello", cache_control: ephemeral }] }],
        tools: [{ name: "read", description: "Read a file", input_schema: { type: "object", properties: {} } }],
        tool_choice: { type: "any" },
        temperature: 1,
        stream: true,
        thinking: { type: "enabled", budget_tokens: 1024 }
      })
    })
  )

  it.scoped("default max_tokens; no tools key without tools", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("anthropic")
      yield* server.enqueue(S.reply(S.text("ok")))
      yield* collect(client.stream(baseRequest({ system: "" })))
      const request = yield* server.awaitRequest(1)
      expect(request.body.max_tokens).toBe(Anthropic.defaultMaxTokens)
      expect(request.body.system).toBeUndefined()
      expect(request.body.tools).toBeUndefined()
    })
  )

  it.scoped("tool results in call order, merged with the lowered update and the steer into one user turn", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("anthropic")
      yield* server.enqueue(S.reply(S.text("ok")))
      yield* collect(
        client.stream(
          baseRequest({
            messages: [
              LLMRequest.user("Read two files"),
              LLMRequest.assistant(
                LLMRequest.text(""),
                LLMRequest.toolCall("toolu_a", "read", { path: "a" }),
                LLMRequest.toolCall("toolu_b", "read", { path: "b" })
              ),
              LLMRequest.tool(
                LLMRequest.toolResult("toolu_b", "read", "no such file", { isError: true }),
                LLMRequest.toolResult("toolu_a", "read", "A")
              ),
              LLMRequest.instructionUpdate("AGENTS.md changed: use tabs."),
              LLMRequest.user("Also fix b")
            ]
          })
        )
      )
      const request = yield* server.awaitRequest(1)
      expect(request.body.messages).toEqual([
        { role: "user", content: [{ type: "text", text: "Read two files" }] },
        {
          role: "assistant",
          content: [
            { type: "tool_use", id: "toolu_a", name: "read", input: { path: "a" } },
            { type: "tool_use", id: "toolu_b", name: "read", input: { path: "b" } }
          ]
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_a", content: "A" },
            { type: "tool_result", tool_use_id: "toolu_b", content: "no such file", is_error: true },
            { type: "text", text: "<instruction-update>\nAGENTS.md changed: use tabs.\n</instruction-update>" },
            { type: "text", text: "Also fix b", cache_control: ephemeral }
          ]
        }
      ])
    })
  )

  it.scoped("an update with no following prompt joins the tool results' user turn", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("anthropic")
      yield* server.enqueue(S.reply(S.text("ok")))
      yield* collect(
        client.stream(
          baseRequest({
            messages: [
              LLMRequest.user("go"),
              LLMRequest.assistant(LLMRequest.toolCall("toolu_1", "bash", { command: "ls" })),
              LLMRequest.tool(LLMRequest.toolResult("toolu_1", "bash", "a b")),
              LLMRequest.instructionUpdate("Date: 2025-01-02")
            ]
          })
        )
      )
      const request = yield* server.awaitRequest(1)
      expect(request.body.messages.at(-1)).toEqual({
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "a b" },
          {
            type: "text",
            text: "<instruction-update>\nDate: 2025-01-02\n</instruction-update>",
            cache_control: ephemeral
          }
        ]
      })
    })
  )
})

describe("extended thinking where the API refuses it", () => {
  const thinkingOf = (request: LLMRequest.Request) => Anthropic.body(request).thinking
  const options = { reasoningEffort: "low" } as const
  const call = LLMRequest.toolCall("toolu_1", "read", { path: "a" })
  const result = LLMRequest.tool(LLMRequest.toolResult("toolu_1", "read", "contents"))

  it("a forced tool choice turns it off; auto and none keep it", () => {
    const tools = [{ name: "read", description: "Read", inputSchema: { type: "object" } }]
    const on = { type: "enabled", budget_tokens: 4096 }
    expect(thinkingOf(baseRequest({ options, tools }))).toEqual(on)
    expect(thinkingOf(baseRequest({ options, tools, toolChoice: "auto" }))).toEqual(on)
    expect(thinkingOf(baseRequest({ options, tools, toolChoice: "none" }))).toEqual(on)
    expect(thinkingOf(baseRequest({ options, tools, toolChoice: "required" }))).toBeUndefined()
    expect(thinkingOf(baseRequest({ options, tools, toolChoice: { type: "tool", name: "read" } }))).toBeUndefined()
  })

  it("a tool loop whose assistant turn starts without thinking continues without it; a new user turn may think", () => {
    const withoutThinking = [LLMRequest.user("Q"), LLMRequest.assistant(call), result]
    expect(thinkingOf(baseRequest({ options, messages: withoutThinking }))).toBeUndefined()
    expect(
      Anthropic.body(baseRequest({ options, messages: withoutThinking, generation: { temperature: 0.5 } }))
    ).toMatchObject({
      temperature: 0.5
    })
    const signed = LLMRequest.reasoning("thinking…", {
      metadata: { anthropic: { signature: "sig" } },
      replayable: true
    })
    const withThinking = [LLMRequest.user("Q"), LLMRequest.assistant(signed, call), result]
    expect(thinkingOf(baseRequest({ options, messages: withThinking }))).toEqual({
      type: "enabled",
      budget_tokens: 4096
    })
    const answered = [...withoutThinking, LLMRequest.assistant(LLMRequest.text("done")), LLMRequest.user("Next")]
    expect(thinkingOf(baseRequest({ options, messages: answered }))).toEqual({ type: "enabled", budget_tokens: 4096 })
  })
})

describe("thinking signatures (Native Continuation Metadata)", () => {
  it.scoped("streamed with their signature, sent back natively only when replayable", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("anthropic")
      yield* server.enqueue(
        S.reply(
          S.reasoning(["Let me ", "think."], { signature: "sig-abc123" }),
          S.redactedReasoning("REDACTED-PAYLOAD"),
          S.text("Answer.")
        ),
        S.reply(S.text("same model")),
        S.reply(S.text("other model"))
      )
      const events = yield* collect(client.stream(baseRequest()))
      const ends = events.filter((e): e is LLMEvent.ReasoningEnd => e.type === "reasoning-end")
      expect(ends).toEqual([
        {
          type: "reasoning-end",
          id: "reasoning-0",
          text: "Let me think.",
          metadata: { anthropic: { signature: "sig-abc123" } }
        },
        {
          type: "reasoning-end",
          id: "reasoning-1",
          text: "",
          metadata: { anthropic: { redactedData: "REDACTED-PAYLOAD" } }
        }
      ])

      // The runner records the parts as streamed, and marks them replayable for the exact same model.
      const history = (replayable: boolean) => [
        LLMRequest.user("Q"),
        LLMRequest.assistant(
          ...ends.map((end) =>
            LLMRequest.reasoning(end.text, { ...(end.metadata ? { metadata: end.metadata } : {}), replayable })
          ),
          LLMRequest.text("Answer.")
        ),
        LLMRequest.user("Next")
      ]
      yield* collect(client.stream(baseRequest({ messages: history(true) })))
      yield* collect(client.stream(baseRequest({ messages: history(false) })))
      const [, same, other] = yield* server.requests
      expect(same?.body.messages[1]).toEqual({
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Let me think.", signature: "sig-abc123" },
          { type: "redacted_thinking", data: "REDACTED-PAYLOAD" },
          { type: "text", text: "Answer." }
        ]
      })
      // After a model switch: visible reasoning becomes plain text, opaque metadata is never sent.
      expect(other?.body.messages[1]).toEqual({
        role: "assistant",
        content: [
          { type: "text", text: "Let me think." },
          { type: "text", text: "Answer." }
        ]
      })
      expect(other?.text).not.toContain("sig-abc123")
      expect(other?.text).not.toContain("REDACTED-PAYLOAD")
    })
  )

  it.scoped("replayable reasoning without Anthropic metadata is lowered to text", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("anthropic")
      yield* server.enqueue(S.reply(S.text("ok")))
      yield* collect(
        client.stream(
          baseRequest({
            messages: [
              LLMRequest.user("Q"),
              LLMRequest.assistant(
                LLMRequest.reasoning("thoughts", { replayable: true, metadata: { other: { id: "x" } } })
              ),
              LLMRequest.user("Next")
            ]
          })
        )
      )
      expect((yield* server.awaitRequest(1)).body.messages[1]).toEqual({
        role: "assistant",
        content: [{ type: "text", text: "thoughts" }]
      })
    })
  )
})

describe("stream decoding", () => {
  it.scoped("text, thinking and parallel tool_use with chunked input, usage with cache tokens", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("anthropic", { sliceSize: 7 })
      yield* server.enqueue(
        S.reply(
          S.reasoning("Plan", { signature: "s1" }),
          S.text("Running ", "both"),
          S.toolCall("toolu_1", "read", { path: "a.ts" }, { chunks: 3 }),
          S.toolCall("toolu_2", "grep", { pattern: "x" }, { chunks: 2 }),
          S.usage({ input: 50, output: 70, cacheRead: 4000, cacheWrite: 300 })
        )
      )
      const events = yield* collect(client.stream(baseRequest()))
      expect(types(events)).toEqual([
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-end",
        "tool-call",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-end",
        "tool-call",
        "usage",
        "finish"
      ])
      expect(events.filter((e) => e.type === "tool-call")).toEqual([
        { type: "tool-call", id: "toolu_1", name: "read", input: { path: "a.ts" }, inputText: '{"path":"a.ts"}' },
        { type: "tool-call", id: "toolu_2", name: "grep", input: { pattern: "x" }, inputText: '{"pattern":"x"}' }
      ])
      expect(events.at(-2)).toEqual({
        type: "usage",
        tokens: { input: 50, output: 70, reasoning: 0, cache: { read: 4000, write: 300 } }
      })
      expect(events.at(-1)).toEqual({ type: "finish", reason: "tool-calls", raw: "tool_use" })
    })
  )

  it.scoped("stop reasons map", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("anthropic")
      yield* server.enqueue(
        S.reply(S.text("a")),
        S.reply(S.text("b"), S.finish("length")),
        S.reply(S.text("c"), S.finish("content-filter")),
        S.reply(S.text("d"), S.finish("other"))
      )
      const finishes = []
      for (let i = 0; i < 4; i++) finishes.push((yield* collect(client.stream(baseRequest()))).at(-1))
      expect(finishes).toEqual([
        { type: "finish", reason: "stop", raw: "end_turn" },
        { type: "finish", reason: "length", raw: "max_tokens" },
        { type: "finish", reason: "content-filter", raw: "refusal" },
        { type: "finish", reason: "other", raw: "pause_turn" }
      ])
    })
  )
})

describe("errors", () => {
  it.scoped("429 with Retry-After, 529 overloaded, 400 prompt too long, 401, 403", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("anthropic")
      yield* server.enqueue(
        S.httpError(429, { retryAfter: "7" }),
        S.httpError(529),
        S.overflow(),
        S.httpError(401),
        S.httpError(403)
      )
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderError",
        providerID: "anthropic",
        status: 429,
        retryable: true,
        retryAfterMs: 7000,
        code: "rate_limit_error"
      })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderError",
        status: 529,
        retryable: true,
        code: "overloaded_error"
      })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ContextOverflowError",
        status: 400,
        message: "prompt is too long: 201234 tokens > 200000 maximum"
      })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "ProviderAuthError", status: 401 })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "ProviderAuthError", status: 403 })
    })
  )

  it.scoped("mid-stream error events", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("anthropic")
      yield* server.enqueue(
        S.reply(S.text("partial"), S.streamError("overloaded")),
        S.reply(S.streamError("overflow")),
        S.reply(S.streamError("auth")),
        S.reply(S.streamError("invalid-request", "messages: text content blocks must be non-empty"))
      )
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderError",
        retryable: true,
        code: "overloaded_error"
      })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "ContextOverflowError" })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "ProviderAuthError" })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderError",
        retryable: false,
        message: "messages: text content blocks must be non-empty"
      })
    })
  )

  it.scoped("a stream without message_stop is a retryable TransportError", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("anthropic")
      yield* server.enqueue(S.reply(S.text("cut"), S.cut))
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "TransportError", retryable: true })
    })
  )
})

it.scoped("interrupting the consumer aborts the HTTP request", () =>
  Effect.map(interruptionAbortsRequest("anthropic"), (outcome) => expect(outcome).toBe("aborted"))
)
