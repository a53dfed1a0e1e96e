export * as LLMClient from "./llm-client.js"

import { type Chunk, Context, type Effect, Stream } from "effect"
import type * as LLMError from "./llm-error.js"
import type * as LLMEvent from "./llm-event.js"
import type * as LLMRequest from "./llm-request.js"

export interface Interface {
  /**
   * One Physical Attempt: sends `request` when the stream is run and emits its events as they arrive
   * (see `LLMEvent` for the ordering guarantees). Nothing is sent until the stream is consumed, and
   * every run is a new request. Interrupting the consuming fiber (or stopping early, e.g. with
   * `Stream.take`) aborts the HTTP request: the provider sees the connection close.
   * The stream does not retry; see `Retry`.
   */
  readonly stream: (request: LLMRequest.Request) => Stream.Stream<LLMEvent.Event, LLMError.Any>
  /**
   * The same Physical Attempt consumed: each chunk of its events handed to `handle` as it arrives,
   * in order, each after the previous one's `handle` has completed. Resolves once the events end;
   * fails as the stream would. Interrupting it aborts the HTTP request, as with `stream`. A client
   * may run it without a stream (the Provider's do: a Step's call then pays no stream's machinery).
   */
  readonly forEachChunk: <R>(
    request: LLMRequest.Request,
    handle: (chunk: Chunk.Chunk<LLMEvent.Event>) => Effect.Effect<void, never, R>
  ) => Effect.Effect<void, LLMError.Any, R>
}

/** A client of `stream` alone: `forEachChunk` runs the stream. */
export const fromStream = (stream: Interface["stream"]): Interface => ({
  stream,
  forEachChunk: (request, handle) => Stream.runForEachChunk(stream(request), handle)
})

/** The LLM client of the runtime; `yield* LLMClient.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/LLMClient")<Service, Interface>() {}
