export * as Transport from "./transport.js"

import { ClientError } from "./generated/client-error.js"

/** Options of `createOpencodeClient`. */
export interface ClientOptions {
  /** The server's absolute URL, optionally with a path prefix: `http://127.0.0.1:4096`. */
  readonly baseUrl: string | URL
  /** The fetch to send requests with. Defaults to `globalThis.fetch`, looked up at each call. */
  readonly fetch?: typeof globalThis.fetch | undefined
  /** Sent with every request. Per-call headers replace them name by name (case-insensitively). */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** Per-call transport options. They never enter the domain input. */
export interface RequestOptions {
  /** Aborting rejects the call with a `ClientError` whose reason is `Transport`. */
  readonly signal?: AbortSignal | undefined
  /** Override the client headers for this call, name by name (case-insensitively). */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** How one operation travels; emitted for every operation by the Promise emitter. */
export interface Operation {
  /** `group.method`, used in error messages. */
  readonly name: string
  readonly method: string
  /** The path template; each `{name}` is replaced by the URI-encoded input field of that name. */
  readonly path: string
  /**
   * The query parameters, in order. `form`: `name=value` (arrays repeat the key). `deepObject`: each
   * defined member of the object value as `name[member]=value`. Undefined values are omitted.
   */
  readonly query: ReadonlyArray<{ readonly name: string; readonly style: "form" | "deepObject" }>
  /** The input fields sent as the JSON body, or `null` when the operation has no body. */
  readonly body: ReadonlyArray<string> | null
  readonly success: {
    readonly status: number
    /** Whether the success carries a JSON body (otherwise the call resolves to `undefined`). */
    readonly json: boolean
    /** The envelope member to resolve to, or `null` to resolve to the whole body. */
    readonly unwrap: string | null
  }
  /** The declared failure tags, by status. */
  readonly errors: Readonly<Record<number, ReadonlyArray<string>>>
}

/** Sends one operation and interprets its response; see {@link make}. */
export type Send = <A>(operation: Operation, input: object | undefined, options: RequestOptions | undefined) => Promise<A>

/**
 * Binds the client options into a {@link Send}. Validates `baseUrl` synchronously (a relative or invalid
 * URL throws a `TypeError`) and performs no I/O.
 *
 * A call resolves when the response has the operation's success status: to the parsed JSON body (or its
 * `unwrap` member), after checking only the content type and the JSON syntax. It rejects with the parsed
 * body itself when the status is a declared error status and the body's `_tag` is declared for it, and
 * with a `ClientError` otherwise (see `ClientErrorReason`).
 */
export const make = (options: ClientOptions): Send => {
  const base = new URL(String(options.baseUrl))
  const root = `${base.origin}${base.pathname.replace(/\/+$/, "")}`
  return async <A>(operation: Operation, input: object | undefined, call: RequestOptions | undefined): Promise<A> => {
    const fields = (input ?? {}) as Readonly<Record<string, unknown>>
    const url = `${root}${operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(String(fields[name])))}${search(operation, fields)}`
    const body = operation.body === null ? undefined : JSON.stringify(pick(fields, operation.body))
    const headers = new Headers({ accept: "application/json" })
    if (body !== undefined) headers.set("content-type", "application/json")
    for (const [name, value] of Object.entries(options.headers ?? {})) headers.set(name, value)
    for (const [name, value] of Object.entries(call?.headers ?? {})) headers.set(name, value)

    let response: Response
    let text: string
    try {
      const fetch = options.fetch ?? globalThis.fetch
      response = await fetch(url, {
        method: operation.method,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(call?.signal === undefined ? {} : { signal: call.signal })
      })
      text = await response.text()
    } catch (cause) {
      throw new ClientError({ reason: "Transport", message: `${operation.name}: request failed: ${describe(cause)}`, cause })
    }
    return interpret(operation, response.status, response.headers.get("content-type"), text) as A
  }
}

const search = (operation: Operation, fields: Readonly<Record<string, unknown>>): string => {
  const params = new URLSearchParams()
  for (const { name, style } of operation.query) {
    const value = fields[name]
    if (value === undefined) continue
    if (style === "deepObject" && typeof value === "object" && value !== null) {
      for (const [member, memberValue] of Object.entries(value)) append(params, `${name}[${member}]`, memberValue)
    } else {
      append(params, name, value)
    }
  }
  const query = params.toString()
  return query === "" ? "" : `?${query}`
}

const append = (params: URLSearchParams, key: string, value: unknown): void => {
  if (value === undefined) return
  if (Array.isArray(value)) for (const item of value) append(params, key, item)
  else params.append(key, String(value))
}

const pick = (fields: Readonly<Record<string, unknown>>, names: ReadonlyArray<string>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const name of names) if (fields[name] !== undefined) out[name] = fields[name]
  return out
}

const isJson = (contentType: string | null): boolean =>
  contentType !== null && /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(contentType.trim())

const interpret = (operation: Operation, status: number, contentType: string | null, text: string): unknown => {
  if (status === operation.success.status) {
    if (!operation.success.json) return undefined
    if (!isJson(contentType)) {
      throw new ClientError({
        reason: "UnsupportedContentType",
        message: `${operation.name}: expected a JSON response, got ${contentType ?? "no content type"}`,
        status,
        body: text
      })
    }
    const value = parse(operation, status, text)
    const unwrap = operation.success.unwrap
    // Shapes are trusted, not validated: a body without the envelope member resolves to undefined.
    return unwrap === null ? value : (value as Readonly<Record<string, unknown>> | null)?.[unwrap]
  }
  const tags = operation.errors[status]
  if (tags !== undefined && isJson(contentType)) {
    const value = parse(operation, status, text)
    const tag = typeof value === "object" && value !== null ? (value as { readonly _tag?: unknown })._tag : undefined
    if (typeof tag === "string" && tags.includes(tag)) throw value
  }
  throw new ClientError({ reason: "UnexpectedStatus", message: `${operation.name}: unexpected response status ${status}`, status, body: text })
}

const parse = (operation: Operation, status: number, text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch (cause) {
    throw new ClientError({
      reason: "MalformedResponse",
      message: `${operation.name}: the ${status} response is not valid JSON`,
      status,
      body: text,
      cause
    })
  }
}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))
