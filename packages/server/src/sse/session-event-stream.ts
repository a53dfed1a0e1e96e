export * as SessionEventStream from "./session-event-stream.js"

import type { HttpServerRequest } from "@effect/platform"
import { EventLog, Sessions, Traced } from "@opencode-ai/core"
import type { SessionEventStream as Endpoint } from "@opencode-ai/protocol"
import { Errors, Event, type Identifier } from "@opencode-ai/schema"
import { Effect } from "effect"
import { EventStreams } from "./event-streams.js"
import { SseFraming } from "./sse-framing.js"
import { SseResponse } from "./sse-response.js"
import { WriteWatchdog } from "./write-watchdog.js"

/** The types the stream carries: the contract's `SessionDurableEvent` (not `session.created`). */
const durableTypes: ReadonlySet<string> = new Set(
  Event.SessionDurableEvent.members.map((m) => m.fields.type.literals[0])
)

const lastEventIdHeader = "last-event-id"

/**
 * How many bytes of frames (UTF-16 code units, near enough) one write carries at most, unless a single
 * event is larger. A keyset page of large events would otherwise be one write of many megabytes (256
 * events of 64 KB: 16 MB), queued on the socket whole. The response's buffers then hold far more than
 * their limit and drain, which is the progress the write timeout watches for, only once the client
 * has taken nearly all of it: a client reading such a replay was reset by a 1 s write timeout while
 * it read (`slow-consumer.test.ts`, about one run in three here).
 */
const framesPerWrite = 256 * 1024

/**
 * The frames of a batch of encoded events (those of the stream's types), as few strings as hold them
 * within {@link framesPerWrite} each: usually one.
 */
const framesOf = (batch: ReadonlyArray<EventLog.Encoded>): Array<string> => {
  const writes: Array<string> = []
  let frames = ""
  for (const event of batch) {
    if (!durableTypes.has(event.type)) continue
    const frame = SseFraming.event({ id: String(event.seq), event: event.type, data: event.json })
    if (frames !== "" && frames.length + frame.length > framesPerWrite) {
      writes.push(frames)
      frames = ""
    }
    frames += frame
  }
  if (frames !== "") writes.push(frames)
  return writes
}

/**
 * Where to resume: `Last-Event-ID` when present (an SSE client sends it when it reconnects: it is the
 * last seq it received, so it is never older than the `?after` in the URL it reconnects to), else
 * `?after`, else 0 (the whole log).
 */
export const resumeAfter = (
  headers: HttpServerRequest.HttpServerRequest["headers"],
  after: number | undefined
): Effect.Effect<number, Errors.InvalidRequestError> => {
  const header = headers[lastEventIdHeader]?.trim()
  if (header === undefined || header === "") return Effect.succeed(after ?? 0)
  const seq = /^\d+$/.test(header) ? Number(header) : Number.NaN
  return Number.isSafeInteger(seq)
    ? Effect.succeed(seq)
    : Effect.fail(
        new Errors.InvalidRequestError({
          kind: "header",
          field: "Last-Event-ID",
          message: `Invalid request: Last-Event-ID must be a session event seq (a non-negative integer), got ${JSON.stringify(header)}`
        })
      )
}

/**
 * The `sessions.events` handler (`GET /api/session/{sessionID}/event`, see the endpoint's doc):
 * validates the resume position and the session before answering, so those failures are typed JSON
 * responses; then streams the session's log (`EventLog.pumpEncoded`: replay after the position, then live
 * commits, no gap and no duplicate) as `id: <seq>` frames, with comment heartbeats. A client that stops reading for the
 * write timeout has its connection closed; it resumes with `Last-Event-ID`.
 */
export const make = Effect.gen(function* () {
  const sessions = yield* Sessions.Service
  const log = yield* EventLog.Service
  const streams = yield* EventStreams.Service
  return ({
    path,
    urlParams,
    request
  }: {
    readonly path: { readonly sessionID: Identifier.SessionID }
    readonly urlParams: Endpoint.EventsQuery
    readonly request: HttpServerRequest.HttpServerRequest
  }) =>
    Effect.gen(function* () {
      const after = yield* resumeAfter(request.headers, urlParams.after)
      yield* sessions.ensureExists(path.sessionID)
      // The follow starts when the body is first read (in the body's own fiber, not the handler's): it
      // subscribes, then reads the log after `after`, so commits made meanwhile are in one or the
      // other, never lost. Its events come as their stored JSON, a keyset page or a live batch at a
      // time, written as one string of frames (a page of large events as a few: see framesPerWrite).
      // A heartbeat goes out as the body starts (the response does not wait for an event), then one
      // every period.
      return yield* SseResponse.make({
        request,
        produce: (write) =>
          log.pumpEncoded(path.sessionID, (batch) => Effect.forEach(framesOf(batch), write, { discard: true }), {
            after
          }),
        stream: "session",
        heartbeat: streams.heartbeat,
        heartbeatFirst: true,
        closing: streams.closing,
        writeTimeout: streams.writeTimeout,
        onStall: WriteWatchdog.release(request)
      })
    }).pipe(Effect.annotateLogs({ sessionID: path.sessionID }), Traced.withSpan("SessionEventStream.open"))
})
