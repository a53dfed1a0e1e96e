export * as WriteWatchdog from "./write-watchdog.js"

import * as http from "node:http"
import type { HttpServerRequest } from "@effect/platform"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Effect, Option } from "effect"

/*
 * How a stalled reader is noticed. The producer writes frames into the response body's buffer; once
 * that buffer (or the response's, behind it) is full, its next write waits until the client reads on:
 *
 *   write ──► buffered ──► write ──► (buffers full: wait for the reader) ──► write ──► …
 *                                     └───── "waiting": timed by the watchdog ─────┘
 *
 * While the producer has nothing to write, nothing waits and nothing is wrong, however long that is.
 * Buffered bytes that wait for `timeout` are stuck on a socket that does not drain: the client stopped
 * reading. Where the kernel's send queue can be read (SendQueue), a wait that it sees shrinking is
 * progress as well: the socket drains only in large steps, which a slow client that reads all along
 * may take longer than `timeout` to complete.
 */

/** One body's watchdog (see {@link make}). */
export interface Watchdog {
  /** The body's buffers are full: starts timing, unless it already is. */
  readonly waiting: () => void
  /** The reader read on (or the body was released): stops timing. */
  readonly progressed: () => void
}

/**
 * A watchdog that calls `onStall` once the body has waited `timeout` ms for the reader (`onStall` must
 * end the response: see {@link release}). With `sendQueue` (SendQueue.reader), a wait is looked at
 * every quarter of `timeout` instead, and `onStall` comes only once the queue has not shrunk for
 * `timeout` ms (one that cannot be read does not shrink); so a stalled client is cut off between one and
 * one and a quarter `timeout` after its last byte. Its timers do not keep the process alive.
 */
export const make = (timeout: number, onStall: () => void, sendQueue?: () => number | undefined): Watchdog => {
  let timer: ReturnType<typeof setTimeout> | undefined
  // While waiting, with a send queue: its last size read, and when it was last seen to shrink.
  let queued: number | undefined
  let moved = 0
  const arm = (after: number, then: () => void) => {
    timer = setTimeout(then, after)
    timer.unref()
  }
  const stall = () => {
    timer = undefined
    onStall()
  }
  const look = () => {
    const now = performance.now()
    const size = sendQueue?.()
    if (size !== undefined && queued !== undefined && size < queued) moved = now
    queued = size
    if (now - moved >= timeout) return stall()
    arm(Math.max(1, timeout / 4), look)
  }
  return {
    waiting: () => {
      if (timer !== undefined) return
      if (sendQueue === undefined) return arm(timeout, stall)
      queued = undefined
      moved = performance.now()
      arm(Math.max(1, timeout / 4), look)
    },
    progressed: () => {
      clearTimeout(timer)
      timer = undefined
    }
  }
}

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
