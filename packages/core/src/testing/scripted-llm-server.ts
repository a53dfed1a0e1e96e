export * as ScriptedLLMServer from "./scripted-llm-server.js"

/**
 * A real loopback HTTP server (`node:http` on 127.0.0.1, an ephemeral port) that plays an
 * `LLMScript` in all three wire protocols:
 * - `POST …/chat/completions`: OpenAI chat completions SSE (`data: {chunk}` … `data: [DONE]`);
 * - `POST …/messages`: Anthropic Messages SSE (`event: message_start` … `event: message_stop`);
 * - `POST …/models/{model}:streamGenerateContent`: Gemini SSE (`data: {GenerateContentResponse}`
 *   frames separated by CRLF, the last one with the `finishReason` and the full `usageMetadata`; no
 *   end marker). Errors use Google's `{error: {code, message, status}}` shape.
 *
 * Every request is recorded (method, path, lower-cased headers, raw and parsed JSON body) before its
 * turn is taken from the queue, in arrival order. A request with no turn left gets a 400 whose message
 * says so (not retryable, so a runner fails fast instead of retrying into the void). Other paths get a
 * 404. Each recorded request's {@link RecordedRequest.outcome} tells whether the response was
 * completed or the client went away first: this is how tests observe that interruption aborted the
 * HTTP request.
 *
 * Requests of the hidden title agent (their system text contains `TitlePrompt.system`) have a lane
 * of their own: they are recorded in {@link ScriptedLLMServer.titleRequests} (numbered apart) and
 * take turns from {@link ScriptedLLMServer.enqueueTitle}'s queue, else `Options.title`, else get the
 * same 400. So the title request the runtime makes in the background after a session's first Step
 * never takes a turn scripted for a Step, nor shifts the Steps' request numbers.
 *
 * The server lives in the Scope that {@link make} runs in: closing it drops open connections (held
 * replies included) and stops listening.
 */

import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as Sse from "@effect/experimental/Sse"
import { Effect, type Scope } from "effect"
import type { ConfigInfo } from "../config/config-info.js"
import type * as Provider from "../llm/provider.js"
import * as TitlePrompt from "../prompt/title-prompt.js"
import * as LLMScript from "./llm-script.js"

export type Outcome = "completed" | "aborted"

export interface RecordedRequest {
  /** 1-based arrival order. */
  readonly index: number
  /** Which connection carried it: 1 for the server's first connection, 2 for the next, and so on. */
  readonly connection: number
  readonly method: string
  /** The path, e.g. `/v1/chat/completions`. */
  readonly path: string
  /** The query string without its `?` (e.g. `alt=sse`), empty when there is none. */
  readonly query: string
  /** Lower-cased header names; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
  /** The parsed JSON body, or undefined when the body is not JSON. */
  readonly body: any
  /** Resolves when the response was fully sent, or the client disconnected before that. */
  readonly outcome: Effect.Effect<Outcome>
}

export interface Options {
  /**
   * Write every frame in slices of this many characters (a separate socket write each, with a turn of
   * the event loop between), to exercise SSE decoding across chunk boundaries. Default: one write per
   * frame.
   */
  readonly sliceSize?: number
  /**
   * Write the frames of a reply together, as one socket write (up to a `hold` or a `cut`, which
   * flush what came before them), so that the client reads the answer as one chunk batch, as from a
   * provider whose whole answer arrives at once. Default false: one write per frame.
   */
  readonly coalesce?: boolean
  /**
   * Keep every request (its text and parsed body) for `requests` and `awaitRequest`. Default true; a
   * long benchmark turns it off so that the heap does not grow with each request (`requests` then
   * stays empty and `awaitRequest` never resolves).
   */
  readonly record?: boolean
  /**
   * Answers a request when the queue holds no turn: a function of the recorded request (its parsed
   * body included, also when `record` is false), so a long test can play a model that reacts to what
   * it is sent (for example one with a context limit that answers too-large requests with an
   * overflow). Returning undefined answers as an empty queue does.
   */
  readonly respond?: (request: RecordedRequest) => LLMScript.Turn | undefined
  /** Like `respond`, for title requests when the title queue is empty (see the module doc). */
  readonly title?: (request: RecordedRequest) => LLMScript.Turn | undefined
}

