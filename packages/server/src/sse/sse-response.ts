export * as SseResponse from "./sse-response.js"

import * as http from "node:http"
import { Readable } from "node:stream"
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { RuntimeMetrics } from "@opencode-ai/core"
import { EventStream } from "@opencode-ai/protocol"
import { Cause, Duration, Effect, Exit, type Fiber, FiberId, Metric, Option, Runtime } from "effect"
import { SendQueue } from "./send-queue.js"
import { SseFraming } from "./sse-framing.js"
import { WriteWatchdog } from "./write-watchdog.js"

/*
 * The body of both event streams is a buffer that one fiber, the producer, writes frames into:
 *
 *   producer ──write(frames)──► body buffer ──► the socket (Node listener: a Readable, piped)
 *   heartbeat timer ──────────┘      │           or the reader (embedded host: a web ReadableStream)
 *                                    └─ full: write waits for the reader to ask for more; the write
 *                                       watchdog times that wait
 *
 * No Effect Stream stands between the producer and the socket: each stream stage costs more to start
 * and stop than a short replay costs to send, and a client may open a stream per session it watches.
 */

export interface Options {
  /** The request answered: its Node response, when it has one, is the body's destination. */
  readonly request: HttpServerRequest.HttpServerRequest
  /**
   * Writes the stream's frames with `write`, which returns once the frames are buffered and waits
   * while the buffer is full (the client is not reading). When it succeeds the body ends (after
   * `onClose`); when it fails, the body ends with one failure frame (see `SseFraming.failure`). It is
   * started when the body is first read, and interrupted when the body is released (the client went
   * away, or was cut off) or the host closes.
   */
  readonly produce: (write: (frames: string) => Effect.Effect<void>) => Effect.Effect<void, unknown>
  /** Which `opencode_sse_subscribers` gauge counts the body while it streams. */
  readonly stream: "instance" | "session"
  /** A `: heartbeat` comment every period; with `heartbeatFirst`, also one as the body starts. */
  readonly heartbeat: Duration.Duration
  readonly heartbeatFirst: boolean
  /** Completes when the host is closing: the producer is interrupted and the body ends (after `onClose`). */
  readonly closing: Effect.Effect<void>
  /** The last frame of a body that ends without failure. */
  readonly onClose?: string | undefined
  /** How long a write may wait for the reader (see WriteWatchdog), and what then releases the response. */
  readonly writeTimeout: Duration.Duration
  readonly onStall: Effect.Effect<void>
}

/** Past this many buffered bytes a write waits for the reader. */
const highWaterMark = 64 * 1024

/**
 * The `200 text/event-stream` response of {@link Options}. `no-cache` and `x-accel-buffering: no`
 * keep caches and buffering proxies from holding frames back. The producer runs with the caller's
 * runtime (its logger, its log annotations).
 */
export const make = (options: Options): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.map(Effect.runtime<never>(), (runtime) => {
    // A HEAD response sends no body, so none is made: the embedded host's web body would start its
    // producer unread (a ReadableStream pulls as it is made) and never be released.
    if (options.request.method === "HEAD") return HttpServerResponse.empty({ status: 200, headers })
    const destination = nodeResponse(options.request)
    return HttpServerResponse.raw(
      Option.isSome(destination) ? nodeBody(options, runtime, destination.value) : webBody(options, runtime),
      { headers }
    )
  })

const headers = {
  "content-type": EventStream.contentType,
  "cache-control": "no-cache",
  "x-accel-buffering": "no"
}

const nodeResponse = (request: HttpServerRequest.HttpServerRequest): Option.Option<http.ServerResponse> =>
  Option.liftThrowable(() => NodeHttpServerRequest.toServerResponse(request))().pipe(
    Option.filter((response): response is http.ServerResponse => response instanceof http.ServerResponse)
  )

/** Where the pump puts frames: `push` answers whether there is room for more; `end` ends the body. */
interface Sink {
  readonly push: (frames: string) => boolean
  readonly end: () => void
}

/** What a body does with its pump: start it with its sink, tell it the reader wants more, release it. */
interface Pump {
  readonly start: (sink: Sink) => void
  readonly pulled: () => void
  readonly release: () => void
}

/**
 * The Node listener's body: a Readable the listener pipes into `response` (and destroys when the client
 * goes). A pipe hands a chunk straight to the response while it flows, so the room left is the
 * response's as well as the Readable's: a write waits until both have drained.
 */
