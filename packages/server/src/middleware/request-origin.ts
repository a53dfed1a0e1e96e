export * as RequestOrigin from "./request-origin.js"

import * as net from "node:net"
import { HttpApp, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Config } from "@opencode-ai/core"
import { ApiErrors } from "@opencode-ai/protocol"
import { Errors } from "@opencode-ai/schema"
import { Context, Effect, Layer, Option } from "effect"

/** The socket the server listens on: the port and the address actually bound. */
export interface Listener {
  readonly hostname: string
  readonly port: number
}

export interface Options {
  /** Origins allowed besides the server's own (`--cors`), as written; see {@link parse}. */
  readonly cors?: ReadonlyArray<string> | undefined
  /** The listener, when there is one; the embedded host has none (see {@link Policy}). */
  readonly listener?: Listener | undefined
}

/**
 * Who may call the server from a browser, and under which `Host`:
 * - `allowed`: the origins allowed besides the server's own (`--cors` and `server.cors`), normalized;
 * - `listener`: the network listener. On a loopback bind the `Host` header must name a loopback
 *   address or `localhost` with its port. The server's own origin is `http://` + the `Host` header.
 *   `None` for the embedded host: its requests are built in process and carry no `Host`, so no
 *   origin is its own and only allowed origins pass.
 */
export interface Settings {
  readonly allowed: ReadonlySet<string>
  readonly listener: Option.Option<Listener>
}

export class Policy extends Context.Tag("@opencode-ai/server/RequestOrigin/Policy")<Policy, Settings>() {}

/**
 * The origin `text` names (`scheme://host[:port]`, an optional trailing `/`), normalized as a
 * browser sends it (lower-case host, no default port); `None` for anything else, `null` included.
 * Only `http` and `https` origins can be named.
 */
