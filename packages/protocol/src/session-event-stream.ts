export * as SessionEventStream from "./session-event-stream.js"

import { HttpApiEndpoint, OpenApi } from "@effect/platform"
import { Errors, Event, Identifier } from "@opencode-ai/schema"
import { Schema } from "effect"
import { EventStream } from "./event-stream.js"

/** A position in a session's durable log: a non-negative integer `seq`, written in decimal on the wire. */
export const Sequence = Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())

export const EventsPath = Schema.Struct({ sessionID: Identifier.SessionID })

export const EventsQuery = Schema.Struct({
  /** Replay the events with `seq > after` (default 0: the whole log). */
  after: Schema.optional(Sequence)
})
export interface EventsQuery extends Schema.Schema.Type<typeof EventsQuery> {}

/**
 * `GET /api/session/{sessionID}/event` (`sessions.events`): the session's durable event stream, as
 * Server-Sent Events.
 *
 * - The session is verified first: an unknown one is a 404 `SessionNotFoundError` (JSON), before any
 *   stream starts.
 * - It replays the committed events after the resume position, then continues with each new commit as
 *   it happens, with no gap and no duplicate. The resume position is the `Last-Event-ID` request header
 *   when present (what an SSE client sends when it reconnects: the last id it received), otherwise
 *   `?after`, otherwise 0. An unparsable `Last-Event-ID` is a 400 `InvalidRequestError`.
 * - Each frame is `id: <seq>`, `event: <type>`, `data: <envelope JSON>`; seqs strictly increase. The
 *   stream carries exactly the `SessionDurableEvent` types, and the first one of a session is seq 1:
 *   `session.created` is not one of them (it is the log's origin, seq 0, announced on
 *   `GET /api/event`; the session itself is `GET /api/session/{id}`), nor are live-only fragments.
 * - While the log is quiet a comment line (`: heartbeat`) is sent periodically (every 15 s by default),
 *   and one right away so the response starts immediately.
 * - It never ends on its own; it ends when the client disconnects or the server shuts down. There is
 *   no reconnection in the stream itself: a client resumes by reconnecting with the last seq it saw.
 */
export const events = HttpApiEndpoint.get("events", "/api/session/:sessionID/event")
  .setPath(EventsPath)
  .setUrlParams(EventsQuery)
  .addSuccess(EventStream.frames(Event.SessionDurableEvent))
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(EventStream.Annotation, EventStream.framesDeclaration)
  .annotate(OpenApi.Transform, EventStream.openApi)
  .annotate(OpenApi.Identifier, "v2.session.events")
  .annotate(OpenApi.Summary, "Stream a session's events")
  .annotate(
    OpenApi.Description,
    "A resumable Server-Sent Events stream of the session's durable events: it replays the committed events after the resume position (the `Last-Event-ID` header, else `after`, else 0), then continues live with no gap and no duplicate. Each frame's id is the event's sequence number. An unknown session is a 404 before any stream starts."
  )
