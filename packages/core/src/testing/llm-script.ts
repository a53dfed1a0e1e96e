export * as LLMScript from "./llm-script.js"

/**
 * Provider-neutral scripts for fake LLMs. A script is a queue of {@link Turn}s, one per provider
 * request: a streamed {@link reply} made of {@link Part}s, an HTTP error, or a raw body. The same
 * script drives both the `ScriptedLLMServer` (which renders it in the OpenAI-compatible, Anthropic or
 * Gemini wire format, whichever endpoint was called) and the in-process `TestLLM` (which renders it
 * directly as `LLMEvent`s), so a runner test can switch between them without rewriting its script.
 *
 * ```ts
 * const gate = LLMScript.gate()
 * server.enqueue(
 *   LLMScript.reply(LLMScript.reasoning("Let me look"), LLMScript.toolCall("call_1", "read", { path: "a.ts" })),
 *   LLMScript.httpError(429, { retryAfter: "1" }),
 *   LLMScript.reply(LLMScript.text("Hel", "lo"), LLMScript.hold(gate), LLMScript.text(" world")),
 * )
 * yield* gate.reached   // the third request is streaming and paused
 * yield* gate.release   // or interrupt the consumer and `yield* gate.aborted`
 * ```
 */

import { Effect } from "effect"
import type * as LLMEvent from "../llm/llm-event.js"

// ---------------------------------------------------------------------------------------------------
// Gate

/**
 * A one-shot pause point inside a scripted reply. When the stream gets there, {@link Gate.reached}
 * resolves and the stream holds (the HTTP response stays open) until {@link Gate.release}, or until the
 * consumer goes away, which resolves {@link Gate.aborted}.
 */
