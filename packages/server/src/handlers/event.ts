export * as EventHandlers from "./event.js"

import { HttpApiBuilder } from "@effect/platform"
import { LiveBus, Locations, Sessions, Traced } from "@opencode-ai/core"
import { Effect, Option } from "effect"
import { ServerApi } from "../api.js"
import { StreamToken } from "../middleware/stream-token.js"
import { EventStreams } from "../sse/event-streams.js"
import { InstanceStreamEvents } from "../sse/instance-stream-events.js"
import { SseFraming } from "../sse/sse-framing.js"
import { SseResponse } from "../sse/sse-response.js"
import { WriteWatchdog } from "../sse/write-watchdog.js"

/**
 * The `events` group: `GET /api/event`, the instance-wide live stream (see the endpoint's doc), and
 * `POST /api/event/token`, a stream token (see StreamToken).
 * `server.connected` is sent once the subscriber is attached to the LiveBus, so everything published
 * after a client has seen it is delivered; a `: heartbeat` comment follows every heartbeat period;
 * `global.disposed` is the last event when the server shuts down. Both lifecycle events carry the
 * server's default Location; bus envelopes are shown as InstanceStreamEvents says. A subscriber cut off by the bus for
 * being too slow gets a failure frame instead; one that stops reading altogether (no write progress
 * for the write timeout) has its connection closed.
 */
export const layer = HttpApiBuilder.group(ServerApi.api, "events", (handlers) =>
  Effect.gen(function* () {
    const bus = yield* LiveBus.Service
    const locations = yield* Locations.Service
    const sessions = yield* Sessions.Service
    const streams = yield* EventStreams.Service
    const tokens = yield* StreamToken.Service
    return handlers
      .handle(
        "token",
        Traced.fn("EventHandlers.token")(function* () {
          return yield* tokens.issue
        })
      )
      .handleRaw("subscribe", ({ request }) =>
        Effect.gen(function* () {
          const here = yield* locations.resolve().pipe(Effect.orDie)
          const location = {
            directory: here.directory,
            ...(here.workspaceID === undefined ? {} : { workspaceID: here.workspaceID })
          }
          const lifecycle = (type: "server.connected" | "global.disposed") =>
            Effect.map(LiveBus.envelope(type, {}), (envelope) => {
              const located: LiveBus.Envelope = { ...envelope, location }
              return SseFraming.envelope(located)
            })
          const disposed = yield* lifecycle("global.disposed")
          const show = yield* Effect.provideService(InstanceStreamEvents.make, Sessions.Service, sessions)
          return yield* SseResponse.make({
            request,
            produce: (write) =>
              Effect.scoped(
                Effect.gen(function* () {
                  const listener = yield* bus.listen({ capacity: streams.liveCapacity })
                  yield* write(yield* lifecycle("server.connected"))
                  for (;;) {
                    const events = yield* listener.take
                    if (events.length === 0) return
                    let frames = ""
                    for (const event of events) {
                      const shown = yield* show(event)
                      if (Option.isSome(shown)) frames += SseFraming.envelope(shown.value)
                    }
                    if (frames !== "") yield* write(frames)
                  }
                })
              ),
            stream: "instance",
            heartbeat: streams.heartbeat,
            heartbeatFirst: false,
            closing: streams.closing,
            onClose: disposed,
            writeTimeout: streams.writeTimeout,
            onStall: WriteWatchdog.release(request)
          })
        })
      )
  })
)