const nodeBody = (options: Options, runtime: Runtime.Runtime<never>, response: http.ServerResponse): Readable => {
  const pump = makePump(options, runtime, response.socket === null ? undefined : SendQueue.reader(response.socket))
  let started = false
  // The reader wants more only when both the Readable and the response have room.
  const drained = () => {
    if (body.readableLength < highWaterMark) pump.pulled()
  }
  const body: Readable = new Readable({
    highWaterMark,
    read() {
      if (!started) {
        started = true
        response.on("drain", drained)
        pump.start({
          push: (frames) => body.push(frames) && !response.writableNeedDrain,
          end: () => body.push(null)
        })
      }
      if (!response.writableNeedDrain) pump.pulled()
    },
    destroy(error, callback) {
      response.off("drain", drained)
      pump.release()
      callback(error)
    }
  })
  return body
}

const encoder = new TextEncoder()

/**
 * The embedded host's body: a web ReadableStream, which pulls as it is made, so its producer starts
 * at once. It is cancelled when the reader lets go, or when the request aborts (WebHandler's fetch
 * semantics).
 */
const webBody = (options: Options, runtime: Runtime.Runtime<never>): ReadableStream<Uint8Array> => {
  const pump = makePump(options, runtime)
  let started = false
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (!started) {
          started = true
          pump.start({
            push: (frames) => {
              controller.enqueue(encoder.encode(frames))
              return (controller.desiredSize ?? 0) > 0
            },
            end: () => controller.close()
          })
        }
        pump.pulled()
      },
      cancel() {
        pump.release()
      }
    },
    { highWaterMark, size: (chunk) => chunk.byteLength }
  )
}

/** `sendQueue`: the kernel's send queue of the body's socket, for the write watchdog (see WriteWatchdog). */
const makePump = (options: Options, runtime: Runtime.Runtime<never>, sendQueue?: () => number | undefined): Pump => {
  const runFork = Runtime.runFork(runtime)
  const gauge = RuntimeMetrics.sseSubscribers.pipe(Metric.tagged("stream", options.stream))
  const heartbeat = SseFraming.comment("heartbeat")
  let sink: Sink | undefined
  let producer: Fiber.RuntimeFiber<void, unknown> | undefined
  let closing: Fiber.RuntimeFiber<void> | undefined
  let heartbeats: ReturnType<typeof setInterval> | undefined
  // Set once the body has ended or been released: nothing is pushed after that.
  let ended = false
  // The producer's write waiting for the reader, if any.
  let waiting: (() => void) | undefined
  const watchdog = WriteWatchdog.make(
    Duration.toMillis(options.writeTimeout),
    () => {
      runFork(options.onStall)
    },
    sendQueue
  )

  // Whether the gauge counts this body now.
  let counted = false

  const push = (frames: string): boolean => ended || sink === undefined || sink.push(frames)
  const stop = () => {
    waiting = undefined
    watchdog.progressed()
    clearInterval(heartbeats)
    closing?.unsafeInterruptAsFork(FiberId.none)
    producer?.unsafeInterruptAsFork(FiberId.none)
    if (!counted) return
    counted = false
    Runtime.runSync(runtime)(Metric.incrementBy(gauge, -1))
  }
  const end = (last: string | undefined) => {
    if (ended) return
    if (last !== undefined) push(last)
    ended = true
    sink?.end()
    stop()
  }
  const write = (frames: string): Effect.Effect<void> =>
    Effect.async<void>((resume) => {
      if (push(frames)) return resume(Effect.void)
      waiting = () => resume(Effect.void)
      watchdog.waiting()
      return Effect.sync(() => {
        waiting = undefined
        watchdog.progressed()
      })
    })

  return {
    start: (to) => {
      sink = to
      counted = true
      Runtime.runSync(runtime)(Metric.incrementBy(gauge, 1))
      if (options.heartbeatFirst) push(heartbeat)
      heartbeats = setInterval(() => {
        if (!push(heartbeat)) watchdog.waiting()
      }, Duration.toMillis(options.heartbeat))
      heartbeats.unref()
      producer = runFork(options.produce(write))
      producer.addObserver((exit) => {
        if (ended) return
        if (Exit.isSuccess(exit)) return end(options.onClose)
        runFork(logFailure(exit.cause))
        end(SseFraming.failure(exit.cause))
      })
      closing = runFork(
        Effect.zipRight(
          options.closing,
          Effect.sync(() => end(options.onClose))
        )
      )
    },
    pulled: () => {
      watchdog.progressed()
      const resume = waiting
      if (resume === undefined) return
      waiting = undefined
      resume()
    },
    release: () => {
      ended = true
      stop()
    }
  }
}

/** A producer's failure is the client's to handle (a failure frame); only a defect is an error here. */
const logFailure = (cause: Cause.Cause<unknown>) =>
  Option.isSome(Cause.failureOption(cause)) || Cause.isInterruptedOnly(cause)
    ? Effect.logDebug("event stream failed", cause)
    : Effect.logError("event stream failed", cause)
