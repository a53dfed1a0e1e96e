import { it } from "@effect/vitest"
import { Effect } from "effect"
import { describe, expect } from "vitest"
import { Gemini } from "../../src/llm/gemini.js"
import type { LLMEvent } from "../../src/llm/llm-event.js"
import { LLMRequest } from "../../src/llm/llm-request.js"
import { Retry } from "../../src/llm/retry.js"
import { LLMScript as S } from "../../src/testing/llm-script.js"
import { baseRequest as base, collect, failure, interruptionAbortsRequest, setup, types } from "./harness.js"

const baseRequest = (overrides: Partial<LLMRequest.Request> = {}) =>
  base({ model: { providerID: "google", modelID: "gemini-2.5-flash" }, ...overrides })

/** The body the scripted server received for `request`. */
const sent = (request: LLMRequest.Request) =>
  Effect.gen(function* () {
    const { server, client } = yield* setup("google")
    yield* server.enqueue(S.reply(S.text("ok")))
    yield* collect(client.stream(request))
    return yield* server.awaitRequest(1)
  })

const readTool: LLMRequest.Tool = {
  name: "read",
  description: "Read a file",
  inputSchema: {
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    properties: { path: { type: "string" }, limit: { type: ["integer", "null"], minimum: 1 } },
    required: ["path"],
    additionalProperties: false
  }
}