export interface ScriptedLLMServer {
  /** The base URL for adapters: `http://127.0.0.1:<port>/v1`. */
  readonly url: string
  readonly port: number
  /** Appends turns to the queue; each request takes the next one. */
  readonly enqueue: (...turns: ReadonlyArray<LLMScript.Turn>) => Effect.Effect<void>
  /** The requests received so far, in arrival order. */
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Resolves with the `index`-th request (1-based) once it has arrived. */
  readonly awaitRequest: (index: number) => Effect.Effect<RecordedRequest>
  /** How many queued turns no request has taken yet. */
  readonly remaining: Effect.Effect<number>
  /** Appends turns to the title lane's queue; each title request takes the next one. */
  readonly enqueueTitle: (...turns: ReadonlyArray<LLMScript.Turn>) => Effect.Effect<void>
  /** The title requests received so far, in arrival order (their `index` counts title requests only). */
  readonly titleRequests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Resolves with the `index`-th title request (1-based) once it has arrived. */
  readonly awaitTitleRequest: (index: number) => Effect.Effect<RecordedRequest>
  /** Provider settings pointing at this server (`apiKey: "test-key"`). */
  readonly settings: (protocol: Provider.Protocol) => Provider.Settings
}

type Protocol = Provider.Protocol

// ---------------------------------------------------------------------------------------------------
// Rendering a turn

type Action = { readonly frame: string } | { readonly hold: LLMScript.Gate } | { readonly cut: true }

const frame = (event: string | undefined, data: unknown): { readonly frame: string } => ({
  frame: Sse.encoder.write({
    _tag: "Event",
    event: event ?? "message",
    id: undefined,
    data: typeof data === "string" ? data : JSON.stringify(data)
  })
})

/** A Gemini SSE frame: one `data:` line, CRLF line endings as Google sends them. */
const geminiFrame = (data: unknown): { readonly frame: string } => ({ frame: `data: ${JSON.stringify(data)}\r\n\r\n` })

/** Google's canonical status name for an HTTP status. */
const googleStatus = (status: number): string => {
  if (status === 400) return "INVALID_ARGUMENT"
  if (status === 401) return "UNAUTHENTICATED"
  if (status === 403) return "PERMISSION_DENIED"
  if (status === 404) return "NOT_FOUND"
  if (status === 429) return "RESOURCE_EXHAUSTED"
  if (status === 503) return "UNAVAILABLE"
  if (status === 504) return "DEADLINE_EXCEEDED"
  if (status >= 500) return "INTERNAL"
  return "FAILED_PRECONDITION"
}

/** Gemini's context-window overflow wording. */
const geminiOverflow = "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576)."

const geminiStreamError: Record<LLMScript.StreamErrorKind, { code: number; message: string }> = {
  overloaded: { code: 503, message: "The model is overloaded. Please try again later." },
  server: { code: 500, message: "An internal error has occurred. Please retry or report in the docs." },
  "rate-limit": { code: 429, message: "Resource has been exhausted (e.g. check quota)." },
  overflow: { code: 400, message: geminiOverflow },
  "invalid-request": { code: 400, message: "Request contains an invalid argument." },
  auth: { code: 403, message: "Method doesn't allow unregistered callers." }
}

const streamErrorPayload = (protocol: Protocol, part: LLMScript.StreamErrorPart) => {
  if (protocol === "google") {
    const entry = geminiStreamError[part.error]
    return { error: { code: entry.code, message: part.message ?? entry.message, status: googleStatus(entry.code) } }
  }
  const table: Record<
    LLMScript.StreamErrorKind,
    { openai: [string, string | null]; anthropic: string; message: string }
  > = {
    overloaded: { openai: ["server_error", "overloaded"], anthropic: "overloaded_error", message: "Overloaded" },
    server: { openai: ["server_error", null], anthropic: "api_error", message: "Internal server error" },
    "rate-limit": {
      openai: ["rate_limit_error", "rate_limit_exceeded"],
      anthropic: "rate_limit_error",
      message: "Rate limit exceeded"
    },
    overflow: {
      openai: ["invalid_request_error", "context_length_exceeded"],
      anthropic: "invalid_request_error",
      message:
        protocol === "anthropic"
          ? "prompt is too long: 201234 tokens > 200000 maximum"
          : "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens."
    },
    "invalid-request": {
      openai: ["invalid_request_error", null],
      anthropic: "invalid_request_error",
      message: "Invalid request"
    },
    auth: {
      openai: ["authentication_error", "invalid_api_key"],
      anthropic: "authentication_error",
      message: "Invalid API key"
    }
  }
  const entry = table[part.error]
  const message = part.message ?? entry.message
  return protocol === "anthropic"
    ? { type: "error", error: { type: entry.anthropic, message } }
    : { error: { message, type: entry.openai[0], param: null, code: entry.openai[1] } }
}

