export * as SseFraming from "./sse-framing.js"

import * as Sse from "@effect/experimental/Sse"
import { EventStream } from "@opencode-ai/protocol"
import { Cause, Option } from "effect"

/*
 * The SSE wire format of both event streams (see `EventStream` in protocol):
 *
 *   id: 7                                      (only on streams with ids: the durable seq)
 *   event: session.next.text.ended
 *   data: {"id":"evt_…","type":"session.next.text.ended","durable":{…},"data":{…}}
 *                                              (blank line ends the frame)
 *   : heartbeat                                (a comment: every SSE parser skips it)
 *
 *   event: effect/httpapi/stream/failure       (only as the last frame of a stream that failed)
 *   data: [{"_tag":"Die","defect":{"_tag":"SlowConsumerError","message":"…"}}]
 */

/**
 * One event frame. `data` must be a single line (compact JSON is). A frame whose data is one non-empty
 * line and whose event is not `message` (every frame the streams send: a replay writes thousands) is
 * built directly, byte for byte what the SSE encoder writes for it; any other goes through the encoder.
 */
export const event = (frame: {
  readonly id?: string | undefined
  readonly event: string
  readonly data: string
}): string =>
  frame.data === "" || frame.event === "message" || frame.data.includes("\n")
    ? Sse.encoder.write({ _tag: "Event", id: frame.id, event: frame.event, data: frame.data })
    : `${frame.id === undefined ? "" : `id: ${frame.id}\n`}event: ${frame.event}\ndata: ${frame.data}\n\n`

/** A comment line: ignored by clients, it keeps proxies and idle-timeouts from closing the stream. */
export const comment = (text: string): string => `: ${text}\n\n`

/** The frame of an envelope: `event:` is its type, `data:` the envelope itself. */
export const envelope = (value: { readonly type: string }, id?: string): string =>
  event({ id, event: value.type, data: JSON.stringify(value) })

/**
 * The terminal failure frame of `cause`. A stream declares no typed failures, so whatever ended it is
 * reported as a `Die`: a tagged failure with its `_tag` and `message` (e.g. `SlowConsumerError`), any
 * other defect as an opaque internal error (its details are logged, not sent).
 */
export const failure = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.failureOption(cause)
  const failure: EventStream.Failure = Option.isSome(error)
    ? [{ _tag: "Die", defect: describe(error.value) }]
    : Cause.isInterruptedOnly(cause)
      ? [{ _tag: "Interrupt", fiberId: null }]
      : [{ _tag: "Die", defect: { _tag: "UnknownError", message: "Internal server error" } }]
  return event({ event: EventStream.failureEvent, data: JSON.stringify(failure) })
}

const describe = (error: unknown): { readonly _tag: string; readonly message: string } => {
  const record =
    typeof error === "object" && error !== null
      ? (error as { readonly _tag?: unknown; readonly message?: unknown })
      : {}
  return {
    _tag: typeof record._tag === "string" ? record._tag : "UnknownError",
    message: typeof record.message === "string" ? record.message : "The stream failed"
  }
}