describe("request shape", () => {
  it.scoped("endpoint, key header, system instruction, tools, tool config, generation config, options, headers", () =>
    Effect.gen(function* () {
      const system = "AGENT PROMPT\n\n<env>cwd: /repo</env>"
      const request = yield* sent(
        baseRequest({
          system,
          tools: [readTool, { name: "now", description: "The time", inputSchema: { type: "object", properties: {} } }],
          toolChoice: "required",
          generation: { maxOutputTokens: 2048, temperature: 0.2, topP: 0.9 },
          providerOptions: {
            google: {
              generationConfig: { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true }, temperature: 1 },
              safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }],
              contents: "ignored",
              toolConfig: "ignored"
            },
            anthropic: { thinking: { type: "enabled" } }
          },
          headers: { "x-session-id": "ses_1" }
        })
      )
      expect(request.path).toBe("/v1/models/gemini-2.5-flash:streamGenerateContent")
      expect(request.query).toBe("alt=sse")
      expect(request.headers).toMatchObject({
        "x-goog-api-key": "test-key",
        "content-type": "application/json",
        "x-session-id": "ses_1"
      })
      expect(request.headers.authorization).toBeUndefined()
      expect(request.body).toEqual({
        contents: [{ role: "user", parts: [{ text: "Hello" }] }],
        systemInstruction: { parts: [{ text: system }] },
        tools: [
          {
            functionDeclarations: [
              {
                name: "read",
                description: "Read a file",
                parameters: {
                  type: "OBJECT",
                  properties: { path: { type: "STRING" }, limit: { type: "INTEGER", nullable: true, minimum: 1 } },
                  required: ["path"]
                }
              },
              // No arguments: no parameters (Gemini rejects an OBJECT with empty properties).
              { name: "now", description: "The time" }
            ]
          }
        ],
        toolConfig: { functionCallingConfig: { mode: "ANY" } },
        // The options' generationConfig is merged over the Generation Controls.
        generationConfig: {
          maxOutputTokens: 2048,
          temperature: 1,
          topP: 0.9,
          thinkingConfig: { thinkingBudget: 1024, includeThoughts: true }
        },
        safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }]
      })
    })
  )

  it.scoped("tool choice: auto, none, required, a named tool; nothing without tools; no empty keys", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("google")
      const choices: ReadonlyArray<LLMRequest.ToolChoice> = ["auto", "none", "required", { type: "tool", name: "read" }]
      for (const _ of [...choices, "none"]) yield* server.enqueue(S.reply(S.text("ok")))
      for (const toolChoice of choices) yield* collect(client.stream(baseRequest({ tools: [readTool], toolChoice })))
      yield* collect(client.stream(baseRequest({ system: "", toolChoice: "none" })))
      const requests = yield* server.requests
      expect(requests.slice(0, 4).map((request) => request.body.toolConfig)).toEqual([
        { functionCallingConfig: { mode: "AUTO" } },
        { functionCallingConfig: { mode: "NONE" } },
        { functionCallingConfig: { mode: "ANY" } },
        { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["read"] } }
      ])
      expect(requests[4]?.body).toEqual({ contents: [{ role: "user", parts: [{ text: "Hello" }] }] })
    })
  )

  it.scoped("tool calls and results in call order with their names, errors as {error}, the update in that turn", () =>
    Effect.gen(function* () {
      const request = yield* sent(
        baseRequest({
          messages: [
            LLMRequest.user("Read two files"),
            LLMRequest.assistant(
              LLMRequest.text("Reading."),
              LLMRequest.toolCall("call_a", "read", { path: "a" }),
              LLMRequest.toolCall("call_b", "grep", { pattern: "b" })
            ),
            LLMRequest.tool(
              LLMRequest.toolResult("call_b", "grep", "no matches", { isError: true }),
              LLMRequest.toolResult("call_a", "read", "A")
            ),
            LLMRequest.instructionUpdate("AGENTS.md changed: use tabs."),
            LLMRequest.user("Also fix b")
          ]
        })
      )
      expect(request.body.contents).toEqual([
        { role: "user", parts: [{ text: "Read two files" }] },
        {
          role: "model",
          parts: [
            { text: "Reading." },
            // Another model's calls: the first carries the validator-skipping value, never a signature.
            { functionCall: { name: "read", args: { path: "a" } }, thoughtSignature: Gemini.skipSignatureValidation },
            { functionCall: { name: "grep", args: { pattern: "b" } } }
          ]
        },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "read", response: { output: "A" } } },
            { functionResponse: { name: "grep", response: { error: "no matches" } } },
            { text: "<instruction-update>\nAGENTS.md changed: use tabs.\n</instruction-update>" },
            { text: "Also fix b" }
          ]
        }
      ])
    })
  )

  it.scoped("an update before the first prompt opens it; one with no prompt after joins the results' turn", () =>
    Effect.gen(function* () {
      const request = yield* sent(
        baseRequest({
          messages: [
            LLMRequest.instructionUpdate("Date: 2025-01-01"),
            LLMRequest.user("go"),
            LLMRequest.assistant(LLMRequest.toolCall("call_1", "bash", { command: "ls" })),
            LLMRequest.tool(LLMRequest.toolResult("call_1", "bash", "a b")),
            LLMRequest.instructionUpdate("Date: 2025-01-02")
          ]
        })
      )
      expect(request.body.contents[0]).toEqual({
        role: "user",
        parts: [{ text: "<instruction-update>\nDate: 2025-01-01\n</instruction-update>" }, { text: "go" }]
      })
      expect(request.body.contents.at(-1)).toEqual({
        role: "user",
        parts: [
          { functionResponse: { name: "bash", response: { output: "a b" } } },
          { text: "<instruction-update>\nDate: 2025-01-02\n</instruction-update>" }
        ]
      })
    })
  )

  it("encodes Generation Controls and the thinking Model Request Options in generationConfig", () => {
    const body = (modelID: string, request: Partial<LLMRequest.Request>) =>
      Gemini.body({ ...baseRequest(request), model: { providerID: "google", modelID } }).generationConfig
    expect(
      body("gemini-2.5-flash", {
        generation: {
          maxOutputTokens: 1000,
          topK: 40,
          presencePenalty: 0.5,
          frequencyPenalty: 0.25,
          stopSequences: ["a", "b", "c", "d", "e", "f"],
          seed: 7
        },
        options: { reasoningEffort: "high", includeThoughts: true, store: true, serviceTier: "flex" }
      })
    ).toEqual({
      maxOutputTokens: 1000,
      topK: 40,
      presencePenalty: 0.5,
      frequencyPenalty: 0.25,
      stopSequences: ["a", "b", "c", "d", "e"],
      seed: 7,
      thinkingConfig: { thinkingBudget: 16_384, includeThoughts: true }
    })
    // Gemini 3 takes a thinking level, not a budget.
    expect(body("gemini-3-pro-preview", { options: { reasoningEffort: "low" } })).toEqual({
      thinkingConfig: { thinkingLevel: "low" }
    })
    expect(body("gemini-2.5-flash", { options: { thinking: false, thinkingBudget: 900 } })).toEqual({
      thinkingConfig: { thinkingBudget: 0 }
    })
    expect(body("gemini-2.5-flash", { options: { thinkingBudget: 900 } })).toEqual({
      thinkingConfig: { thinkingBudget: 900 }
    })
    expect(body("gemini-2.5-flash", { options: { thinking: true } })).toEqual({
      thinkingConfig: { thinkingBudget: -1 }
    })
    // A thinkingConfig among the provider options replaces the one the options made.
    expect(
      body("gemini-2.5-flash", {
        options: { reasoningEffort: "high" },
        providerOptions: { google: { generationConfig: { thinkingConfig: { thinkingLevel: "high" } } } }
      })
    ).toEqual({ thinkingConfig: { thinkingLevel: "high" } })
    expect(body("gemini-2.5-flash", { options: { store: true } })).toBeUndefined()
  })

  it("the endpoint tolerates a models/ prefix and a trailing slash", () => {
    expect(Gemini.url({ baseURL: "https://generativelanguage.googleapis.com/v1beta/" }, "models/gemini-2.5-pro")).toBe(
      "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
  })
})

