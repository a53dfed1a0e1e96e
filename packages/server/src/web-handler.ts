export * as WebHandler from "./web-handler.js"

import { HttpApiBuilder, HttpApp, HttpServer } from "@effect/platform"
import { type Config, Core, type ModelDatabase, type Storage, type ToolRegistry } from "@opencode-ai/core"
import { EventStream } from "@opencode-ai/protocol"
import { type Context, Effect, Layer, Option, Runtime, type Scope } from "effect"
import type { PtyEnvironment } from "./pty-environment.js"
import { RequestContext } from "./request-context.js"
import { Router } from "./router.js"
import type { EventStreams } from "./sse/event-streams.js"

export interface Options {
  readonly databaseFile: string
  /** Where sessions are stored instead (see `Core.Options.database`); default `Storage.select`. */
  readonly database?: Storage.Selection | undefined
  /** The instance directory: the default Location of new sessions. */
  readonly directory: string
  /** The global config directory; default from `env` (`$XDG_CONFIG_HOME/opencode`). */
  readonly configDir?: string | undefined
  /** The environment the runtime honours (config lookup, `{env:…}`); default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
  /** The configuration to use instead of reading `opencode.json(c)` (e.g. `Config.layerTest`). */
  readonly config?: Layer.Layer<Config.Service, Config.ConfigError> | undefined
  /** The SSE streams' heartbeat period and live buffer size (defaults: 15 s, `LiveBus.defaultCapacity`). */
  readonly eventStreams?: EventStreams.Options | undefined
  /** The host program's tools, registered for the handler's lifetime before the runner starts. */
  readonly tools?: ReadonlyArray<ToolRegistry.Tool> | undefined
  /** The host's PTY Environment overlay for new PTYs; default none. */
  readonly ptyEnvironment?: PtyEnvironment.Interface | undefined
  /** Where the model database comes from (see `Core.Options.models`); default the bundled snapshot only. */
  readonly models?: ModelDatabase.Options | undefined
  /** Run Recovery at start (resume sessions with admitted input); default true. A one-shot CLI passes false. */
  readonly recover?: boolean | undefined
  /** Whether this host is a cluster runner (see `Core.Options.runner`); `false`: never, whatever `env` says. */
  readonly runner?: Core.Options["runner"]
}

/** A fetch-shaped handler: a web `Request` in, the router's `Response` out. */
export type Handler = (request: Request) => Promise<Response>

/**
 * Server's router over its own Core, as an in-memory web handler: no listener, no socket. Every
 * request still passes through the full routing, middleware, codecs and handlers. Auth is off (the
 * caller is the same process).
 *
 * Resolves once Core is open and migrated. Fails with the ConfigError of an invalid
 * `opencode.json(c)` (file, line, reason) or database URL, and with DatabaseUnavailable when a
 * selected PostgreSQL database cannot be reached. Closing the Scope closes the database and interrupts the
 * runtime's fibers; requests made after that fail. A streamed response keeps its request scope open
 * until its body finishes, and closing the Scope ends open event streams (the live one with
 * `global.disposed`).
 */
export const make = (
  options: Options
): Effect.Effect<Handler, Config.ConfigError | Storage.DatabaseUnavailable, Scope.Scope> =>
  Effect.map(start(options), (host) => host.handler)

/** A running in-memory host: its web handler, and the Core services behind it (same process only). */
export interface Host {
  readonly handler: Handler
  /** Valid while the Scope `start` ran in is open. */
  readonly services: Context.Context<Core.Services>
}

/** {@link make}, also giving the Core services behind the handler (see {@link Host}). */
export const start = (
  options: Options
): Effect.Effect<Host, Config.ConfigError | Storage.DatabaseUnavailable, Scope.Scope> =>
  Effect.gen(function* () {
    const runtime = yield* Layer.toRuntime(
      Layer.mergeAll(
        Router.layer({
          auth: Option.none(),
          eventStreams: options.eventStreams,
          ptyEnvironment: options.ptyEnvironment
        }),
        HttpApiBuilder.Router.Live,
        HttpApiBuilder.Middleware.layer,
        HttpServer.layerContext
      ).pipe(Layer.provideMerge(Core.layer(options)))
    )
    const app = yield* HttpApiBuilder.httpApp.pipe(Effect.provide(runtime))
    // Each request's fiber starts from the platform's services only (see RequestContext).
    const requests = Runtime.make({
      context: RequestContext.pick(runtime.context),
      fiberRefs: runtime.fiberRefs,
      runtimeFlags: runtime.runtimeFlags
    })
    return { handler: fetchSemantics(HttpApp.toWebHandlerRuntime(requests)(app)), services: runtime.context }
  })

/**
 * The platform's web handler, with fetch's semantics where a body outlives its request: an event
 * stream's body fails with the request signal's reason once it aborts, whether or not it was ever
 * read, so the stream's subscription is released at once rather than when the body is collected.
 */
export const fetchSemantics =
  (handle: Handler): Handler =>
  async (request) => {
    const response = await handle(request)
    if (response.body === null || !response.headers.get("content-type")?.startsWith(EventStream.contentType))
      return response
    return new Response(abortable(response.body, request.signal), response)
  }

/** `body`, read on demand, failing with `signal`'s reason (and cancelled) once it aborts. */
const abortable = (body: ReadableStream<Uint8Array>, signal: AbortSignal): ReadableStream<Uint8Array> => {
  const reader = body.getReader()
  let abort: (() => void) | undefined
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        abort = () => {
          controller.error(signal.reason)
          reader.cancel(signal.reason).catch(() => undefined)
        }
        if (signal.aborted) abort()
        else signal.addEventListener("abort", abort, { once: true })
      },
      async pull(controller) {
        const next = await reader.read()
        // Aborted while reading: the stream has already failed.
        if (signal.aborted) return
        if (next.done) {
          signal.removeEventListener("abort", abort!)
          controller.close()
        } else controller.enqueue(next.value)
      },
      cancel(reason) {
        signal.removeEventListener("abort", abort!)
        return reader.cancel(reason)
      }
    },
    { highWaterMark: 0 }
  )
}
