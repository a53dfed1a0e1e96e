export * as SessionEventStream from "./session-event-stream.js"

import type { HttpServerRequest } from "@effect/platform"
import { EventLog, Sessions } from "@opencode-ai/core"
import type { SessionEventStream as Endpoint } from "@opencode-ai/protocol"
import { Errors, Event, type Identifier } from "@opencode-ai/schema"
import { Chunk, Effect, Stream } from "effect"
import { EventStreams } from "./event-streams.js"
import { SseFraming } from "./sse-framing.js"
import { WriteWatchdog } from "./write-watchdog.js"

/** The types the stream carries: the contract's `SessionDurableEvent` (not `session.created`). */
const durableTypes: ReadonlySet<string> = new Set(
  Event.SessionDurableEvent.members.map((m) => m.fields.type.literals[0])
)

const lastEventIdHeader = "last-event-id"

/**
 * How many characters of frames are written as one piece at most (a single larger frame is its own
 * piece): the write watchdog times each piece, and a slow but reading client must drain one in time.
 */
const pieceSize = 64 * 1024

/** The frames of a chunk of encoded events (those of the stream's types), as a few strings of frames. */
const framesOf = (chunk: Chunk.Chunk<EventLog.Encoded>): Chunk.Chunk<string> => {
  const pieces: Array<string> = []
  let frames = ""
  for (const event of chunk) {
    if (!durableTypes.has(event.type)) continue
    frames += SseFraming.event({ id: String(event.seq), event: event.type, data: event.json })
    if (frames.length >= pieceSize) {
      pieces.push(frames)
      frames = ""
    }
  }
  if (frames !== "") pieces.push(frames)
  return Chunk.unsafeFromArray(pieces)
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
 * responses; then streams `EventLog.follow` (replay after the position, then live commits, no gap and
 * no duplicate) as `id: <seq>` frames, with comment heartbeats. A client that stops reading for the
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
      // `follow` subscribes when the body starts streaming (inside its own scope, not the handler's),
      // then reads the log after `after`: commits made meanwhile are in one or the other, never lost.
      // The events come as their stored JSON, a keyset page per chunk: each chunk becomes a few strings
      // of frames (no per-event effect), written piece by piece, so the first page is on the wire
      // before the rest is read.
      const frames = log.followEncoded(path.sessionID, { after }).pipe(Stream.mapChunks(framesOf), Stream.rechunk(1))
      // A heartbeat right away (the response starts without waiting for an event), then periodically.
      const heartbeats = Stream.tick(streams.heartbeat).pipe(Stream.as(SseFraming.comment("heartbeat")))
      return SseFraming.response(
        SseFraming.body(Stream.merge(frames, heartbeats, { haltStrategy: "left" }), { closing: streams.closing }).pipe(
          SseFraming.subscribed("session")
        ),
        { timeout: streams.writeTimeout, onStall: WriteWatchdog.release(request) }
      )
    }).pipe(Effect.annotateLogs({ sessionID: path.sessionID }), Effect.withSpan("SessionEventStream.open"))
})
