export * as EventHandlers from "./event.js"

import { HttpApiBuilder } from "@effect/platform"
import { LiveBus } from "@opencode-ai/core"
import { Api } from "@opencode-ai/protocol"
import { InstanceEvent } from "@opencode-ai/schema"
import { Effect, Schedule, Stream } from "effect"
import { StreamToken } from "../middleware/stream-token.js"
import { EventStreams } from "../sse/event-streams.js"
import { SseFraming } from "../sse/sse-framing.js"
import { WriteWatchdog } from "../sse/write-watchdog.js"

/** The types the stream carries: what the contract's `V2Event` declares; anything else on the bus stays in process. */
const v2Types: ReadonlySet<string> = new Set(InstanceEvent.V2Event.members.map((m) => m.fields.type.literals[0]))

const lifecycle = (type: "server.connected" | "server.heartbeat" | "global.disposed") =>
  Effect.map(LiveBus.envelope(type, {}), (envelope) => SseFraming.envelope(envelope))

/**
 * The `events` group: `GET /api/event`, the instance-wide live stream (see the endpoint's doc), and
 * `POST /api/event/token`, a stream token (see StreamToken).
 * `server.connected` is sent once the subscriber is attached to the LiveBus, so everything published
 * after a client has seen it is delivered; `server.heartbeat` follows every heartbeat period;
 * `global.disposed` is the last event when the server shuts down. A subscriber cut off by the bus for
 * being too slow gets a failure frame instead; one that stops reading altogether (no write progress
 * for the write timeout) has its connection closed.
 */
export const layer = HttpApiBuilder.group(Api.OpenCodeApi, "events", (handlers) =>
  Effect.gen(function* () {
    const bus = yield* LiveBus.Service
    const streams = yield* EventStreams.Service
    const tokens = yield* StreamToken.Service
    return handlers
      .handle(
        "token",
        Effect.fn("EventHandlers.token")(function* () {
          return yield* tokens.issue
        })
      )
      .handleRaw("subscribe", ({ request }) =>
        Effect.gen(function* () {
          const disposed = yield* lifecycle("global.disposed")
          const frames = Stream.unwrapScoped(
            Effect.gen(function* () {
              const live = yield* bus.subscribe({ capacity: streams.liveCapacity })
              const connected = yield* lifecycle("server.connected")
              const events = live.pipe(
                Stream.filter((envelope) => v2Types.has(envelope.type)),
                Stream.map((envelope) => SseFraming.envelope(envelope))
              )
              const heartbeats = Stream.fromSchedule(Schedule.spaced(streams.heartbeat)).pipe(
                Stream.mapEffect(() => lifecycle("server.heartbeat"))
              )
              return Stream.concat(Stream.make(connected), Stream.merge(events, heartbeats, { haltStrategy: "left" }))
            })
          )
          return SseFraming.response(SseFraming.body(frames, { closing: streams.closing, onClose: disposed }), {
            timeout: streams.writeTimeout,
            onStall: WriteWatchdog.release(request)
          })
        })
      )
  })
)