describe("thought signatures (Native Continuation Metadata)", () => {
  it.scoped("kept on reasoning and on calls as streamed; sent back natively only when replayable", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("google")
      yield* server.enqueue(
        S.reply(
          S.reasoning(["Let me ", "look."], { signature: "sig-thought" }),
          S.toolCall("call_1", "read", { path: "a.ts" }, { signature: "sig-call" }),
          S.toolCall("call_2", "read", { path: "b.ts" })
        ),
        S.reply(S.text("same model")),
        S.reply(S.text("other model"))
      )
      const events = yield* collect(client.stream(baseRequest({ tools: [readTool] })))
      const reasoning = events.find((e): e is LLMEvent.ReasoningEnd => e.type === "reasoning-end")
      const calls = events.filter((e): e is LLMEvent.ToolCall => e.type === "tool-call")
      expect(reasoning).toEqual({
        type: "reasoning-end",
        id: "reasoning-0",
        text: "Let me look.",
        metadata: { google: { thoughtSignature: "sig-thought" } }
      })
      expect(calls).toEqual([
        {
          type: "tool-call",
          id: "call_1",
          name: "read",
          input: { path: "a.ts" },
          inputText: '{"path":"a.ts"}',
          metadata: { google: { thoughtSignature: "sig-call" } }
        },
        { type: "tool-call", id: "call_2", name: "read", input: { path: "b.ts" }, inputText: '{"path":"b.ts"}' }
      ])

      // The runner records the parts as streamed and marks them replayable for the exact same model.
      const history = (replayable: boolean) => [
        LLMRequest.user("Q"),
        LLMRequest.assistant(
          LLMRequest.reasoning(reasoning!.text, { metadata: reasoning!.metadata!, replayable }),
          ...calls.map((call) =>
            LLMRequest.toolCall(
              call.id,
              call.name,
              call.input,
              call.metadata ? { metadata: call.metadata, replayable } : {}
            )
          )
        ),
        LLMRequest.tool(LLMRequest.toolResult("call_1", "read", "A"), LLMRequest.toolResult("call_2", "read", "B"))
      ]
      yield* collect(client.stream(baseRequest({ messages: history(true) })))
      yield* collect(client.stream(baseRequest({ messages: history(false) })))
      const [, same, other] = yield* server.requests
      expect(same?.body.contents[1]).toEqual({
        role: "model",
        parts: [
          { text: "Let me look.", thought: true, thoughtSignature: "sig-thought" },
          { functionCall: { name: "read", args: { path: "a.ts" } }, thoughtSignature: "sig-call" },
          { functionCall: { name: "read", args: { path: "b.ts" } } }
        ]
      })
      // After a model switch: visible reasoning is ordinary text, opaque signatures are never sent.
      expect(other?.body.contents[1]).toEqual({
        role: "model",
        parts: [
          { text: "Let me look." },
          { functionCall: { name: "read", args: { path: "a.ts" } }, thoughtSignature: Gemini.skipSignatureValidation },
          { functionCall: { name: "read", args: { path: "b.ts" } } }
        ]
      })
      expect(other?.text).not.toContain("sig-thought")
      expect(other?.text).not.toContain("sig-call")
    })
  )

  it.scoped("a signature on a text part or a signature-only part is an empty reasoning block after the text", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("google")
      const frame = (parts: ReadonlyArray<unknown>, finishReason?: string) =>
        `data: ${JSON.stringify({ candidates: [{ content: { role: "model", parts }, ...(finishReason ? { finishReason } : {}) }] })}\r\n\r\n`
      yield* server.enqueue(
        S.raw(
          [
            frame([{ text: "unsigned thought", thought: true }]),
            frame([{ text: "1+1 equals 2.", thoughtSignature: "sig-text" }]),
            frame([{ text: " More." }]),
            frame([{ text: "", thoughtSignature: "sig-last" }], "STOP")
          ].join("")
        ),
        S.reply(S.text("ok"))
      )
      const events = yield* collect(client.stream(baseRequest()))
      expect(events.filter((e) => e.type.endsWith("-end"))).toEqual([
        { type: "reasoning-end", id: "reasoning-0", text: "unsigned thought" },
        { type: "text-end", id: "text-1", text: "1+1 equals 2." },
        { type: "reasoning-end", id: "reasoning-2", text: "", metadata: { google: { thoughtSignature: "sig-text" } } },
        { type: "text-end", id: "text-3", text: " More." },
        { type: "reasoning-end", id: "reasoning-4", text: "", metadata: { google: { thoughtSignature: "sig-last" } } }
      ])
      const parts = events.flatMap((e): ReadonlyArray<LLMRequest.AssistantPart> => {
        if (e.type === "text-end") return [LLMRequest.text(e.text)]
        if (e.type === "reasoning-end")
          return [LLMRequest.reasoning(e.text, { ...(e.metadata ? { metadata: e.metadata } : {}), replayable: true })]
        return []
      })
      yield* collect(
        client.stream(
          baseRequest({ messages: [LLMRequest.user("Q"), LLMRequest.assistant(...parts), LLMRequest.user("N")] })
        )
      )
      expect((yield* server.awaitRequest(2)).body.contents[1].parts).toEqual([
        { text: "unsigned thought", thought: true },
        { text: "1+1 equals 2." },
        { text: "", thoughtSignature: "sig-text" },
        { text: " More." },
        { text: "", thoughtSignature: "sig-last" }
      ])
    })
  )
})

