import { it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { describe, expect } from "vitest"
import { InstructionLowering } from "../../src/llm/instruction-lowering.js"
import { LLMRequest } from "../../src/llm/llm-request.js"
import { LLMScript as S } from "../../src/testing/llm-script.js"
import { ScriptedLLMServer } from "../../src/testing/scripted-llm-server.js"
import { baseRequest, clientOf, collect, failure, setup, types } from "./harness.js"

const readTool: LLMRequest.Tool = {
  name: "read",
  description: "Read a file",
  inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
}

describe("request shape", () => {
  it.scoped("one system message first, unchanged; tools; stream options; controls; headers", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(S.reply(S.text("ok")))
      // The runner joins the system parts in its order; the adapter must send them as one message, unchanged.
      const system = [
        "AGENT PROMPT",
        "<env>cwd: /repo</env>",
        "Today is 2025-01-01",
        "Instructions from: /repo/AGENTS.md\nBe terse."
      ].join("\n\n")
      yield* collect(
        client.stream(
          baseRequest({
            system,
            tools: [readTool],
            toolChoice: "auto",
            generation: { maxOutputTokens: 1024, temperature: 0.2, topP: 0.9 },
            providerOptions: {
              "openai-compatible": { reasoning_effort: "high", model: "ignored", stream: false },
              anthropic: { thinking: { type: "enabled" } }
            },
            headers: { "x-session-id": "ses_abc", "x-session-affinity": "ses_abc", Authorization: "Bearer override" }
          })
        )
      )
      const request = yield* server.awaitRequest(1)
      expect(request.method).toBe("POST")
      expect(request.path).toBe("/v1/chat/completions")
      expect(request.headers["x-session-id"]).toBe("ses_abc")
      expect(request.headers["x-session-affinity"]).toBe("ses_abc")
      // The request's own headers win over the adapter's defaults.
      expect(request.headers.authorization).toBe("Bearer override")
      expect(request.headers["content-type"]).toBe("application/json")
      expect(request.headers.traceparent).toBeUndefined()
      expect(request.body).toEqual({
        model: "qwen-test",
        messages: [
          { role: "system", content: system },
          { role: "user", content: "Hello" }
        ],
        tools: [
          {
            type: "function",
            function: { name: "read", description: "Read a file", parameters: readTool.inputSchema }
          }
        ],
        tool_choice: "auto",
        stream: true,
        stream_options: { include_usage: true },
        max_tokens: 1024,
        temperature: 0.2,
        top_p: 0.9,
        reasoning_effort: "high"
      })
      expect(request.body.messages.filter((m: { role: string }) => m.role === "system")).toHaveLength(1)
    })
  )

  it.scoped("Bearer API key; no tools key without tools; named tool choice", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(S.reply(S.text("a")), S.reply(S.text("b")))
      yield* collect(client.stream(baseRequest()))
      yield* collect(client.stream(baseRequest({ tools: [readTool], toolChoice: { type: "tool", name: "read" } })))
      const [first, second] = yield* server.requests
      expect(first?.headers.authorization).toBe("Bearer test-key")
      expect(first?.body.tools).toBeUndefined()
      expect(first?.body.tool_choice).toBeUndefined()
      expect(second?.body.tool_choice).toEqual({ type: "function", function: { name: "read" } })
    })
  )

  it.scoped("no Authorization header without an API key", () =>
    Effect.gen(function* () {
      const server = yield* ScriptedLLMServer.make()
      const client = yield* clientOf({ protocol: "openai-compatible", baseURL: `${server.url}/` })
      yield* server.enqueue(S.reply(S.text("a")))
      yield* collect(client.stream(baseRequest()))
      const request = yield* server.awaitRequest(1)
      expect(request.path).toBe("/v1/chat/completions")
      expect(request.headers.authorization).toBeUndefined()
    })
  )

  it.scoped("assistant tool calls, then tool results as role:tool in call order", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(S.reply(S.text("done")))
      yield* collect(
        client.stream(
          baseRequest({
            messages: [
              LLMRequest.user("Read two files"),
              LLMRequest.assistant(
                LLMRequest.text("Reading both."),
                LLMRequest.toolCall("call_a", "read", { path: "a.ts" }),
                LLMRequest.toolCall("call_b", "read", { path: "b.ts" })
              ),
              // Settled in the opposite order.
              LLMRequest.tool(
                LLMRequest.toolResult("call_b", "read", "B", { isError: true }),
                LLMRequest.toolResult("call_a", "read", "A")
              )
            ]
          })
        )
      )
      const request = yield* server.awaitRequest(1)
      expect(request.body.messages.slice(1)).toEqual([
        { role: "user", content: "Read two files" },
        {
          role: "assistant",
          content: "Reading both.",
          tool_calls: [
            { id: "call_a", type: "function", function: { name: "read", arguments: '{"path":"a.ts"}' } },
            { id: "call_b", type: "function", function: { name: "read", arguments: '{"path":"b.ts"}' } }
          ]
        },
        { role: "tool", tool_call_id: "call_a", content: "A" },
        { role: "tool", tool_call_id: "call_b", content: "B" }
      ])
    })
  )

  it.scoped("instruction updates lower to wrapped blocks in the step's user turn", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(S.reply(S.text("ok")))
      yield* collect(
        client.stream(
          baseRequest({
            messages: [
              LLMRequest.user("First"),
              LLMRequest.assistant(LLMRequest.toolCall("call_1", "read", { path: "x" })),
              LLMRequest.tool(LLMRequest.toolResult("call_1", "read", "X")),
              // Admitted at the boundary after tool settlement, with no new prompt: a synthetic user turn.
              LLMRequest.instructionUpdate("AGENTS.md now says: be brief."),
              LLMRequest.assistant(LLMRequest.text("Read it.")),
              // Two updates, then a steer: both blocks open that user message, in order.
              LLMRequest.instructionUpdate("Date: 2025-01-02"),
              LLMRequest.instructionUpdate("Skill added: deploy"),
              LLMRequest.user("Now deploy")
            ]
          })
        )
      )
      const request = yield* server.awaitRequest(1)
      expect(request.body.messages.slice(1)).toEqual([
        { role: "user", content: "First" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "read", arguments: '{"path":"x"}' } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "X" },
        { role: "user", content: InstructionLowering.wrap("AGENTS.md now says: be brief.") },
        { role: "assistant", content: "Read it." },
        {
          role: "user",
          content: [
            { type: "text", text: "<instruction-update>\nDate: 2025-01-02\n</instruction-update>" },
            { type: "text", text: "<instruction-update>\nSkill added: deploy\n</instruction-update>" },
            { type: "text", text: "Now deploy" }
          ]
        }
      ])
    })
  )

  it.scoped("reasoning is never sent natively: replayable is omitted, other reasoning becomes text", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(S.reply(S.text("ok")))
      yield* collect(
        client.stream(
          baseRequest({
            messages: [
              LLMRequest.user("q1"),
              LLMRequest.assistant(
                LLMRequest.reasoning("same model thoughts", { replayable: true }),
                LLMRequest.text("a1")
              ),
              LLMRequest.user("q2"),
              LLMRequest.assistant(LLMRequest.reasoning("other model thoughts"), LLMRequest.text("a2")),
              LLMRequest.user("q3"),
              LLMRequest.assistant(LLMRequest.reasoning("only thoughts", { replayable: true })),
              LLMRequest.user("q4")
            ]
          })
        )
      )
      const request = yield* server.awaitRequest(1)
      expect(request.body.messages.slice(1)).toEqual([
        { role: "user", content: "q1" },
        { role: "assistant", content: "a1" },
        { role: "user", content: "q2" },
        { role: "assistant", content: "other model thoughts\n\na2" },
        { role: "user", content: "q3" },
        { role: "user", content: "q4" }
      ])
    })
  )
})