const openaiFinish: Record<string, string> = {
  stop: "stop",
  length: "length",
  "tool-calls": "tool_calls",
  "content-filter": "content_filter",
  other: "unknown"
}

const renderOpenAI = (reply: LLMScript.Reply, request: RecordedRequest, id: string): ReadonlyArray<Action> => {
  const model = typeof request.body?.model === "string" ? request.body.model : "scripted"
  const created = Math.floor(Date.now() / 1000)
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) =>
    frame(undefined, {
      id,
      object: "chat.completion.chunk",
      created,
      model,
      system_fingerprint: "fp_scripted",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...extra
    })
  const out: Array<Action> = [chunk({ role: "assistant", content: "" })]
  let toolIndex = 0
  for (const part of reply.parts) {
    switch (part.kind) {
      case "text":
        for (const text of part.chunks) out.push(chunk({ content: text }))
        break
      case "reasoning":
        for (const text of part.chunks) out.push(chunk({ reasoning_content: text }))
        break
      case "tool-call": {
        const index = toolIndex++
        out.push(
          chunk({
            tool_calls: [{ index, id: part.id, type: "function", function: { name: part.name, arguments: "" } }]
          })
        )
        for (const args of part.chunks) out.push(chunk({ tool_calls: [{ index, function: { arguments: args } }] }))
        break
      }
      case "stream-error":
        out.push(frame(undefined, streamErrorPayload("openai-compatible", part)))
        return out
      case "hold":
        out.push({ hold: part.gate })
        break
      case "cut":
        out.push({ cut: true })
        return out
      case "redacted-reasoning":
      case "usage":
      case "finish":
        break
    }
  }
  out.push(chunk({}, openaiFinish[LLMScript.finishOf(reply.parts)] ?? "stop"))
  const usage = reply.parts.find((part): part is LLMScript.UsagePart => part.kind === "usage")
  if (usage !== undefined && request.body?.stream_options?.include_usage === true) {
    const prompt = usage.input + usage.cacheRead
    const completion = usage.output + usage.reasoning
    out.push(
      frame(undefined, {
        id,
        object: "chat.completion.chunk",
        created,
        model,
        choices: [],
        usage: {
          prompt_tokens: prompt,
          completion_tokens: completion,
          total_tokens: prompt + completion,
          prompt_tokens_details: { cached_tokens: usage.cacheRead, audio_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: usage.reasoning, audio_tokens: 0 }
        }
      })
    )
  }
  out.push({ frame: "data: [DONE]\n\n" })
  return out
}

const anthropicStop: Record<string, string> = {
  stop: "end_turn",
  length: "max_tokens",
  "tool-calls": "tool_use",
  "content-filter": "refusal",
  other: "pause_turn"
}

