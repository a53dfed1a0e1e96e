export * as ProviderHttp from "./provider-http.js"

/**
 * The HTTP and SSE plumbing the protocol adapters share: POST a JSON body, turn an error response
 * into a typed failure, decode the event stream with `@effect/experimental` `Sse`, and drive a
 * protocol {@link Decoder} over it.
 *
 * Interruption: the request is aborted when the stream ends before the response did, or when its
 * consumer is interrupted. A complete response is read to the end of its body (briefly, see
 * {@link tailGrace}) so that its connection is reused.
 */

import * as Sse from "@effect/experimental/Sse"
import { HttpClient, HttpClientError, HttpClientRequest, type HttpClientResponse } from "@effect/platform"
import { Chunk, Clock, Duration, Effect, Exit, Fiber, identity, Option, Runtime, Scope, Stream } from "effect"
import { WallClock } from "../clock/wall-clock.js"
import { Traced } from "../observability/traced.js"
import type * as LLMClient from "./llm-client.js"
import { type Any as LLMError, ProviderError, TransportError } from "./llm-error.js"
import type * as LLMEvent from "./llm-event.js"
import type * as LLMRequest from "./llm-request.js"
import * as ProviderFailure from "./provider-failure.js"
import * as RequestJson from "./request-json.js"

export interface Exchange {
  readonly providerID: string
  readonly url: string
  /** Sent as given (names are case-insensitive; later sources should already have won). */
  readonly headers: Readonly<Record<string, string>>
  /** Sent as JSON (see RequestJson). */
  readonly body: unknown
  /**
   * The body's field holding the conversation, made incrementally from the last body sent (see
   * RequestJson): only when its items are lowered through a LoweringMemo, so the same objects again.
   */
  readonly listKey?: string
}

/** Header sources merged in order, later ones winning, compared case-insensitively (names lower-cased). */
export const mergeHeaders = (
  ...sources: ReadonlyArray<Readonly<Record<string, string | undefined>> | undefined>
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const source of sources) {
    if (source === undefined) continue
    for (const [name, value] of Object.entries(source)) {
      if (value !== undefined) out[name.toLowerCase()] = value
    }
  }
  return out
}

/** `baseURL` + `/path`, with exactly one slash between them. */
export const join = (baseURL: string, path: string): string =>
  `${baseURL.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`

const transport = (providerID: string, error: HttpClientError.HttpClientError): TransportError =>
  new TransportError({
    providerID,
    message: `${error.message}${error.cause instanceof Error ? `: ${error.cause.message}` : ""}`,
    retryable: !(error._tag === "RequestError" && (error.reason === "InvalidUrl" || error.reason === "Encode"))
  })

const readText = (providerID: string, response: HttpClientResponse.HttpClientResponse) =>
  response.text.pipe(Effect.mapError((error) => transport(providerID, error)))

/** What a decoder makes of one SSE event (or of the end of the body). */
export interface Step {
  readonly events: ReadonlyArray<LLMEvent.Event>
  /** The response is complete: nothing after this event is decoded (see {@link stream}). */
  readonly done?: boolean
  /** Fail the stream after emitting `events`. */
  readonly error?: LLMError
}

/** A protocol's stateful reading of one response. A fresh one is made for every run of the stream. */
export interface Decoder {
  readonly event: (event: Sse.Event) => Step
  /** Called once when the body ended or an event said `done`: flushes, or fails a premature end. */
  readonly end: () => Step
}

/**
 * How long the rest of a body may take to end once its last event said the response is complete.
 * Reading a body to its end lets the connection go back to the pool (an abandoned body makes the
 * HTTP client drop its socket, and with it a TLS session); a provider that keeps the body open
 * longer is cut off.
 */
export const tailGrace = Duration.millis(250)

