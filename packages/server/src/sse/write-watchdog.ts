export * as WriteWatchdog from "./write-watchdog.js"

import * as http from "node:http"
import type { HttpServerRequest } from "@effect/platform"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Clock, Duration, Effect, Option, Schedule, Stream } from "effect"

/*
 * How a stalled reader is noticed. The listener writes a streamed body chunk by chunk and, when the
 * socket's buffer is full, waits for it to drain before it pulls the next chunk:
 *
 *   pull ──► chunk ──► write ──► (buffer full: wait for drain) ──► pull ──► …
 *            └──────── "owed": delivered, next pull not yet asked ────┘
 *
 * While the body waits for an event, no chunk is owed and nothing is wrong, however long that is.
 * Once a chunk has been handed over and the next pull does not come within `timeout`, the writer is
 * stuck on a socket that does not drain: the client stopped reading.
 */

/**
 * `body`, watched: when a chunk it delivered is not followed by the next pull within `timeout`,
 * `onStall` runs once (it must end the response: see {@link release}). Checks every quarter of
 * `timeout`; a stall is acted on once `timeout` has passed and four checks in a row found the same
 * chunk still owed (about 1 to 1.25 × `timeout` after the last progress, on a process that runs).
 */
export const watch = <A, E, R>(
  body: Stream.Stream<A, E, R>,
  timeout: Duration.Duration,
  onStall: Effect.Effect<void>
): Stream.Stream<A, E, R> =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const pull = yield* Stream.toPull(body)
      const limit = Duration.toMillis(timeout)
      // When the last chunk was handed over, while its next pull is owed; undefined otherwise.
      let owedSince: number | undefined
      // Chunks handed over so far, and how many checks in a row saw the same one still owed.
      let delivered = 0
      let seen = -1
      let idleChecks = 0
      const check = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        if (owedSince === undefined || delivered !== seen) {
          seen = delivered
          idleChecks = 0
          return false
        }
        idleChecks++
        // Both: `timeout` of wall time, and four checks that each found the writer still stuck. A
        // process that was paused as a whole (every fiber late, the client's reads too) is not
        // mistaken for a client that stopped reading.
        return idleChecks >= 4 && now - owedSince >= limit
      })
      yield* check.pipe(
        Effect.repeat({
          schedule: Schedule.spaced(Duration.millis(Math.max(1, limit / 4))),
          until: (stalled) => stalled
        }),
        Effect.zipRight(onStall),
        Effect.forkScoped
      )
      return Stream.repeatEffectChunkOption(
        Effect.suspend(() => {
          owedSince = undefined
          return pull
        }).pipe(
          Effect.zipLeft(
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.sync(() => {
                owedSince = now
                delivered++
              })
            )
          )
        )
      )
    })
  )

/**
 * Ends `request`'s connection at once with a TCP reset: its socket is destroyed and its buffered
 * bytes dropped (the client is not reading them), which also interrupts the request's fiber, so the
 * stream's subscriptions are released. A request with no socket (the embedded host's in-memory requests,
 * whose reader holds no kernel buffer) is left alone.
 */
export const release = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<void> =>
  Effect.gen(function* () {
    const response = Option.liftThrowable(() => NodeHttpServerRequest.toServerResponse(request))()
    if (Option.isNone(response) || !(response.value instanceof http.ServerResponse)) return
    yield* Effect.logWarning("event stream closed: the client made no read progress within the write timeout")
    // A reset, not a FIN: a FIN would queue behind the bytes the client is not reading, and the
    // kernel would keep the socket and its full send buffer until it gives up on them.
    const socket = response.value.socket
    if (socket !== null && typeof socket.resetAndDestroy === "function") socket.resetAndDestroy()
    else response.value.destroy()
  })
