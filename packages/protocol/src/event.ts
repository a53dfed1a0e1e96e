export * as EventGroup from "./event.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { InstanceEvent } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { EventStream } from "./event-stream.js"

/**
 * `GET /api/event` (`events.subscribe`): the instance-wide live stream, as Server-Sent Events.
 *
 * - The first event is always `server.connected`; everything published on the instance after it is
 *   delivered, in order: durable events as they commit (`session.created` and `session.updated` with
 *   the v1 session record, every contract `session.next.*`) and live-only ones
 *   (`session.next.text.delta`, ...). Every event is a member of the contract's `V2Event`, and each
 *   one about a session carries the session's `location` (the lifecycle events carry the server's).
 * - A comment line (`: heartbeat`) is sent periodically (every 15 s by default) so an idle stream is
 *   told apart from a dead one; SSE parsers skip it.
 * - There is no replay: `Last-Event-ID` is ignored and frames carry no `id`. A consumer that reconnects
 *   refreshes authoritative state (for a session's durable log, `sessions.events` with `after`).
 * - Each subscriber has a bounded buffer. One that falls too far behind is cut off: its stream ends
 *   with a failure frame (`effect/httpapi/stream/failure`); other subscribers are unaffected.
 * - When the server or embedded host shuts down, `global.disposed` is the last event.
 */
export const subscribe = HttpApiEndpoint.get("subscribe", "/api/event")
  .addSuccess(EventStream.events(InstanceEvent.V2Event))
  .annotate(EventStream.Annotation, EventStream.eventsDeclaration)
  .annotate(OpenApi.Transform, EventStream.openApi)
  .annotate(OpenApi.Identifier, "v2.event.subscribe")
  .annotate(OpenApi.Summary, "Subscribe to instance events")
  .annotate(
    OpenApi.Description,
    "A live Server-Sent Events stream of what happens on this instance. The first event is `server.connected`; then durable events as they commit (`session.created` and `session.updated` with the v1 session record, every `session.next.*`) and live-only ones (text, reasoning and tool-input deltas, permission and question requests). Each event about a session carries its `location`. A `: heartbeat` comment line is sent every 15 seconds. There is no replay. When the server shuts down, `global.disposed` is the last event."
  )

/** A stream token and the time (epoch ms) after which it opens no stream. */
export const StreamToken = Schema.Struct({
  token: Schema.String,
  expiresAt: Schema.Number
}).annotations({ identifier: "StreamToken" })
export interface StreamToken extends Schema.Schema.Type<typeof StreamToken> {}

/**
 * `POST /api/event/token` (extension): a short-lived token that opens the two event streams
 * (`GET /api/event` and `GET /api/session/{sessionID}/event`) as the `token` query parameter, for
 * clients that cannot send an `Authorization` header, such as a browser's `EventSource`. It opens
 * streams until `expiresAt` (reconnections included); a stream it opened is not cut off when it
 * expires. It authorizes nothing else. Asking for it needs the server's credentials like any route.
 */
export const token = HttpApiEndpoint.post("token", "/api/event/token")
  .addSuccess(StreamToken)
  .annotate(OpenApi.Identifier, "v2.event.token")
  .annotate(OpenApi.Summary, "Get an event stream token")
  .annotate(
    OpenApi.Description,
    "Extension. A short-lived token that opens the event streams (`GET /api/event` and `GET /api/session/{sessionID}/event`) when sent as their `token` query parameter, for clients that cannot send an `Authorization` header, such as a browser `EventSource`. It opens streams (reconnections included) until `expiresAt` and authorizes nothing else."
  )

export const group = HttpApiGroup.make("events")
  .add(subscribe)
  .add(token)
  .annotate(OpenApi.Title, "events")
  .annotate(ClientProjection.Namespace, "events")
