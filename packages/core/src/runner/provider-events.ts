export * as ProviderEvents from "./provider-events.js"

import type { Identifier } from "@opencode-ai/schema"
import { Data } from "effect"
import type { LLMEvent } from "../llm/llm-event.js"
import { StepEvent } from "./step-event.js"

/**
 * What one provider event of a Step's stream becomes:
 * - `Durable`: a durable Session event of the Step. The Step runner appends the consecutive durable
 *   events of one provider chunk as one transaction; `call` is a tool call whose settlement starts
 *   only once this event (`tool.called`) has committed;
 * - `Live`: a live-only fragment (a text, reasoning or tool-input delta) for the live bus, published
 *   once what came before it has committed; its `data` lacks the stamp (time, session, message);
 * - `Usage`, `Finish`: the provider's token usage and finish reason, kept for the Step's `step.ended`.
 */
export type Mapped = Data.TaggedEnum<{
  Durable: { readonly event: StepEvent.StepEvent; readonly call?: LLMEvent.ToolCall }
  Live: { readonly type: string; readonly data: Readonly<Record<string, unknown>> }
  Usage: { readonly tokens: LLMEvent.Usage["tokens"] }
  Finish: { readonly reason: string }
}>

export const Mapped = Data.taggedEnum<Mapped>()

/** A block the Step started but has not ended, with the event that ends it with its partial value. */
export interface OpenBlock {
  readonly id: string
  readonly ended: StepEvent.StepEvent
}

/** The mapping of one Step's provider stream (stateful: it tracks the text and reasoning blocks still open). */
export interface Mapper {
  /** What `event` becomes. Updates the open-block bookkeeping, so it is called once per event, in stream order. */
  readonly map: (event: LLMEvent.Event) => Mapped
  /**
   * The blocks started and not yet ended, in start order, each with its `*.ended` event carrying the
   * text streamed so far (an interrupted or failed Step keeps its partial output this way).
   */
  readonly open: () => ReadonlyArray<OpenBlock>
  /** Forgets an open block once its closing event has committed. */
  readonly closed: (id: string) => void
}

/**
 * The mapping for the Step whose assistant message is `assistantMessageID`:
 *
 * ```
 * text-start / reasoning-start      ─► Durable text.started / reasoning.started (the block opens)
 * text-delta / reasoning-delta      ─► Live    text.delta / reasoning.delta (accumulated in the open block)
 * text-end / reasoning-end          ─► Durable text.ended / reasoning.ended (with Native Continuation Metadata)
 * tool-input-start / -delta / -end  ─► Durable tool.input.started, Live tool.input.delta, Durable tool.input.ended
 * tool-call                         ─► Durable tool.called (durable before it runs, its metadata in
 *                                      provider.metadata), with the call to settle
 * usage / finish                    ─► Usage / Finish
 * ```
 *
 * Pure apart from the open-block bookkeeping: nothing is appended or published here.
 */
export const mapper = (assistantMessageID: typeof Identifier.SessionMessageID.Type): Mapper => {
  const open = new Map<string, { readonly kind: "text" | "reasoning"; text: string }>()
  const durable = <T extends StepEvent.StepEvent["type"]>(type: T, data: StepEvent.Data<T>, call?: LLMEvent.ToolCall) =>
    Mapped.Durable({ event: StepEvent.make(type, data), ...(call === undefined ? {} : { call }) })
  const live = (type: string, data: Readonly<Record<string, unknown>>) => Mapped.Live({ type, data })

  const map = (event: LLMEvent.Event): Mapped => {
    switch (event.type) {
      case "text-start":
        open.set(event.id, { kind: "text", text: "" })
        return durable("session.next.text.started", { assistantMessageID, textID: event.id })
      case "text-delta": {
        const block = open.get(event.id)
        if (block) block.text += event.delta
        return live("session.next.text.delta", { textID: event.id, delta: event.delta })
      }
      case "text-end":
        open.delete(event.id)
        return durable("session.next.text.ended", { assistantMessageID, textID: event.id, text: event.text })
      case "reasoning-start":
        open.set(event.id, { kind: "reasoning", text: "" })
        return durable("session.next.reasoning.started", { assistantMessageID, reasoningID: event.id })
      case "reasoning-delta": {
        const block = open.get(event.id)
        if (block) block.text += event.delta
        return live("session.next.reasoning.delta", { reasoningID: event.id, delta: event.delta })
      }
      case "reasoning-end":
        open.delete(event.id)
        return durable("session.next.reasoning.ended", {
          assistantMessageID,
          reasoningID: event.id,
          text: event.text,
          ...(event.metadata !== undefined ? { providerMetadata: event.metadata as never } : {})
        })
      case "tool-input-start":
        return durable("session.next.tool.input.started", { assistantMessageID, callID: event.id, name: event.name })
      case "tool-input-delta":
        return live("session.next.tool.input.delta", { callID: event.id, delta: event.delta })
      case "tool-input-end":
        return durable("session.next.tool.input.ended", { assistantMessageID, callID: event.id, text: event.text })
      case "tool-call":
        // Durable before execution: after a crash, a call with no settlement is known to be stranded.
        return durable(
          "session.next.tool.called",
          {
            assistantMessageID,
            callID: event.id,
            tool: event.name,
            input: event.input,
            // The call's Native Continuation Metadata (a Gemini thoughtSignature) stays with the call.
            provider: {
              executed: false,
              ...(event.metadata === undefined ? {} : { metadata: event.metadata as never })
            }
          },
          event
        )
      case "usage":
        return Mapped.Usage({ tokens: event.tokens })
      case "finish":
        return Mapped.Finish({ reason: event.reason })
    }
  }

  return {
    map,
    open: () =>
      [...open].map(([id, block]) => ({
        id,
        ended:
          block.kind === "text"
            ? StepEvent.make("session.next.text.ended", { assistantMessageID, textID: id, text: block.text })
            : StepEvent.make("session.next.reasoning.ended", { assistantMessageID, reasoningID: id, text: block.text })
      })),
    closed: (id) => void open.delete(id)
  }
}
