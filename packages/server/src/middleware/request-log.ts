export * as RequestLog from "./request-log.js"

import { HttpMiddleware, HttpServerError, HttpServerRequest } from "@effect/platform"
import { Quote } from "@opencode-ai/schema"
import { Clock, Effect, Exit } from "effect"
import { ServerApi } from "../api.js"

/**
 * One log line per HTTP request, written when its response starts (for an event stream, when the
 * stream opens): `method`, `route`, `status` and `durationMs`, plus `sessionID` when the route names
 * one. Mutations (POST, PUT, PATCH, DELETE) are logged at INFO, reads at DEBUG, and any request
 * answered 5xx at WARN.
 *
 * `route` is the operation's path template as the API declares it (`/api/session/{sessionID}/prompt`),
 * or, for a path no operation declares, the path itself (clipped): never the query string, which may
 * carry a stream token or a PTY ticket. No header is logged. The lines the request's handling logs
 * carry its `sessionID` too.
 */

interface Template {
  readonly method: string
  readonly route: string
  /** Per segment: a literal, a named parameter (`:name`) or the rest of the path (`*`). */
  readonly segments: ReadonlyArray<{ readonly kind: "literal" | "param" | "rest"; readonly value: string }>
}

const templates: ReadonlyArray<Template> = Object.values(ServerApi.api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint): Template => {
    const declared: string = endpoint.path
    const segments = declared
      .split("/")
      .filter((s: string) => s !== "")
      .map((s: string) =>
        s === "*"
          ? { kind: "rest" as const, value: "*" }
          : s.startsWith(":")
            ? { kind: "param" as const, value: s.slice(1) }
            : { kind: "literal" as const, value: s }
      )
    const route = `/${segments.map((s) => (s.kind === "param" ? `{${s.value}}` : s.value)).join("/")}`
    return { method: endpoint.method, route, segments }
  })
)

const rank = { literal: 0, param: 1, rest: 2 } as const

/**
 * The templates a request can match, by method and segment count: those of exactly that many segments,
 * and those ending in the rest-of-path wildcard, in declaration order (ties go to the first declared).
 */
const candidates = (() => {
  const byShape = new Map<string, ReadonlyArray<Template>>()
  return (method: string, count: number): ReadonlyArray<Template> => {
    const key = `${method} ${count}`
    let found = byShape.get(key)
    if (found === undefined) {
      found = templates.filter((template) => {
        const last = template.segments[template.segments.length - 1]
        return template.method === method && (last?.kind === "rest" || template.segments.length === count)
      })
      byShape.set(key, found)
    }
    return found
  }
})()

/**
 * The declared operation a request reaches, with its path parameters: a literal segment beats a
 * parameter, which beats the rest-of-path wildcard, segment by segment (as the router decides).
 */
export const match = (
  method: string,
  pathname: string
): { readonly route: string; readonly params: Readonly<Record<string, string>> } | undefined => {
  const parts = pathname.split("/").filter((s) => s !== "")
  const wanted = method === "HEAD" ? ["HEAD", "GET"] : [method]
  let best: { template: Template; params: Record<string, string>; score: ReadonlyArray<number> } | undefined
  for (const template of wanted.length === 1
    ? candidates(method, parts.length)
    : templates.filter((template) => wanted.includes(template.method))) {
    const params: Record<string, string> = {}
    const score: Array<number> = []
    let matched = true
    for (let i = 0; i < template.segments.length; i++) {
      const segment = template.segments[i]!
      if (segment.kind === "rest") {
        score.push(rank.rest)
        break
      }
      const part = parts[i]
      if (part === undefined || (segment.kind === "literal" && part !== segment.value)) {
        matched = false
        break
      }
      if (segment.kind === "param") params[segment.value] = decodeURIComponentSafe(part)
      score.push(rank[segment.kind])
    }
    const last = template.segments[template.segments.length - 1]
    if (!matched || (last?.kind !== "rest" && parts.length !== template.segments.length)) continue
    if (best === undefined || better(score, best.score)) best = { template, params, score }
  }
  return best === undefined ? undefined : { route: best.template.route, params: best.params }
}

const better = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): boolean => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! < b[i]!
  return a.length > b.length
}

const decodeURIComponentSafe = (part: string): string => {
  try {
    return decodeURIComponent(part)
  } catch {
    return part
  }
}

const reads = new Set(["GET", "HEAD", "OPTIONS"])

/** The middleware the network listener serves the API through. */
export const middleware = HttpMiddleware.make((app) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const start = yield* Clock.currentTimeNanos
    const pathname = request.url.split("?")[0] ?? request.url
    const matched = match(request.method, pathname)
    const sessionID = matched?.params.sessionID
    const annotate = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      sessionID === undefined ? effect : Effect.annotateLogs(effect, { sessionID })
    const exit = yield* Effect.exit(annotate(app))
    const status = Exit.isSuccess(exit)
      ? exit.value.status
      : (yield* HttpServerError.causeResponse(exit.cause))[0].status
    const end = yield* Clock.currentTimeNanos
    const fields = {
      method: request.method,
      route: matched?.route ?? Quote.clip(pathname),
      status,
      durationMs: Math.round(Number(end - start) / 100_000) / 10
    }
    const log = status >= 500 ? Effect.logWarning : reads.has(request.method) ? Effect.logDebug : Effect.logInfo
    yield* annotate(log("request", fields))
    return yield* exit
  })
)