const renderAnthropic = (reply: LLMScript.Reply, request: RecordedRequest, id: string): ReadonlyArray<Action> => {
  const model = typeof request.body?.model === "string" ? request.body.model : "scripted"
  const usage = reply.parts.find((part): part is LLMScript.UsagePart => part.kind === "usage")
  const event = (type: string, data: Record<string, unknown>) => frame(type, { type, ...data })
  const out: Array<Action> = [
    event("message_start", {
      message: {
        id,
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: usage?.input ?? 0,
          cache_creation_input_tokens: usage?.cacheWrite ?? 0,
          cache_read_input_tokens: usage?.cacheRead ?? 0,
          output_tokens: 1
        }
      }
    }),
    event("ping", {})
  ]
  let index = 0
  const block = (start: Record<string, unknown>, deltas: ReadonlyArray<Record<string, unknown>>) => {
    const at = index++
    out.push(event("content_block_start", { index: at, content_block: start }))
    for (const delta of deltas) out.push(event("content_block_delta", { index: at, delta }))
    out.push(event("content_block_stop", { index: at }))
  }
  for (const part of reply.parts) {
    switch (part.kind) {
      case "text":
        block(
          { type: "text", text: "" },
          part.chunks.map((text) => ({ type: "text_delta", text }))
        )
        break
      case "reasoning":
        block({ type: "thinking", thinking: "", signature: "" }, [
          ...part.chunks.map((thinking) => ({ type: "thinking_delta", thinking })),
          ...(part.signature === undefined ? [] : [{ type: "signature_delta", signature: part.signature }])
        ])
        break
      case "redacted-reasoning":
        block({ type: "redacted_thinking", data: part.data }, [])
        break
      case "tool-call":
        block(
          { type: "tool_use", id: part.id, name: part.name, input: {} },
          part.chunks.map((partial_json) => ({ type: "input_json_delta", partial_json }))
        )
        break
      case "stream-error":
        out.push(frame("error", streamErrorPayload("anthropic", part)))
        return out
      case "hold":
        out.push({ hold: part.gate })
        break
      case "cut":
        out.push({ cut: true })
        return out
      case "usage":
      case "finish":
        break
    }
  }
  out.push(
    event("message_delta", {
      delta: { stop_reason: anthropicStop[LLMScript.finishOf(reply.parts)] ?? "end_turn", stop_sequence: null },
      usage: { output_tokens: usage === undefined ? 0 : usage.output + usage.reasoning }
    }),
    event("message_stop", {})
  )
  return out
}

const geminiFinish: Record<string, string> = {
  stop: "STOP",
  length: "MAX_TOKENS",
  "tool-calls": "STOP",
  "content-filter": "SAFETY",
  other: "OTHER"
}

/**
 * A script in Gemini's stream: one chunk per text or reasoning chunk (a reasoning part's signature on
 * its last chunk), one per tool call (the whole call, with its id and signature), then a last chunk
 * with an empty text part, the `finishReason` and the full `usageMetadata`. Every earlier chunk
 * carries the prompt counts only, as Gemini does.
 */
const renderGemini = (reply: LLMScript.Reply, request: RecordedRequest, id: string): ReadonlyArray<Action> => {
  const model = /\/models\/([^/:]+):/.exec(request.path)?.[1] ?? "scripted"
  const usage = reply.parts.find((part): part is LLMScript.UsagePart => part.kind === "usage")
  const prompt = usage === undefined ? 0 : usage.input + usage.cacheRead
  const promptUsage = {
    promptTokenCount: prompt,
    totalTokenCount: prompt,
    ...(usage === undefined || usage.cacheRead === 0 ? {} : { cachedContentTokenCount: usage.cacheRead })
  }
  const chunk = (parts: ReadonlyArray<Record<string, unknown>>, finish?: string) =>
    geminiFrame({
      candidates: [
        { content: { parts, role: "model" }, ...(finish === undefined ? {} : { finishReason: finish }), index: 0 }
      ],
      usageMetadata:
        finish === undefined || usage === undefined
          ? promptUsage
          : {
              ...promptUsage,
              candidatesTokenCount: usage.output,
              totalTokenCount: prompt + usage.output + usage.reasoning,
              ...(usage.reasoning === 0 ? {} : { thoughtsTokenCount: usage.reasoning })
            },
      modelVersion: model,
      responseId: id
    })
  const out: Array<Action> = []
  for (const part of reply.parts) {
    switch (part.kind) {
      case "text":
        for (const text of part.chunks) out.push(chunk([{ text }]))
        break
      case "reasoning":
        part.chunks.forEach((text, index) => {
          const last = index === part.chunks.length - 1
          out.push(
            chunk([
              {
                text,
                thought: true,
                ...(last && part.signature !== undefined ? { thoughtSignature: part.signature } : {})
              }
            ])
          )
        })
        break
      case "tool-call": {
        const text = part.chunks.join("")
        let args: unknown
        try {
          args = text === "" ? {} : JSON.parse(text)
        } catch {
          // Gemini always sends parsed arguments: unparseable script input becomes none.
          args = {}
        }
        out.push(
          chunk([
            {
              functionCall: { id: part.id, name: part.name, args },
              ...(part.signature === undefined ? {} : { thoughtSignature: part.signature })
            }
          ])
        )
        break
      }
      case "stream-error":
        out.push(geminiFrame(streamErrorPayload("google", part)))
        return out
      case "hold":
        out.push({ hold: part.gate })
        break
      case "cut":
        out.push({ cut: true })
        return out
      case "redacted-reasoning":
      case "usage":
      case "finish":
        break
    }
  }
  out.push(chunk([{ text: "" }], geminiFinish[LLMScript.finishOf(reply.parts)] ?? "STOP"))
  return out
}