/** The start of a response: a non-2xx or non-event-stream one as its typed failure. */
const checked = (providerID: string, response: HttpClientResponse.HttpClientResponse) =>
  Effect.gen(function* () {
    if (response.status < 200 || response.status > 299) {
      const body = yield* readText(providerID, response).pipe(Effect.orElseSucceed(() => ""))
      const now = yield* Clock.currentTimeMillis
      return yield* ProviderFailure.fromResponse({
        providerID,
        status: response.status,
        headers: response.headers,
        body,
        now
      })
    }
    const contentType = response.headers["content-type"] ?? ""
    if (!contentType.toLowerCase().includes("text/event-stream")) {
      const body = yield* readText(providerID, response)
      let payload: unknown
      try {
        payload = JSON.parse(body)
      } catch {
        payload = undefined
      }
      if (typeof payload === "object" && payload !== null && "error" in payload) {
        return yield* ProviderFailure.fromStreamError({ providerID, payload, data: body })
      }
      return yield* new ProviderError({
        providerID,
        message: `Expected an event stream, got ${contentType === "" ? "no content type" : contentType}`,
        status: response.status,
        retryable: false,
        body: body.slice(0, ProviderFailure.maxBodyLength)
      })
    }
    return response
  })

/** The events of an opened Physical Attempt, a chunk at a time: fails with `None` at their end. */
export type Pull = Effect.Effect<Chunk.Chunk<LLMEvent.Event>, Option.Option<LLMError>>

/** The span of one Physical Attempt, e.g. `OpenAICompatible.stream` with the provider and model. */
export interface AttemptSpan {
  readonly name: string
  readonly attributes: Readonly<Record<string, unknown>>
}

/**
 * An adapter: a protocol over HTTP. `open` is one Physical Attempt set up in the caller's scope, as
 * {@link open} has it; `stream` runs it as a stream, as `LLMClient` has it. The Provider composes its
 * routing and metrics over `open`, so that a provider request runs as one stream.
 */
export interface Adapter extends LLMClient.Interface {
  readonly open: (request: LLMRequest.Request) => Effect.Effect<Pull, LLMError, Scope.Scope>
}

/**
 * Hands each chunk of `pull` to `handle`, in order, until the pull ends (`None`); fails with the
 * pull's failure. A loop of effects: no stream runs.
 */
export const forEachChunk = <R>(
  pull: Pull,
  handle: (chunk: Chunk.Chunk<LLMEvent.Event>) => Effect.Effect<void, never, R>
): Effect.Effect<void, LLMError, R> => {
  const loop: Effect.Effect<void, LLMError, R> = Effect.matchEffect(pull, {
    onFailure: (end) => (end._tag === "None" ? Effect.void : Effect.fail(end.value)),
    onSuccess: (chunk) => Effect.zipRight(handle(chunk), loop)
  })
  return loop
}

/**
 * The adapter whose attempts `open` sets up: its `stream` sends the request when the stream runs and
 * aborts it when the stream ends early; its `forEachChunk` does the same in a scope of its own.
 */
export const adapter = (open: Adapter["open"]): Adapter => ({
  open,
  stream: (request) => Stream.unwrapScoped(Effect.map(open(request), Stream.repeatEffectChunkOption)),
  forEachChunk: (request, handle) => Effect.scoped(Effect.flatMap(open(request), (pull) => forEachChunk(pull, handle)))
})

/**
 * Sends the exchange, in the caller's scope, and answers the pull of a fresh decoder's (from `make`)
 * events over the SSE events of its response. A non-2xx response fails with the classified error
 * ({@link ProviderFailure.fromResponse}); a 2xx response that is not an event stream fails too (with
 * the error it carries, when it is one).
 *
 * When an event says the response is complete, its events and the decoder's `end()` come at once;
 * what the body still holds is read but not decoded (a failure there is ignored), so that the
 * connection is reused, and the request is aborted if the body has not ended {@link tailGrace} later.
 * A failing step fails the pull right after its events. The request is aborted when the scope closes
 * before its response ended, including when the consumer is interrupted. `span`, where spans are
 * observed ({@link Traced.observed}), covers the scope, and the HTTP request's span is its child.
 */