describe("stream decoding", () => {
  it.scoped("thoughts, text, whole calls, usage with thoughts and cache, split across socket writes", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("google", { sliceSize: 7 })
      yield* server.enqueue(
        S.reply(
          S.reasoning(["Plan ", "it"], { signature: "s1" }),
          S.text("Running ", "both ✓"),
          S.toolCall("call_1", "read", { path: "a.ts" }),
          S.toolCall("call_2", "grep", { pattern: "x" }),
          S.usage({ input: 50, output: 70, reasoning: 30, cacheRead: 4000 })
        )
      )
      const events = yield* collect(client.stream(baseRequest()))
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
        "tool-input-end",
        "tool-call",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-end",
        "tool-call",
        "usage",
        "finish"
      ])
      expect(events[7]).toEqual({ type: "text-end", id: "text-1", text: "Running both ✓" })
      expect(events.slice(8, 12)).toEqual([
        { type: "tool-input-start", id: "call_1", name: "read" },
        { type: "tool-input-delta", id: "call_1", delta: '{"path":"a.ts"}' },
        { type: "tool-input-end", id: "call_1", text: '{"path":"a.ts"}' },
        { type: "tool-call", id: "call_1", name: "read", input: { path: "a.ts" }, inputText: '{"path":"a.ts"}' }
      ])
      // promptTokenCount 4050 includes the 4000 cached; thoughts are counted apart from candidates.
      expect(events.at(-2)).toEqual({
        type: "usage",
        tokens: { input: 50, output: 70, reasoning: 30, cache: { read: 4000, write: 0 } }
      })
      expect(events.at(-1)).toEqual({ type: "finish", reason: "tool-calls", raw: "STOP" })
    })
  )

  it.scoped("finish reasons map", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("google")
      yield* server.enqueue(
        S.reply(S.text("a")),
        S.reply(S.text("b"), S.finish("length")),
        S.reply(S.text("c"), S.finish("content-filter")),
        S.reply(S.text("d"), S.finish("other"))
      )
      const finishes = []
      for (let i = 0; i < 4; i++) finishes.push((yield* collect(client.stream(baseRequest()))).at(-1))
      expect(finishes).toEqual([
        { type: "finish", reason: "stop", raw: "STOP" },
        { type: "finish", reason: "length", raw: "MAX_TOKENS" },
        { type: "finish", reason: "content-filter", raw: "SAFETY" },
        { type: "finish", reason: "other", raw: "OTHER" }
      ])
      for (const raw of ["RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"]) {
        expect(Gemini.finishReason(raw, false)).toBe("content-filter")
      }
      expect(Gemini.finishReason("MALFORMED_FUNCTION_CALL", false)).toBe("other")
      expect(Gemini.finishReason("MAX_TOKENS", true)).toBe("length")
    })
  )

  it.scoped("calls without an id get one from the response id, distinct across responses", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("google")
      const body = (responseId: string | undefined) =>
        `data: ${JSON.stringify({
          candidates: [
            {
              content: {
                role: "model",
                parts: [{ functionCall: { name: "read", args: { path: "a" } } }, { functionCall: { name: "now" } }]
              },
              finishReason: "STOP"
            }
          ],
          ...(responseId === undefined ? {} : { responseId })
        })}\r\n\r\n`
      yield* server.enqueue(S.raw(body("r-1")), S.raw(body(undefined)), S.raw(body(undefined)))
      const ids = []
      for (let i = 0; i < 3; i++) {
        const events = yield* collect(client.stream(baseRequest()))
        const calls = events.filter((e): e is LLMEvent.ToolCall => e.type === "tool-call")
        expect(calls[1]).toMatchObject({ name: "now", input: {}, inputText: "" })
        ids.push(...calls.map((call) => call.id))
      }
      expect(ids.slice(0, 2)).toEqual(["call_r-1_0", "call_r-1_1"])
      expect(ids[2]).toMatch(/^call_[0-9a-f]{8}_0$/)
      expect(new Set(ids).size).toBe(6)
    })
  )

  it.scoped("a prompt blocked before generation finishes with content-filter", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("google")
      yield* server.enqueue(
        S.raw(
          `data: ${JSON.stringify({
            promptFeedback: { blockReason: "PROHIBITED_CONTENT" },
            usageMetadata: { promptTokenCount: 12, totalTokenCount: 12 }
          })}\r\n\r\n`
        )
      )
      expect(yield* collect(client.stream(baseRequest()))).toEqual([
        { type: "usage", tokens: { input: 12, output: 0, reasoning: 0, cache: { read: 0, write: 0 } } },
        { type: "finish", reason: "content-filter", raw: "PROHIBITED_CONTENT" }
      ])
    })
  )
})