export const parse = (text: string): Option.Option<string> => {
  if (!/^https?:\/\/[^/?#@\s]+\/?$/i.test(text)) return Option.none()
  try {
    return Option.some(new URL(text).origin)
  } catch {
    return Option.none()
  }
}

/** `localhost`, an IPv4 address in 127.0.0.0/8 or `::1` (with or without brackets). */
export const isLoopback = (hostname: string): boolean => {
  const name = hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1")
  if (name === "localhost") return true
  if (net.isIPv4(name)) return name.startsWith("127.")
  return net.isIPv6(name) && new URL(`http://[${name}]`).hostname === "[::1]"
}

/**
 * The policy of `options` together with `server.cors` of the configuration. An entry that names no
 * origin is logged and ignored (the CLI refuses such a `--cors` before the server starts).
 */
export const layer = (options: Options) =>
  Layer.effect(
    Policy,
    Effect.gen(function* () {
      const config = yield* Config.Service
      const allowed = new Set<string>()
      for (const entry of [...(options.cors ?? []), ...(config.server.cors ?? [])]) {
        const origin = parse(entry)
        if (Option.isSome(origin)) allowed.add(origin.value)
        else yield* Effect.logWarning(`server.cors: ignoring ${JSON.stringify(entry)}, which is not an origin`)
      }
      return { allowed, listener: Option.fromNullable(options.listener) }
    })
  )

const quote = (text: string): string => (text.length > 200 ? `${text.slice(0, 200)}…` : text)

const forbidden = (error: Errors.ForbiddenOriginError | Errors.ForbiddenHostError) =>
  HttpServerResponse.unsafeJson(error, { status: ApiErrors.status[error._tag] })

/** Whether `host` (a `Host` header) names a loopback address or `localhost` with `port`. */
const loopbackHost = (host: string, port: number): boolean => {
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(host)
  const [, name, given] = match ?? []
  return name !== undefined && isLoopback(name) && Number(given ?? 80) === port
}

// The verdicts of the last few distinct `Host` headers (a client sends the same one on every request):
// keyed by port and header, bounded (cleared when full), so a client cycling headers costs only the check.
const hostVerdicts = new Map<string, boolean>()
const maxHostVerdicts = 64

/** {@link loopbackHost}, remembered for the last few distinct headers. */
const loopbackHostCached = (host: string, port: number): boolean => {
  const key = `${port} ${host}`
  const known = hostVerdicts.get(key)
  if (known !== undefined) return known
  const verdict = loopbackHost(host, port)
  if (hostVerdicts.size >= maxHostVerdicts) hostVerdicts.clear()
  hostVerdicts.set(key, verdict)
  return verdict
}

// Whether each policy's listener is bound to a loopback address (fixed for the policy's life).
const loopbackListeners = new WeakMap<Settings, boolean>()
const loopbackListener = (settings: Settings): boolean => {
  let known = loopbackListeners.get(settings)
  if (known === undefined) {
    known = Option.isSome(settings.listener) && isLoopback(settings.listener.value.hostname)
    loopbackListeners.set(settings, known)
  }
  return known
}

const passed: Effect.Effect<Option.Option<HttpServerResponse.HttpServerResponse>> = Effect.succeed(Option.none())

const ownOrigin = (settings: Settings, host: string | undefined): Option.Option<string> =>
  Option.isSome(settings.listener) && host !== undefined ? parse(`http://${host}`) : Option.none()

/** The headers that let the browser hand an allowed origin's response to its page. */
const corsHeaders = (origin: string) => ({
  "access-control-allow-origin": origin,
  "access-control-allow-credentials": "true",
  vary: "Origin"
})

/** What a preflight is answered with; `maxAge` lets the browser reuse the answer for ten minutes. */
const preflightHeaders = (origin: string) => ({
  ...corsHeaders(origin),
  "access-control-allow-methods": "GET, HEAD, POST, PUT, PATCH, DELETE",
  "access-control-allow-headers": "Content-Type, Authorization, Last-Event-ID",
  "access-control-max-age": "600"
})

/**
 * The verdict on one request under `settings`, checked before anything else (auth included):
 * - on a loopback listener, a `Host` that is not loopback with the listener's port → 403
 *   `ForbiddenHostError`;
 * - an `Origin` header (the literal `null` included) that is neither the server's own nor allowed
 *   → 403 `ForbiddenOriginError`, whatever the method, event streams included;
 * - a preflight (`OPTIONS` with `Access-Control-Request-Method`) from an accepted origin → 204 with
 *   the exact origin, credentials, the methods and the headers `Content-Type`, `Authorization` and
 *   `Last-Event-ID`;
 * - otherwise the request goes on, and every response to an accepted origin, errors included,
 *   echoes that exact origin with credentials allowed (never `*`).
 * `Some` is the response to answer with; `None` lets the request through.
 */
export const check = (
  settings: Settings,
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<Option.Option<HttpServerResponse.HttpServerResponse>> => {
  const host = request.headers.host
  const refusedHost =
    Option.isSome(settings.listener) &&
    loopbackListener(settings) &&
    (host === undefined || !loopbackHostCached(host, settings.listener.value.port))
  // The common case, decided without building an effect: a good `Host` and no `Origin`.
  if (!refusedHost && request.headers.origin === undefined) return passed
  return Effect.gen(function* () {
    if (refusedHost && Option.isSome(settings.listener)) {
      return Option.some(
        forbidden(
          new Errors.ForbiddenHostError({
            message: `Host ${host === undefined ? "(none)" : quote(host)} is not this server: a loopback listener answers only localhost or a loopback address with port ${settings.listener.value.port}`,
            ...(host === undefined ? {} : { host: quote(host) })
          })
        )
      )
    }
    const header = request.headers.origin
    if (header === undefined) return Option.none()
    const origin = parse(header)
    const accepted =
      Option.isSome(origin) &&
      (settings.allowed.has(origin.value) || Option.contains(ownOrigin(settings, host), origin.value))
    if (!accepted) {
      return Option.some(
        forbidden(
          new Errors.ForbiddenOriginError({
            message: `Origin ${quote(header)} is not allowed: start the server with --cors <origin> (or set server.cors) to allow it`,
            origin: quote(header)
          })
        )
      )
    }
    if (request.method === "OPTIONS" && request.headers["access-control-request-method"] !== undefined) {
      return Option.some(HttpServerResponse.empty({ status: 204, headers: preflightHeaders(origin.value) }))
    }
    yield* HttpApp.appendPreResponseHandler((_, response) =>
      Effect.succeed(HttpServerResponse.setHeaders(response, corsHeaders(origin.value)))
    )
    return Option.none()
  })
}
