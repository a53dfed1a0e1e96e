export * as TestLLM from "./test-llm.js"

/**
 * An in-process `LLMClient` for fast runner tests: no HTTP, no adapters. Each run of
 * `LLMClient.stream` records its request and plays the next queued turn:
 * - an `LLMScript` reply is rendered directly as `LLMEvent`s (in the adapters' ordering: blocks
 *   bracketed, tool calls parsed, usage then finish last); a `hold(gate)` pauses the stream until the
 *   gate is released, and marks the gate aborted if the consumer is interrupted while held;
 * - an `LLMScript` HTTP error / overflow fails with the error an adapter would produce for it;
 * - {@link events} plays exact events, {@link fail} fails with an exact error.
 * A run with no turn left dies (a defect): the test scripted too few turns.
 *
 * ```ts
 * const test = yield* TestLLM.Service
 * yield* test.enqueue(LLMScript.reply(LLMScript.text("Hi")))
 * ```
 */

import { Cause, Context, Effect, Exit, Layer, Stream } from "effect"
import * as LLMClient from "../llm/llm-client.js"
import type { Any as LLMError } from "../llm/llm-error.js"
import { ContextOverflowError } from "../llm/llm-error.js"
import * as LLMEvent from "../llm/llm-event.js"
import type * as LLMRequest from "../llm/llm-request.js"
import * as NativeContinuation from "../llm/native-continuation.js"
import * as ProviderFailure from "../llm/provider-failure.js"
import * as ProviderHttp from "../llm/provider-http.js"
import * as LLMScript from "./llm-script.js"

/** Exact events to emit, as given (no ordering is enforced). */
export interface Events {
  readonly kind: "events"
  readonly events: ReadonlyArray<LLMEvent.Event>
}
/** Fail the stream right away with this error. */
export interface Fail {
  readonly kind: "fail"
  readonly error: LLMError
}

export type Turn = LLMScript.Reply | LLMScript.HttpError | LLMScript.Overflow | Events | Fail

export const events = (...events: ReadonlyArray<LLMEvent.Event>): Events => ({ kind: "events", events })
export const fail = (error: LLMError): Fail => ({ kind: "fail", error })

export type Outcome = "completed" | "failed" | "interrupted"

export interface Call {
  /** 1-based order of the stream runs. */
  readonly index: number
  readonly request: LLMRequest.Request
  /** Resolves when that run ended: completed, failed, or interrupted by its consumer. */
  readonly outcome: Effect.Effect<Outcome>
}

export interface Interface {
  readonly enqueue: (...turns: ReadonlyArray<Turn | LLMScript.Raw>) => Effect.Effect<void>
  readonly calls: Effect.Effect<ReadonlyArray<Call>>
  /** The requests received so far, in order. */
  readonly requests: Effect.Effect<ReadonlyArray<LLMRequest.Request>>
  /** Resolves with the `index`-th call (1-based) once the stream has been run that many times. */
  readonly awaitCall: (index: number) => Effect.Effect<Call>
  readonly remaining: Effect.Effect<number>
}

/** The controls of the TestLLM; `yield* TestLLM.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/testing/TestLLM")<Service, Interface>() {}

const providerID = "test"

/** The events an `LLMScript` reply renders to, with a failure (stream error) or a hold in between. */
type Step = { readonly event: LLMEvent.Event } | { readonly hold: LLMScript.Gate } | { readonly error: LLMError }

const streamError = (part: LLMScript.StreamErrorPart): LLMError => {
  const types: Record<LLMScript.StreamErrorKind, string> = {
    overloaded: "overloaded_error",
    server: "api_error",
    "rate-limit": "rate_limit_error",
    overflow: "invalid_request_error",
    "invalid-request": "invalid_request_error",
    auth: "authentication_error"
  }
  const message = part.message ?? (part.error === "overflow" ? "prompt is too long" : `Scripted ${part.error} error`)
  const payload = { type: "error", error: { type: types[part.error], message } }
  return ProviderFailure.fromStreamError({ providerID, payload, data: JSON.stringify(payload) })
}

const render = (reply: LLMScript.Reply): ReadonlyArray<Step> => {
  const out: Array<Step> = []
  const emit = (event: LLMEvent.Event) => out.push({ event })
  let block = 0
  for (const part of reply.parts) {
    switch (part.kind) {
      case "text": {
        const id = `text-${block++}`
        emit({ type: "text-start", id })
        for (const delta of part.chunks) emit({ type: "text-delta", id, delta })
        emit({ type: "text-end", id, text: part.chunks.join("") })
        break
      }
      case "reasoning": {
        const id = `reasoning-${block++}`
        emit({ type: "reasoning-start", id })
        for (const delta of part.chunks) emit({ type: "reasoning-delta", id, delta })
        emit({
          type: "reasoning-end",
          id,
          text: part.chunks.join(""),
          ...(part.signature === undefined
            ? {}
            : { metadata: { [NativeContinuation.anthropic]: { signature: part.signature } } })
        })
        break
      }
      case "redacted-reasoning": {
        const id = `reasoning-${block++}`
        emit({ type: "reasoning-start", id })
        emit({
          type: "reasoning-end",
          id,
          text: "",
          metadata: { [NativeContinuation.anthropic]: { redactedData: part.data } }
        })
        break
      }
      case "tool-call": {
        emit({ type: "tool-input-start", id: part.id, name: part.name })
        for (const delta of part.chunks) if (delta !== "") emit({ type: "tool-input-delta", id: part.id, delta })
        const text = part.chunks.join("")
        emit({ type: "tool-input-end", id: part.id, text })
        const call = LLMEvent.toolCall(part.id, part.name, text)
        // Only Gemini signs calls, so a call signature is in its namespace.
        emit(
          part.signature === undefined
            ? call
            : { ...call, metadata: { [NativeContinuation.google]: { thoughtSignature: part.signature } } }
        )
        break
      }
      case "stream-error":
        out.push({ error: streamError(part) })
        return out
      case "cut":
        out.push({ error: ProviderHttp.prematureEnd(providerID) })
        return out
      case "hold":
        out.push({ hold: part.gate })
        break
      case "usage":
      case "finish":
        break
    }
  }
  const usage = reply.parts.find((part): part is LLMScript.UsagePart => part.kind === "usage")
  if (usage !== undefined) {
    emit({
      type: "usage",
      tokens: {
        input: usage.input,
        output: usage.output,
        reasoning: usage.reasoning,
        cache: { read: usage.cacheRead, write: usage.cacheWrite }
      }
    })
  }
  emit({ type: "finish", reason: LLMScript.finishOf(reply.parts) })
  return out
}