export class Gate {
  #reached!: () => void
  #released!: () => void
  #aborted!: () => void
  readonly #reachedPromise = new Promise<void>((resolve) => (this.#reached = resolve))
  /** @internal resolves when the test releases the gate. */
  readonly whenReleased = new Promise<void>((resolve) => (this.#released = resolve))
  readonly #abortedPromise = new Promise<void>((resolve) => (this.#aborted = resolve))
  #isReached = false
  #isAborted = false

  /** Resolves once a stream has reached the gate (so the request arrived and was partly answered). */
  readonly reached: Effect.Effect<void> = Effect.promise(() => this.#reachedPromise)
  /** Lets the held stream continue. Releasing before the stream gets there makes the gate a no-op. */
  readonly release: Effect.Effect<void> = Effect.sync(() => this.#released())
  /** Resolves when the consumer disconnected (server) or was interrupted (TestLLM) while held. */
  readonly aborted: Effect.Effect<void> = Effect.promise(() => this.#abortedPromise)

  get isReached(): boolean {
    return this.#isReached
  }
  get isAborted(): boolean {
    return this.#isAborted
  }
  /** @internal */
  markReached(): void {
    this.#isReached = true
    this.#reached()
  }
  /** @internal */
  markAborted(): void {
    this.#isAborted = true
    this.#aborted()
  }
}

export const gate = (): Gate => new Gate()

// ---------------------------------------------------------------------------------------------------
// Parts of a streamed reply

export interface TextPart {
  readonly kind: "text"
  readonly chunks: ReadonlyArray<string>
}
export interface ReasoningPart {
  readonly kind: "reasoning"
  readonly chunks: ReadonlyArray<string>
  /**
   * Sent as an Anthropic `signature_delta`, or as the `thoughtSignature` of the last Gemini thought
   * part; not representable in chat completions.
   */
  readonly signature?: string
}
/** An Anthropic `redacted_thinking` block; chat completions and Gemini skip it. */
export interface RedactedReasoningPart {
  readonly kind: "redacted-reasoning"
  readonly data: string
}
export interface ToolCallPart {
  readonly kind: "tool-call"
  readonly id: string
  readonly name: string
  /** The argument text as streamed, chunk by chunk (Gemini sends the parsed whole at once). */
  readonly chunks: ReadonlyArray<string>
  /** Gemini's `thoughtSignature` on the `functionCall` part; the other protocols have none. */
  readonly signature?: string
}
/** Disjoint counts, as in `LLMEvent.Usage`; the server encodes them the way each provider reports them. */
export interface UsagePart {
  readonly kind: "usage"
  readonly input: number
  readonly output: number
  readonly reasoning: number
  readonly cacheRead: number
  readonly cacheWrite: number
}
export interface FinishPart {
  readonly kind: "finish"
  readonly reason: LLMEvent.FinishReason
}
export type StreamErrorKind = "overloaded" | "server" | "rate-limit" | "overflow" | "invalid-request" | "auth"
/** An error event inside the stream (after whatever came before it); the response ends there. */
export interface StreamErrorPart {
  readonly kind: "stream-error"
  readonly error: StreamErrorKind
  readonly message?: string
}
export interface HoldPart {
  readonly kind: "hold"
  readonly gate: Gate
}
/** Ends the response abruptly (no finish, no `[DONE]` / `message_stop`). */
export interface CutPart {
  readonly kind: "cut"
}

export type Part =
  | TextPart
  | ReasoningPart
  | RedactedReasoningPart
  | ToolCallPart
  | UsagePart
  | FinishPart
  | StreamErrorPart
  | HoldPart
  | CutPart

export const text = (...chunks: ReadonlyArray<string>): TextPart => ({ kind: "text", chunks })

export const reasoning = (
  chunks: string | ReadonlyArray<string>,
  options: { readonly signature?: string } = {}
): ReasoningPart => ({ kind: "reasoning", chunks: typeof chunks === "string" ? [chunks] : chunks, ...options })

export const redactedReasoning = (data: string): RedactedReasoningPart => ({ kind: "redacted-reasoning", data })

/** Splits `text` into `count` nearly equal chunks (at least one). */
export const split = (text: string, count: number): ReadonlyArray<string> => {
  const n = Math.max(1, Math.min(count, text.length))
  const size = Math.ceil(text.length / n)
  const out: Array<string> = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out.length === 0 ? [""] : out
}

/**
 * A tool call. `input` is an object (JSON-encoded, then streamed in `chunks` pieces, default 3) or the
 * exact argument text to stream (e.g. invalid JSON). `signature` is a Gemini call signature.
 */
export const toolCall = (
  id: string,
  name: string,
  input: Readonly<Record<string, unknown>> | string,
  options: { readonly chunks?: number; readonly signature?: string } = {}
): ToolCallPart => ({
  kind: "tool-call",
  id,
  name,
  chunks: split(typeof input === "string" ? input : JSON.stringify(input), options.chunks ?? 3),
  ...(options.signature === undefined ? {} : { signature: options.signature })
})

export const usage = (tokens: {
  readonly input: number
  readonly output: number
  readonly reasoning?: number
  readonly cacheRead?: number
  readonly cacheWrite?: number
}): UsagePart => ({
  kind: "usage",
  input: tokens.input,
  output: tokens.output,
  reasoning: tokens.reasoning ?? 0,
  cacheRead: tokens.cacheRead ?? 0,
  cacheWrite: tokens.cacheWrite ?? 0
})

/** The finish reason; by default a reply finishes with `tool-calls` when it has tool calls, else `stop`. */
export const finish = (reason: LLMEvent.FinishReason): FinishPart => ({ kind: "finish", reason })

export const streamError = (error: StreamErrorKind, message?: string): StreamErrorPart => ({
  kind: "stream-error",
  error,
  ...(message === undefined ? {} : { message })
})

export const hold = (gate: Gate): HoldPart => ({ kind: "hold", gate })

export const cut: CutPart = { kind: "cut" }

// ---------------------------------------------------------------------------------------------------
// Turns

/** A streamed 200 response. */
export interface Reply {
  readonly kind: "reply"
  readonly parts: ReadonlyArray<Part>
}

/**
 * A non-2xx JSON error response in the protocol's error shape. `retryAfter` is sent as `retry-after`
 * verbatim (seconds or an HTTP date).
 */
export interface HttpError {
  readonly kind: "http-error"
  readonly status: number
  readonly message?: string
  /** The provider error type (`rate_limit_error`, …); defaulted from the status. */
  readonly type?: string
  /** OpenAI's `code` (`context_length_exceeded`, …). */
  readonly code?: string
  readonly retryAfter?: string
  readonly headers?: Readonly<Record<string, string>>
}

/** A context-window overflow error (HTTP 400) in the protocol's real wording. */
export interface Overflow {
  readonly kind: "overflow"
}

/** An exact response (e.g. a captured transcript); `TestLLM` cannot play it. */
export interface Raw {
  readonly kind: "raw"
  readonly body: string
  readonly status: number
  readonly contentType: string
  readonly headers?: Readonly<Record<string, string>>
}

export type Turn = Reply | HttpError | Overflow | Raw

export const reply = (...parts: ReadonlyArray<Part>): Reply => ({ kind: "reply", parts })

export const httpError = (status: number, options: Omit<HttpError, "kind" | "status"> = {}): HttpError => ({
  kind: "http-error",
  status,
  ...options
})

export const overflow = (): Overflow => ({ kind: "overflow" })

export const raw = (
  body: string,
  options: {
    readonly status?: number
    readonly contentType?: string
    readonly headers?: Readonly<Record<string, string>>
  } = {}
): Raw => ({
  kind: "raw",
  body,
  status: options.status ?? 200,
  contentType: options.contentType ?? "text/event-stream",
  ...(options.headers === undefined ? {} : { headers: options.headers })
})

// ---------------------------------------------------------------------------------------------------
// Shared defaults for renderers

/** The finish reason a reply ends with. */
export const finishOf = (parts: ReadonlyArray<Part>): LLMEvent.FinishReason => {
  for (const part of parts) if (part.kind === "finish") return part.reason
  return parts.some((part) => part.kind === "tool-call") ? "tool-calls" : "stop"
}

/** The provider error type an HTTP status implies, when the script names none. */
export const errorTypeOf = (status: number): string => {
  if (status === 400 || status === 422) return "invalid_request_error"
  if (status === 401) return "authentication_error"
  if (status === 403) return "permission_error"
  if (status === 404) return "not_found_error"
  if (status === 413) return "request_too_large"
  if (status === 429) return "rate_limit_error"
  if (status === 503 || status === 529) return "overloaded_error"
  return "api_error"
}

export const messageOf = (status: number): string => {
  if (status === 401) return "Invalid API key provided"
  if (status === 403) return "Your API key does not have permission to use this model"
  if (status === 429) return "Rate limit reached, please retry later"
  if (status === 503 || status === 529) return "The service is overloaded, please retry later"
  if (status >= 500) return "Internal server error"
  return `Request failed with status ${status}`
}