const errorBody = (protocol: Protocol, type: string, message: string, code: string | undefined, status = 400) => {
  if (protocol === "google") return { error: { code: status, message, status: googleStatus(status) } }
  return protocol === "anthropic"
    ? { type: "error", error: { type, message } }
    : { error: { message, type, param: null, code: code ?? null } }
}

// ---------------------------------------------------------------------------------------------------
// The server

const protocolOfPath = (path: string): Protocol | undefined =>
  path.endsWith("/chat/completions")
    ? "openai-compatible"
    : path.endsWith("/messages")
      ? "anthropic"
      : /\/models\/[^/]+:streamGenerateContent$/.test(path)
        ? "google"
        : undefined

const flattenHeaders = (headers: http.IncomingHttpHeaders): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value
  }
  return out
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * An `opencode.json` document whose one provider (`scripted`, with one model `m` that calls tools)
 * is the scripted server at `baseURL`, in the given wire protocol (default OpenAI-compatible), and
 * whose default model is `scripted/m`. `input` declares the model's input kinds (`modalities.input`,
 * e.g. `["text", "image"]`); without it the model takes text only.
 */
export const config = (
  baseURL: string,
  options: { readonly protocol?: Provider.Protocol; readonly input?: ReadonlyArray<string> } = {}
): ConfigInfo.Info =>
  ({
    provider: {
      scripted: {
        npm:
          options.protocol === "anthropic"
            ? "@ai-sdk/anthropic"
            : options.protocol === "google"
              ? "@ai-sdk/google"
              : "@ai-sdk/openai-compatible",
        name: "Scripted",
        options: { baseURL, apiKey: "test-key" },
        models: {
          m: {
            name: "Scripted",
            tool_call: true,
            limit: { context: 100_000, output: 1000 },
            ...(options.input === undefined ? {} : { modalities: { input: options.input, output: ["text"] } })
          }
        }
      }
    },
    model: "scripted/m"
  }) as ConfigInfo.Info

/** The system text of a chat request body in either protocol (empty when it has none). */
const systemText = (body: any): string => {
  const texts = (value: unknown): string =>
    typeof value === "string"
      ? value
      : Array.isArray(value)
        ? value.map((part) => (typeof part?.text === "string" ? part.text : "")).join("\n")
        : ""
  if (body === null || typeof body !== "object") return ""
  if (body.system !== undefined) return texts(body.system)
  // Gemini: `systemInstruction: {parts: [{text}]}`.
  if (body.systemInstruction !== undefined) return texts(body.systemInstruction.parts)
  const messages: Array<any> = Array.isArray(body.messages) ? body.messages : []
  return messages
    .filter((message) => message?.role === "system")
    .map((message) => texts(message.content))
    .join("\n")
}

/** Whether a request body is the hidden title agent's (its system text holds the built-in title prompt). */
export const isTitleRequest = (body: unknown): boolean => systemText(body).includes(TitlePrompt.system)