export const open = (
  client: HttpClient.HttpClient,
  exchange: Exchange,
  make: () => Decoder,
  span: AttemptSpan
): Effect.Effect<Pull, LLMError, Scope.Scope> => {
  const { providerID } = exchange
  const request = HttpClientRequest.post(exchange.url).pipe(
    HttpClientRequest.setHeaders(exchange.headers),
    HttpClientRequest.bodyUint8Array(RequestJson.encode(exchange.body, exchange.listKey), "application/json")
  )
  // No trace headers (`traceparent`, `b3`) towards a third-party provider. The request lives in a
  // scope of its own: closing it aborts the request (a no-op once the response is complete).
  const scoped = HttpClient.withScope(HttpClient.withTracerPropagation(client, false))
  // Unobserved, the HTTP request makes no span either: the platform's client would record its
  // headers and URL into one for every request.
  const opened = (observed: boolean) =>
    Effect.gen(function* () {
      const requestScope = yield* Scope.make()
      yield* Effect.addFinalizer((exit) => Scope.close(requestScope, exit))
      const response = yield* scoped.execute(request).pipe(
        Scope.extend(requestScope),
        observed ? identity : Effect.withTracerEnabled(false),
        Effect.mapError((error) => transport(providerID, error)),
        Effect.flatMap((response) => checked(providerID, response))
      )
      // The bound on the rest of a complete body: a fiber started only once the response is complete.
      const runtime = yield* Effect.runtime<never>()
      let cutoff: Fiber.RuntimeFiber<void> | undefined
      yield* Effect.addFinalizer(() => (cutoff === undefined ? Effect.void : Fiber.interrupt(cutoff)))
      // Read a chunk at a time; closing the request's scope aborts a body still being read.
      const read = bodyReader(response)
      const decoder = make()
      const text = new TextDecoder()
      // The SSE events the parser found in the bytes fed so far (a `retry:` field means nothing to a
      // POST's stream: it is skipped).
      let parsed: Array<Sse.Event> = []
      const parser = Sse.makeParser((event) => {
        if (event._tag === "Event") parsed.push(event)
      })
      // The response is complete: the rest of the body is read but not decoded.
      let done = false
      // A failure to raise once the events before it are out.
      let failure: LLMError | undefined
      let finished = false

      /** The events of one step; a failing one also stops the body (after its events). */
      const take = (out: Array<LLMEvent.Event>, step: Step): boolean => {
        out.push(...step.events)
        if (step.error === undefined) return true
        failure = step.error
        return false
      }
      /**
       * Adds to `out` the events of the bytes just read (each SSE event through the decoder, in order,
       * until one completes the response or fails); answers the parser's error, if any.
       */
      const decode = (out: Array<LLMEvent.Event>, bytes: Uint8Array): unknown => {
        const error = parser.feed(text.decode(bytes, { stream: true }))
        const events = parsed
        parsed = []
        for (const event of events) {
          const step = decoder.event(event)
          if (!take(out, step)) break
          if (step.done !== true) continue
          done = true
          // On the wall clock: a TestClock nobody advances must not keep the request open for ever.
          cutoff = Runtime.runFork(runtime)(
            Effect.zipRight(WallClock.sleep(tailGrace), Scope.close(requestScope, Exit.void))
          )
          take(out, decoder.end())
          break
        }
        return error
      }
      /** The body ended (or failed) before any event said the response was complete. */
      const ended = (error: Option.Option<HttpClientError.HttpClientError>) => {
        if (Option.isSome(error)) return Effect.fail(Option.some(transport(providerID, error.value)))
        finished = true
        const out: Array<LLMEvent.Event> = []
        take(out, decoder.end())
        return Effect.succeed(Chunk.unsafeFromArray(out))
      }
      // One stage, pulled a body chunk at a time; chunks pass through whole (no per-event effect), so a
      // consumer sees the events of one SSE event together. What is left of a complete response only
      // matters for reusing its connection: a failure there (a reset instead of a clean end, or the
      // cut-off) is not the response's.
      const pull: Effect.Effect<Chunk.Chunk<LLMEvent.Event>, Option.Option<LLMError>> = Effect.suspend(() => {
        if (failure !== undefined) return Effect.fail(Option.some(failure))
        if (finished) return Effect.fail(Option.none())
        return Effect.matchEffect(read, {
          onFailure: (error) => (done ? Effect.fail(Option.none()) : ended(Option.some(error))),
          onSuccess: (bytes) => {
            if (bytes === undefined) return done ? Effect.fail(Option.none()) : ended(Option.none())
            const out: Array<LLMEvent.Event> = []
            if (done || failure !== undefined) return Effect.succeed(Chunk.empty())
            const error = decode(out, bytes)
            // An event larger than the parser takes is a broken provider: a defect, as the SSE decoder has it.
            if (error !== undefined && !done && failure === undefined) return Effect.die(error)
            return Effect.succeed(Chunk.unsafeFromArray(out))
          }
        })
      })
      return pull
    })
  return Effect.withFiberRuntime((fiber) =>
    Traced.observed(fiber)
      ? Effect.flatMap(Effect.makeSpanScoped(span.name, { attributes: span.attributes }), (made) =>
          Effect.withParentSpan(opened(true), made)
        )
      : opened(false)
  )
}