describe("stream decoding", () => {
  it.scoped("text, reasoning and parallel tool calls with chunked arguments, across split frames", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible", { sliceSize: 5 })
      yield* server.enqueue(
        S.reply(
          S.reasoning(["Need ", "two files"]),
          S.text("Reading ", "both"),
          S.toolCall("call_1", "read", { path: "src/a.ts" }, { chunks: 4 }),
          S.toolCall("call_2", "grep", { pattern: "TODO", include: "*.ts" }, { chunks: 3 }),
          S.usage({ input: 100, output: 30, reasoning: 12, cacheRead: 900 })
        )
      )
      const events = yield* collect(client.stream(baseRequest({ tools: [readTool] })))
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
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-end",
        "tool-call",
        "tool-input-end",
        "tool-call",
        "usage",
        "finish"
      ])
      expect(events.find((e) => e.type === "reasoning-end")).toEqual({
        type: "reasoning-end",
        id: "reasoning-0",
        text: "Need two files"
      })
      expect(events.find((e) => e.type === "text-end")).toMatchObject({ text: "Reading both" })
      expect(events.filter((e) => e.type === "tool-call")).toEqual([
        {
          type: "tool-call",
          id: "call_1",
          name: "read",
          input: { path: "src/a.ts" },
          inputText: '{"path":"src/a.ts"}'
        },
        {
          type: "tool-call",
          id: "call_2",
          name: "grep",
          input: { pattern: "TODO", include: "*.ts" },
          inputText: '{"pattern":"TODO","include":"*.ts"}'
        }
      ])
      expect(events.filter((e) => e.type === "tool-input-end")).toEqual([
        { type: "tool-input-end", id: "call_1", text: '{"path":"src/a.ts"}' },
        { type: "tool-input-end", id: "call_2", text: '{"pattern":"TODO","include":"*.ts"}' }
      ])
      // Disjoint counts: prompt 1000 = 100 fresh + 900 cached; completion 42 = 30 + 12 reasoning.
      expect(events.at(-2)).toEqual({
        type: "usage",
        tokens: { input: 100, output: 30, reasoning: 12, cache: { read: 900, write: 0 } }
      })
      expect(events.at(-1)).toEqual({ type: "finish", reason: "tool-calls", raw: "tool_calls" })
      expect(yield* (yield* server.awaitRequest(1)).outcome).toBe("completed")
    })
  )

  it.scoped("finish reasons map", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(
        S.reply(S.text("a"), S.finish("length")),
        S.reply(S.text("b"), S.finish("content-filter")),
        S.reply(S.text("c"), S.finish("other")),
        S.reply(S.text("d"))
      )
      const finishes = []
      for (let i = 0; i < 4; i++) finishes.push((yield* collect(client.stream(baseRequest()))).at(-1))
      expect(finishes).toEqual([
        { type: "finish", reason: "length", raw: "length" },
        { type: "finish", reason: "content-filter", raw: "content_filter" },
        { type: "finish", reason: "other", raw: "unknown" },
        { type: "finish", reason: "stop", raw: "stop" }
      ])
    })
  )

  it.scoped("invalid JSON arguments still yield a tool call, flagged with the raw text", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(
        S.reply(S.toolCall("call_bad", "read", '{"path": "a.ts"', { chunks: 2 }), S.toolCall("call_empty", "list", ""))
      )
      const events = yield* collect(client.stream(baseRequest()))
      const calls = events.filter((e) => e.type === "tool-call")
      expect(calls[0]).toMatchObject({ id: "call_bad", name: "read", input: {}, inputText: '{"path": "a.ts"' })
      expect(calls[0]?.type === "tool-call" && calls[0].inputError).toMatch(/not valid JSON/)
      expect(calls[1]).toEqual({ type: "tool-call", id: "call_empty", name: "list", input: {}, inputText: "" })
    })
  )
  it.scoped("whole tool calls in one chunk, without index, with decoded-object arguments", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      const chunk = (delta: unknown, finish: string | null = null) =>
        `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
      yield* server.enqueue(
        S.raw(
          chunk({
            role: "assistant",
            content: "",
            tool_calls: [
              { id: "call_x", type: "function", function: { name: "weather", arguments: { city: "Paris" } } },
              { id: "call_y", type: "function", function: { name: "time", arguments: '{"tz":"CET"}' } }
            ]
          }) +
            chunk({}, "tool_calls") +
            "data: [DONE]\n\n"
        )
      )
      const events = yield* collect(client.stream(baseRequest()))
      expect(events.filter((e) => e.type === "tool-call")).toEqual([
        { type: "tool-call", id: "call_x", name: "weather", input: { city: "Paris" }, inputText: '{"city":"Paris"}' },
        { type: "tool-call", id: "call_y", name: "time", input: { tz: "CET" }, inputText: '{"tz":"CET"}' }
      ])
      expect(events.at(-1)).toEqual({ type: "finish", reason: "tool-calls", raw: "tool_calls" })
    })
  )
})

describe("errors", () => {
  it.scoped("429 with Retry-After seconds → retryable ProviderError with the delay", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(S.httpError(429, { retryAfter: "2", code: "rate_limit_exceeded" }))
      const error = yield* failure(client.stream(baseRequest()))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        providerID: "local",
        status: 429,
        retryable: true,
        retryAfterMs: 2000,
        code: "rate_limit_exceeded",
        message: "Rate limit reached, please retry later"
      })
      expect(error._tag === "ProviderError" && error.body).toContain("rate_limit_error")
    })
  )

  it.scoped("retry-after-ms and HTTP-date Retry-After", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      // The TestClock stands at the epoch, so this date is 5 s away.
      yield* server.enqueue(
        S.httpError(429, { headers: { "retry-after-ms": "1500" } }),
        S.httpError(503, { retryAfter: "Thu, 01 Jan 1970 00:00:05 GMT" })
      )
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ retryAfterMs: 1500, retryable: true })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        status: 503,
        retryAfterMs: 5000,
        retryable: true
      })
    })
  )

  it.scoped("503 → retryable; 404 → not retryable", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(S.httpError(503), S.httpError(404, { message: "The model `qwen-test` does not exist" }))
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderError",
        status: 503,
        retryable: true
      })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderError",
        status: 404,
        retryable: false,
        message: "The model `qwen-test` does not exist"
      })
    })
  )

  it.scoped("400 context_length_exceeded → ContextOverflowError", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(S.overflow(), S.httpError(413, { message: "Request Entity Too Large" }))
      const error = yield* failure(client.stream(baseRequest()))
      expect(error).toMatchObject({ _tag: "ContextOverflowError", providerID: "local", status: 400 })
      expect(error.message).toMatch(/maximum context length/)
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "ContextOverflowError", status: 413 })
    })
  )

  it.scoped("401 / 403 → ProviderAuthError", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(S.httpError(401), S.httpError(403))
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderAuthError",
        status: 401,
        message: "Invalid API key provided"
      })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "ProviderAuthError", status: 403 })
    })
  )

  it.scoped("mid-stream error events fail the stream after the output so far", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(
        S.reply(S.text("partial"), S.streamError("overloaded")),
        S.reply(S.text("x"), S.streamError("overflow"))
      )
      const seen: Array<string> = []
      const error = yield* failure(
        client.stream(baseRequest()).pipe(Stream.tap((e) => Effect.sync(() => seen.push(e.type))))
      )
      expect(seen).toEqual(["text-start", "text-delta"])
      expect(error).toMatchObject({ _tag: "ProviderError", retryable: true, code: "overloaded", message: "Overloaded" })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "ContextOverflowError" })
    })
  )

  it.scoped("a body that ends early is a retryable TransportError", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(S.reply(S.text("cut "), S.cut))
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "TransportError", retryable: true })
    })
  )

  it.scoped("a 200 that is not an event stream is an error", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      yield* server.enqueue(
        S.raw(JSON.stringify({ error: { message: "quota exceeded", type: "insufficient_quota" } }), {
          contentType: "application/json"
        }),
        S.raw("<html>proxy</html>", { contentType: "text/html" })
      )
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderError",
        retryable: false,
        message: "quota exceeded"
      })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderError",
        status: 200,
        retryable: false
      })
    })
  )

  it.scoped("connection refused is a retryable TransportError", () =>
    Effect.gen(function* () {
      // A port that was just listening and is now closed.
      const port = yield* Effect.scoped(Effect.map(ScriptedLLMServer.make(), (server) => server.port))
      const client = yield* clientOf({ protocol: "openai-compatible", baseURL: `http://127.0.0.1:${port}/v1` })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "TransportError", retryable: true })
    })
  )
})

describe("interruption", () => {
  // Interrupting the consumer mid-body, through each HTTP client: provider.test.ts ("reading the
  // response body").
  it.scoped("stopping early (take) releases the connection too", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      const gate = S.gate()
      yield* server.enqueue(S.reply(S.text("a", "b"), S.hold(gate), S.text("c")))
      const events = yield* collect(client.stream(baseRequest()).pipe(Stream.take(2)))
      expect(types(events)).toEqual(["text-start", "text-delta"])
      yield* gate.aborted
      expect(yield* (yield* server.awaitRequest(1)).outcome).toBe("aborted")
    })
  )

  it.scoped("a released gate lets the reply finish", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("openai-compatible")
      const gate = S.gate()
      yield* server.enqueue(S.reply(S.text("a"), S.hold(gate), S.text("b")))
      const fiber = yield* Effect.fork(collect(client.stream(baseRequest())))
      yield* gate.reached
      yield* gate.release
      const events = yield* Fiber.join(fiber)
      expect(events.find((e) => e.type === "text-end")).toMatchObject({ text: "ab" })
      expect(events.at(-1)).toMatchObject({ type: "finish", reason: "stop" })
    })
  )
})
