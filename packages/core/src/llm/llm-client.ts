export * as LLMClient from "./llm-client.js"

import { Context, type Stream } from "effect"
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
}

/** The LLM client of the runtime; `yield* LLMClient.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/LLMClient")<Service, Interface>() {}