const failureOf = (turn: LLMScript.HttpError | LLMScript.Overflow): LLMError => {
  if (turn.kind === "overflow") {
    return new ContextOverflowError({
      providerID,
      status: 400,
      message: "prompt is too long: 201234 tokens > 200000 maximum"
    })
  }
  const body = JSON.stringify({
    error: {
      message: turn.message ?? LLMScript.messageOf(turn.status),
      type: turn.type ?? LLMScript.errorTypeOf(turn.status),
      code: turn.code ?? null
    }
  })
  return ProviderFailure.fromResponse({
    providerID,
    status: turn.status,
    headers: { ...(turn.retryAfter === undefined ? {} : { "retry-after": turn.retryAfter }), ...turn.headers },
    body,
    now: Date.now()
  })
}

const holdOn = (gate: LLMScript.Gate): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    gate.markReached()
    void gate.whenReleased.then(() => resume(Effect.void))
  }).pipe(Effect.onInterrupt(() => Effect.sync(() => gate.markAborted())))

const play = (turn: Turn): Stream.Stream<LLMEvent.Event, LLMError> => {
  switch (turn.kind) {
    case "events":
      return Stream.fromIterable(turn.events)
    case "fail":
      return Stream.fail(turn.error)
    case "http-error":
    case "overflow":
      return Stream.fail(failureOf(turn))
    case "reply":
      return Stream.fromIterable(render(turn)).pipe(
        Stream.mapEffect((step): Effect.Effect<ReadonlyArray<LLMEvent.Event>, LLMError> => {
          if ("event" in step) return Effect.succeed([step.event])
          if ("error" in step) return Effect.fail(step.error)
          return Effect.as(holdOn(step.hold), [])
        }),
        Stream.flattenIterables
      )
  }
}

/** A TestLLM: its controls and the `LLMClient` it backs. */
export const make: Effect.Effect<{ readonly controls: Interface; readonly client: LLMClient.Interface }> = Effect.sync(
  () => {
    const queue: Array<Turn | LLMScript.Raw> = []
    const calls: Array<Call> = []
    const arrivals: Array<() => void> = []

    const client: LLMClient.Interface = LLMClient.fromStream((request) =>
      Stream.suspend(() => {
        let settle!: (outcome: Outcome) => void
        const outcome = new Promise<Outcome>((resolve) => (settle = resolve))
        calls.push({ index: calls.length + 1, request, outcome: Effect.promise(() => outcome) })
        for (const wake of arrivals.splice(0)) wake()
        const turn = queue.shift()
        if (turn === undefined) {
          settle("failed")
          return Stream.dieMessage(`TestLLM: no scripted turn left for call #${calls.length}`)
        }
        if (turn.kind === "raw") {
          settle("failed")
          return Stream.dieMessage("TestLLM: a raw turn can only be played by the ScriptedLLMServer")
        }
        return play(turn).pipe(
          Stream.ensuringWith((exit) =>
            Effect.sync(() =>
              settle(
                Exit.isSuccess(exit) ? "completed" : Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "failed"
              )
            )
          )
        )
      })
    )

    const awaitCall = (index: number): Effect.Effect<Call> =>
      Effect.suspend(() => {
        const found = calls[index - 1]
        if (found !== undefined) return Effect.succeed(found)
        return Effect.async<void>((resume) => {
          const wake = () => resume(Effect.void)
          arrivals.push(wake)
          return Effect.sync(() => {
            const at = arrivals.indexOf(wake)
            if (at !== -1) arrivals.splice(at, 1)
          })
        }).pipe(Effect.zipRight(Effect.suspend(() => awaitCall(index))))
      })

    const controls: Interface = {
      enqueue: (...turns) => Effect.sync(() => void queue.push(...turns)),
      calls: Effect.sync(() => [...calls]),
      requests: Effect.sync(() => calls.map((call) => call.request)),
      awaitCall,
      remaining: Effect.sync(() => queue.length)
    }
    return { controls, client }
  }
)

/** Provides `LLMClient.Service` backed by a fresh TestLLM, and its controls as {@link Service}. */
export const layer: Layer.Layer<LLMClient.Service | Service> = Layer.effectContext(
  Effect.map(make, ({ controls, client }) =>
    Context.make(Service, controls).pipe(Context.add(LLMClient.Service, client))
  )
)