/** Starts a server in the current Scope. */
export const make = (options: Options = {}): Effect.Effect<ScriptedLLMServer, never, Scope.Scope> =>
  Effect.gen(function* () {
    // The Steps' (and every other request's) lane, and the title agent's.
    const lane = () => ({
      queue: [] as Array<LLMScript.Turn>,
      recorded: [] as Array<RecordedRequest>,
      arrivals: [] as Array<() => void>,
      counter: 0
    })
    const main = lane()
    const titles = lane()
    const { queue } = main
    // Connections are numbered as they are accepted.
    const connections = new WeakMap<object, number>()
    let accepted = 0

    const write = async (res: http.ServerResponse, text: string) => {
      const size = options.sliceSize
      if (size === undefined || size <= 0) {
        res.write(text)
        await nextTick()
        return
      }
      for (let i = 0; i < text.length && !res.destroyed; i += size) {
        res.write(text.slice(i, i + size))
        await nextTick()
      }
    }

    const play = async (
      protocol: Protocol,
      turn: LLMScript.Turn,
      request: RecordedRequest,
      res: http.ServerResponse,
      closed: Promise<void>
    ) => {
      switch (turn.kind) {
        case "http-error": {
          const type = turn.type ?? LLMScript.errorTypeOf(turn.status)
          const message = turn.message ?? LLMScript.messageOf(turn.status)
          if (protocol === "google") {
            // Google says how long to wait in a RetryInfo detail, not a header; `code` is an ErrorInfo reason.
            const seconds = turn.retryAfter !== undefined && /^\d+(?:\.\d+)?$/.test(turn.retryAfter)
            const details = [
              ...(turn.code === undefined
                ? []
                : [
                    { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: turn.code, domain: "googleapis.com" }
                  ]),
              ...(seconds
                ? [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${turn.retryAfter}s` }]
                : [])
            ]
            res.writeHead(turn.status, {
              "content-type": "application/json; charset=UTF-8",
              ...(turn.retryAfter === undefined || seconds ? {} : { "retry-after": turn.retryAfter }),
              ...turn.headers
            })
            const body = errorBody(protocol, type, message, turn.code, turn.status)
            res.end(JSON.stringify(details.length === 0 ? body : { error: { ...body.error, details } }))
            return
          }
          res.writeHead(turn.status, {
            "content-type": "application/json",
            ...(turn.retryAfter === undefined ? {} : { "retry-after": turn.retryAfter }),
            ...turn.headers
          })
          res.end(JSON.stringify(errorBody(protocol, type, message, turn.code)))
          return
        }
        case "overflow": {
          res.writeHead(400, { "content-type": "application/json" })
          res.end(
            JSON.stringify(
              protocol === "google"
                ? errorBody(protocol, "INVALID_ARGUMENT", geminiOverflow, undefined, 400)
                : protocol === "anthropic"
                  ? errorBody(
                      protocol,
                      "invalid_request_error",
                      "prompt is too long: 201234 tokens > 200000 maximum",
                      undefined
                    )
                  : errorBody(
                      protocol,
                      "invalid_request_error",
                      "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
                      "context_length_exceeded"
                    )
            )
          )
          return
        }
        case "raw": {
          res.writeHead(turn.status, { "content-type": turn.contentType, ...turn.headers })
          await write(res, turn.body)
          res.end()
          return
        }
        case "reply": {
          res.writeHead(200, {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            connection: "keep-alive"
          })
          res.flushHeaders()
          const id =
            protocol === "anthropic"
              ? `msg_scripted_${request.index}`
              : protocol === "google"
                ? `resp-scripted-${request.index}`
                : `chatcmpl-scripted-${request.index}`
          const actions =
            protocol === "anthropic"
              ? renderAnthropic(turn, request, id)
              : protocol === "google"
                ? renderGemini(turn, request, id)
                : renderOpenAI(turn, request, id)
          // Frames not written yet (with `coalesce`): written before a hold, a cut or the end.
          let pending = ""
          const flush = async () => {
            if (pending === "") return
            const text = pending
            pending = ""
            await write(res, text)
          }
          for (const action of actions) {
            if (res.destroyed) return
            if ("frame" in action) {
              if (options.coalesce === true) pending += action.frame
              else await write(res, action.frame)
              continue
            }
            await flush()
            if (res.destroyed) return
            if ("hold" in action) {
              const gate = action.hold
              gate.markReached()
              const outcome = await Promise.race([
                gate.whenReleased.then(() => "released" as const),
                closed.then(() => "closed" as const)
              ])
              if (outcome === "closed") {
                gate.markAborted()
                return
              }
            } else {
              res.destroy()
              return
            }
          }
          await flush()
          res.end()
          return
        }
      }
    }

    const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
      const chunks: Array<Buffer> = []
      for await (const chunk of req) chunks.push(chunk as Buffer)
      const text = Buffer.concat(chunks).toString("utf8")
      let settle!: (outcome: Outcome) => void
      const outcomePromise = new Promise<Outcome>((resolve) => (settle = resolve))
      // `close` fires when the response is done or the connection is gone, whichever comes first.
      const closed = new Promise<void>((resolve) => res.on("close", () => resolve()))
      res.on("close", () => settle(res.writableFinished ? "completed" : "aborted"))
      const [path = "/", ...query] = (req.url ?? "/").split("?")
      const body = parseJson(text)
      const current = isTitleRequest(body) ? titles : main
      const request: RecordedRequest = {
        index: ++current.counter,
        connection: connections.get(req.socket) ?? 0,
        method: req.method ?? "GET",
        path,
        query: query.join("?"),
        headers: flattenHeaders(req.headers),
        text,
        body,
        outcome: Effect.promise(() => outcomePromise)
      }
      if (options.record !== false) current.recorded.push(request)
      for (const wake of current.arrivals.splice(0)) wake()

      const protocol = protocolOfPath(path)
      if (req.method !== "POST" || protocol === undefined) {
        res.writeHead(404, { "content-type": "application/json" })
        res.end(
          JSON.stringify({
            error: { message: `ScriptedLLMServer: no route for ${req.method} ${path}`, type: "not_found_error" }
          })
        )
        return
      }
      const turn =
        current === titles
          ? (titles.queue.shift() ?? options.title?.(request))
          : (queue.shift() ?? options.respond?.(request))
      if (turn === undefined) {
        res.writeHead(400, { "content-type": "application/json" })
        res.end(
          JSON.stringify(
            errorBody(
              protocol,
              "invalid_request_error",
              `ScriptedLLMServer: no scripted turn left for ${current === titles ? "title " : ""}request #${request.index} (${path})`,
              "script_exhausted"
            )
          )
        )
        return
      }
      await play(protocol, turn, request, res, closed)
    }

    const server = http.createServer((req, res) => {
      handle(req, res).catch((error) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" })
        res.end(JSON.stringify({ error: { message: `ScriptedLLMServer failed: ${String(error)}`, type: "api_error" } }))
      })
    })

    server.on("connection", (socket) => connections.set(socket, ++accepted))

    const port = yield* Effect.acquireRelease(
      Effect.async<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )

    const url = `http://127.0.0.1:${port}/v1`

    const awaitIn =
      (of: ReturnType<typeof lane>) =>
      (index: number): Effect.Effect<RecordedRequest> =>
        Effect.suspend(() => {
          const found = of.recorded[index - 1]
          if (found !== undefined) return Effect.succeed(found)
          return Effect.async<void>((resume) => {
            const wake = () => resume(Effect.void)
            of.arrivals.push(wake)
            return Effect.sync(() => {
              const at = of.arrivals.indexOf(wake)
              if (at !== -1) of.arrivals.splice(at, 1)
            })
          }).pipe(Effect.zipRight(Effect.suspend(() => awaitIn(of)(index))))
        })

    return {
      url,
      port,
      enqueue: (...turns) => Effect.sync(() => void queue.push(...turns)),
      requests: Effect.sync(() => [...main.recorded]),
      awaitRequest: awaitIn(main),
      remaining: Effect.sync(() => queue.length),
      enqueueTitle: (...turns) => Effect.sync(() => void titles.queue.push(...turns)),
      titleRequests: Effect.sync(() => [...titles.recorded]),
      awaitTitleRequest: awaitIn(titles),
      settings: (protocol) => ({ protocol, baseURL: url, apiKey: "test-key" })
    } satisfies ScriptedLLMServer
  })
