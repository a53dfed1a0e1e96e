export * as EventStreams from "./event-streams.js"

import { Config, LiveBus } from "@opencode-ai/core"
import { Context, Deferred, Duration, Effect, Layer } from "effect"

/** How often a quiet stream sends a heartbeat unless configured otherwise (DESIGN §4: at most 15 s). */
export const defaultHeartbeat: Duration.Duration = Duration.seconds(15)

/**
 * How long a stream may make no write progress before it is closed, unless configured otherwise
 * (`server.sse_write_timeout`).
 */
export const defaultWriteTimeout: Duration.Duration = Duration.seconds(30)

export interface Options {
  /** The heartbeat period of both SSE streams (a positive duration); default {@link defaultHeartbeat}. */
  readonly heartbeat?: Duration.DurationInput | undefined
  /**
   * The buffer of each `GET /api/event` subscriber, in events; default `LiveBus.defaultCapacity`. A
   * subscriber that falls further behind is cut off (its stream ends with a failure frame).
   */
  readonly liveCapacity?: number | undefined
  /**
   * How long either stream may make no write progress (a client that stops reading: the socket's send
   * buffer is full and nothing drains) before the server closes its connection; default
   * `server.sse_write_timeout` (in ms), else {@link defaultWriteTimeout}. A positive duration.
   */
  readonly writeTimeout?: Duration.DurationInput | undefined
}

export interface Interface {
  readonly heartbeat: Duration.Duration
  readonly liveCapacity: number
  readonly writeTimeout: Duration.Duration
  /**
   * Completes when the router is shutting down. Open streams end then (the live stream with
   * `global.disposed`), so a listener draining in-flight requests, or an embedded host closing its
   * scope, is never held open by a stream that would otherwise never end.
   */
  readonly closing: Effect.Effect<void>
}

/** The event streams' settings and lifetime, provided by the router; `yield* EventStreams.Service`. */
export class Service extends Context.Tag("@opencode-ai/server/EventStreams")<Service, Interface>() {}

/**
 * One router's stream settings. Its scope is the router's: the router closes before the listener
 * stops (and before Core closes), and closing it ends every open stream.
 */
export const layer = (options: Options = {}): Layer.Layer<Service, never, Config.Service> =>
  Layer.scoped(
    Service,
    Effect.gen(function* () {
      const heartbeat = Duration.decode(options.heartbeat ?? defaultHeartbeat)
      if (!Duration.greaterThan(heartbeat, Duration.zero)) {
        return yield* Effect.dieMessage(
          `the event stream heartbeat must be positive, got ${Duration.format(heartbeat)}`
        )
      }
      const config = yield* Config.Service
      const configured = config.server.sse_write_timeout
      const writeTimeout = Duration.decode(
        options.writeTimeout ?? (configured === undefined ? defaultWriteTimeout : Duration.millis(configured))
      )
      if (!Duration.greaterThan(writeTimeout, Duration.zero)) {
        return yield* Effect.dieMessage(
          `the event stream write timeout must be positive, got ${Duration.format(writeTimeout)}`
        )
      }
      const closing = yield* Deferred.make<void>()
      yield* Effect.addFinalizer(() => Deferred.succeed(closing, undefined))
      return Service.of({
        heartbeat,
        liveCapacity: options.liveCapacity ?? LiveBus.defaultCapacity,
        writeTimeout,
        closing: Deferred.await(closing)
      })
    })
  )
