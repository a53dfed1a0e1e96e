import type { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Chunk, Effect, Either, Fiber, Layer, type Scope, Stream } from "effect"
import type { LLMClient } from "../../src/llm/llm-client.js"
import type { LLMError } from "../../src/llm/llm-error.js"
import type { LLMEvent } from "../../src/llm/llm-event.js"
import { LLMRequest } from "../../src/llm/llm-request.js"
import { Provider } from "../../src/llm/provider.js"
import { LLMScript } from "../../src/testing/llm-script.js"
import { ScriptedLLMServer } from "../../src/testing/scripted-llm-server.js"

/** A scripted server and a real adapter of `protocol` pointed at it (node:http client). */
export const setup = (
  protocol: Provider.Protocol,
  options: ScriptedLLMServer.Options = {}
): Effect.Effect<
  { readonly server: ScriptedLLMServer.ScriptedLLMServer; readonly client: LLMClient.Interface },
  never,
  Scope.Scope
> =>
  Effect.gen(function* () {
    const server = yield* ScriptedLLMServer.make(options)
    const client = yield* clientOf(server.settings(protocol))
    return { server, client }
  })

/**
 * A real adapter over a node HttpClient that lives as long as the current Scope (the client's agent or
 * dispatcher must outlive `Provider.make`, or the streams run on a destroyed one).
 */
export const clientOf = (
  settings: Provider.Settings,
  layer: Layer.Layer<HttpClient.HttpClient> = NodeHttpClient.layer
): Effect.Effect<LLMClient.Interface, never, Scope.Scope> =>
  Effect.flatMap(Layer.build(layer), (context) => Effect.provide(Provider.make(settings), context))

export const collect = <E>(stream: Stream.Stream<LLMEvent.Event, E>) =>
  Stream.runCollect(stream).pipe(Effect.map(Chunk.toArray))

/** The events, or the error the stream failed with. */
export const outcome = (stream: Stream.Stream<LLMEvent.Event, LLMError.Any>) =>
  Effect.either(collect(stream)).pipe(Effect.map((either) => (Either.isLeft(either) ? either.left : either.right)))

export const failure = (stream: Stream.Stream<LLMEvent.Event, LLMError.Any>) => Effect.flip(collect(stream))

export const baseRequest = (overrides: Partial<LLMRequest.Request> = {}): LLMRequest.Request => ({
  model: { providerID: "local", modelID: "qwen-test" },
  system: "You are a careful assistant.",
  messages: [LLMRequest.user("Hello")],
  ...overrides
})

/** The event types in order, for compact sequence assertions. */
export const types = (events: ReadonlyArray<LLMEvent.Event>) => events.map((event) => event.type)

/**
 * The adapter of `protocol` stops its HTTP request when its consumer is interrupted mid-stream: the
 * scripted server sees the request aborted while it holds the rest of the reply.
 */
export const interruptionAbortsRequest = (protocol: Provider.Protocol) =>
  Effect.gen(function* () {
    const server = yield* ScriptedLLMServer.make()
    const client = yield* clientOf(server.settings(protocol), NodeHttpClient.layerUndici)
    const gate = LLMScript.gate()
    yield* server.enqueue(LLMScript.reply(LLMScript.reasoning("hmm"), LLMScript.hold(gate), LLMScript.text("never")))
    const fiber = yield* Effect.fork(Stream.runDrain(client.stream(baseRequest())))
    yield* gate.reached
    yield* Fiber.interrupt(fiber)
    yield* gate.aborted
    return yield* (yield* server.awaitRequest(1)).outcome
  })