/** Whether `value` can be read with `for await`. */
const isAsyncIterable = (value: unknown): value is AsyncIterable<Uint8Array> =>
  typeof value === "object" && value !== null && Symbol.asyncIterator in value

/**
 * A response body read a chunk at a time: the next chunk, or `undefined` once the body has ended;
 * fails with the body's error as a `ResponseError`. It reads the body stream of the platform's client
 * where the response keeps it (undici's `ResponseData.body`, node:http's `IncomingMessage`, fetch's
 * `Response.body`): a promise per chunk, where a pull of the response's `stream` runs a Stream stage
 * (about 250 Effect operations for a short body). Any other response is read through its `stream`.
 * A read waiting for a body that is aborted (its request's scope closed) fails.
 */
const bodyReader = (
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<Uint8Array | undefined, HttpClientError.HttpClientError> => {
  const source = (response as { readonly source?: unknown }).source
  const iterable = isAsyncIterable(source)
    ? source
    : isAsyncIterable((source as { readonly body?: unknown } | undefined)?.body)
      ? (source as { readonly body: AsyncIterable<Uint8Array> }).body
      : Stream.toAsyncIterable(response.stream)
  const iterator = iterable[Symbol.asyncIterator]()
  return Effect.tryPromise({
    try: () => iterator.next(),
    catch: (cause) =>
      HttpClientError.isHttpClientError(cause)
        ? cause
        : new HttpClientError.ResponseError({ request: response.request, response, reason: "Decode", cause })
  }).pipe(Effect.map((next) => (next.done === true ? undefined : next.value)))
}

/** The body ended before the provider said the response was complete (retryable). */
export const prematureEnd = (providerID: string): TransportError =>
  new TransportError({
    providerID,
    message: "The provider stream ended before the response was complete",
    retryable: true
  })

/** The JSON of an SSE event's data, or a non-retryable TransportError naming the protocol. */
export const parseData = (
  providerID: string,
  event: Sse.Event
): { readonly json: unknown } | { readonly error: LLMError } => {
  try {
    return { json: JSON.parse(event.data) }
  } catch {
    return {
      error: new TransportError({
        providerID,
        message: `The provider sent an event that is not JSON: ${event.data.slice(0, 200)}`,
        retryable: false
      })
    }
  }
}

// Narrowing helpers for provider JSON (cheaper than a Schema decode per chunk, and tolerant of the
// extra fields providers add).

export const record = (value: unknown): Readonly<Record<string, unknown>> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined

export const string = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

export const number = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined

export const array = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])