describe("errors", () => {
  it.scoped("HTTP: 429 with RetryInfo, 503, 500, 400 INVALID_ARGUMENT, a bad key, 401, 403, overflow", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("google")
      yield* server.enqueue(
        S.httpError(429, { retryAfter: "37", message: "You exceeded your current quota." }),
        S.httpError(503),
        S.httpError(500),
        S.httpError(400, { message: "Request contains an invalid argument." }),
        S.httpError(400, { code: "API_KEY_INVALID", message: "API key not valid. Please pass a valid API key." }),
        S.httpError(401),
        S.httpError(403),
        S.overflow()
      )
      const errors = []
      for (let i = 0; i < 8; i++) errors.push(yield* failure(client.stream(baseRequest())))
      expect(errors[0]).toMatchObject({
        _tag: "ProviderError",
        providerID: "google",
        status: 429,
        retryable: true,
        retryAfterMs: 37_000,
        code: "RESOURCE_EXHAUSTED",
        message: "You exceeded your current quota."
      })
      expect(errors[1]).toMatchObject({ _tag: "ProviderError", status: 503, retryable: true, code: "UNAVAILABLE" })
      expect(errors[2]).toMatchObject({ _tag: "ProviderError", status: 500, retryable: true, code: "INTERNAL" })
      expect(errors[3]).toMatchObject({
        _tag: "ProviderError",
        status: 400,
        retryable: false,
        code: "INVALID_ARGUMENT"
      })
      expect(errors[4]).toMatchObject({
        _tag: "ProviderAuthError",
        status: 400,
        message: "API key not valid. Please pass a valid API key."
      })
      expect(errors[5]).toMatchObject({ _tag: "ProviderAuthError", status: 401 })
      expect(errors[6]).toMatchObject({ _tag: "ProviderAuthError", status: 403 })
      expect(errors[7]).toMatchObject({
        _tag: "ContextOverflowError",
        status: 400,
        message: "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576)."
      })
      expect(errors.map(Retry.isRetryable)).toEqual([true, true, true, false, false, false, false, false])
    })
  )

  it.scoped("errors inside the stream", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("google")
      yield* server.enqueue(
        S.reply(S.text("partial"), S.streamError("overloaded")),
        S.reply(S.streamError("rate-limit")),
        S.reply(S.streamError("overflow")),
        S.reply(S.streamError("auth")),
        S.reply(S.streamError("invalid-request", "Function call is missing a thought_signature in functionCall parts."))
      )
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderError",
        status: 503,
        retryable: true,
        code: "UNAVAILABLE"
      })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderError",
        status: 429,
        retryable: true,
        code: "RESOURCE_EXHAUSTED"
      })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "ContextOverflowError" })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "ProviderAuthError", status: 403 })
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({
        _tag: "ProviderError",
        retryable: false,
        message: "Function call is missing a thought_signature in functionCall parts."
      })
    })
  )

  it.scoped("a body that ends before a finish reason is a retryable TransportError", () =>
    Effect.gen(function* () {
      const { server, client } = yield* setup("google")
      yield* server.enqueue(S.reply(S.text("cut"), S.cut))
      expect(yield* failure(client.stream(baseRequest()))).toMatchObject({ _tag: "TransportError", retryable: true })
    })
  )
})

it.scoped("interrupting the consumer aborts the HTTP request", () =>
  Effect.map(interruptionAbortsRequest("google"), (outcome) => expect(outcome).toBe("aborted"))
)
