export * as Transport from "./transport.js"

import { createParser } from "eventsource-parser"
import { ClientError } from "./generated/client-error.js"
import { Page } from "./page.js"

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
  /**
   * Aborting rejects the call with a `ClientError` whose reason is `Transport`. On a stream it closes
   * the connection and fails the pending (or next) iteration step the same way.
   */
  readonly signal?: AbortSignal | undefined
  /**
   * Override the client headers for this call, name by name (case-insensitively). A stream with ids
   * honours `Last-Event-ID` here as its resume position.
   */
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
   * The path parameter that is the rest of the path (`/api/fs/read/{path}`): its value, slashes
   * included, is sent URI-encoded as one segment (see {@link encodeRest}).
   */
  readonly rest?: string
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
    /** Whether the success is bytes: the call resolves to the body as a `Blob` typed by its `Content-Type`. */
    readonly bytes?: boolean
  }
  /** The declared failure tags, by status. */
  readonly errors: Readonly<Record<number, ReadonlyArray<string>>>
  /** Present on a Server-Sent Events operation: how its stream ends abnormally. */
  readonly stream?: {
    /** The `event:` name of the terminal failure frame. */
    readonly failureEvent: string
  }
  /** Present on a cursor-paged list: the call resolves to the Page projected from the envelope. */
  readonly page?: Page.Spec
}

/** Sends one operation and interprets its response; see {@link make}. */
export type Send = <A>(
  operation: Operation,
  input: object | undefined,
  options: RequestOptions | undefined
) => Promise<A>

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
  const root = rootOf(options)
  return async <A>(operation: Operation, input: object | undefined, call: RequestOptions | undefined): Promise<A> => {
    const fields = (input ?? {}) as Readonly<Record<string, unknown>>
    const url = urlOf(root, operation, fields)
    const body = operation.body === null ? undefined : JSON.stringify(pick(fields, operation.body))
    const headers = headersOf(options, call, operation.success.bytes === true ? "*/*" : "application/json")
    if (body !== undefined) headers.set("content-type", "application/json")

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
      if (operation.success.bytes === true && response.status === operation.success.status) {
        return (await response.blob()) as A
      }
      text = await response.text()
    } catch (cause) {
      throw new ClientError({
        reason: "Transport",
        message: `${operation.name}: request failed: ${describe(cause)}`,
        cause
      })
    }
    return interpret(operation, response.status, response.headers.get("content-type"), text) as A
  }
}

/** `baseUrl` without a trailing slash; throws a `TypeError` when it is not an absolute URL. */
const rootOf = (options: ClientOptions): string => {
  const base = new URL(String(options.baseUrl))
  return `${base.origin}${base.pathname.replace(/\/+$/, "")}`
}

const urlOf = (root: string, operation: Operation, fields: Readonly<Record<string, unknown>>): string =>
  `${root}${operation.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
    name === operation.rest ? encodeRest(String(fields[name])) : encodeURIComponent(String(fields[name]))
  )}${search(operation, fields)}`

/**
 * A rest-of-path value as one URI-encoded segment (its slashes as `%2F`), so that no URL parser resolves
 * its dot segments before the server sees them; `""`, `.` and `..` get a leading `./` for the same reason.
 */
export const encodeRest = (value: string): string =>
  encodeURIComponent(value === "" || value === "." || value === ".." ? `./${value}` : value)

/** `accept`, then the client headers, then the call's, each replacing the previous name by name. */
const headersOf = (options: ClientOptions, call: RequestOptions | undefined, accept: string): Headers => {
  const headers = new Headers({ accept })
  for (const [name, value] of Object.entries(options.headers ?? {})) headers.set(name, value)
  for (const [name, value] of Object.entries(call?.headers ?? {})) headers.set(name, value)
  return headers
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
    if (operation.page !== undefined) return Page.project(value, operation.page)
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
  throw new ClientError({
    reason: "UnexpectedStatus",
    message: `${operation.name}: unexpected response status ${status}`,
    status,
    body: text
  })
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

// ── Server-Sent Events ────────────────────────────────────────────────────────────────────────────

/** Opens one streaming operation; see {@link makeStream}. */
export type Open = <A>(
  operation: Operation,
  input: object | undefined,
  options: RequestOptions | undefined
) => AsyncIterable<A>

/**
 * Binds the client options into an {@link Open}. Like {@link make} it validates `baseUrl` synchronously
 * and performs no I/O.
 *
 * The returned iterable is lazy and cold: nothing is sent until iteration starts, and each iteration
 * opens its own connection on its first `next()`. The request's failures surface from that `next()`:
 * a declared error status rejects with the tagged body, anything else with a `ClientError` (as for
 * {@link Send}; a success without a `text/event-stream` content type is `UnsupportedContentType`).
 * Each SSE event then yields its `data` parsed as JSON (the envelope; a stream with ids has the id
 * inside it, e.g. `durable.seq`). Comment lines (heartbeats) are skipped.
 *
 * The iteration ends when the server ends the body. It fails with a `ClientError`: `Transport` when
 * the connection breaks or `signal` aborts, `MalformedResponse` for data that is not JSON, and
 * `StreamFailure` when the server ends the stream with its failure frame (the frame's data is the
 * error's `body`). Ending the iteration (`break`, `return()`) closes the connection. Nothing
 * reconnects: resuming is the caller's (e.g. `after` or `Last-Event-ID` with the last seq seen).
 */
export const makeStream = (options: ClientOptions): Open => {
  const root = rootOf(options)
  return <A>(operation: Operation, input: object | undefined, call: RequestOptions | undefined): AsyncIterable<A> => ({
    [Symbol.asyncIterator]: () =>
      new EventIterator<A>(
        options,
        operation,
        urlOf(root, operation, (input ?? {}) as Readonly<Record<string, unknown>>),
        call
      )
  })
}

const done = { done: true, value: undefined } as const

/**
 * One connection. States: not opened → open (reading) → finished (body ended, failed or closed).
 * Steps are meant to be awaited one at a time (as `for await` does); `return()` may be called at any
 * moment and resolves a pending step as done.
 */
class EventIterator<A> implements AsyncIterator<A, undefined> {
  private readonly controller = new AbortController()
  private reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  private readonly decoder = new TextDecoder()
  private readonly ready: Array<A> = []
  /** Thrown once the events before it have been yielded. */
  private failure: unknown = undefined
  private ended = false
  /** The connection is closed (for whatever reason); nothing more is read. */
  private closed = false
  /** The caller ended the iteration (`return()`): pending and later steps are done, not failures. */
  private returned = false
  /** The caller's signal aborted: pending and later steps fail with a Transport ClientError. */
  private aborted = false
  private readonly onAbort = () => {
    this.aborted = true
    this.teardown()
  }
  private readonly parser = createParser({
    onEvent: (message) => {
      if (this.failure !== undefined) return
      const failureEvent = this.operation.stream?.failureEvent
      if (failureEvent !== undefined && message.event === failureEvent) {
        this.failure = new ClientError({
          reason: "StreamFailure",
          message: `${this.operation.name}: the server ended the stream with a failure: ${message.data}`,
          status: this.operation.success.status,
          body: message.data
        })
        return
      }
      try {
        this.ready.push(JSON.parse(message.data) as A)
      } catch (cause) {
        this.failure = new ClientError({
          reason: "MalformedResponse",
          message: `${this.operation.name}: an event's data is not valid JSON`,
          status: this.operation.success.status,
          body: message.data,
          cause
        })
      }
    }
  })

  constructor(
    private readonly options: ClientOptions,
    private readonly operation: Operation,
    private readonly url: string,
    private readonly call: RequestOptions | undefined
  ) {}

  async next(): Promise<IteratorResult<A, undefined>> {
    try {
      if (this.reader === undefined && !this.closed) await this.open()
      while (this.ready.length === 0) {
        if (this.failure !== undefined) {
          const failure = this.failure
          this.teardown()
          throw failure
        }
        if (this.aborted) throw this.abortError()
        if (this.closed || this.ended || this.reader === undefined) return done
        const chunk = await this.reader.read()
        if (chunk.done) {
          this.parser.feed(this.decoder.decode())
          this.ended = true
          this.teardown()
        } else {
          this.parser.feed(this.decoder.decode(chunk.value, { stream: true }))
        }
      }
      return { done: false, value: this.ready.shift() as A }
    } catch (cause) {
      if (this.returned && !this.aborted) return done
      this.teardown()
      if (this.aborted) throw this.abortError(cause)
      throw isClientError(cause) || !(cause instanceof Error) ? cause : this.transportError(cause)
    }
  }

  async return(): Promise<IteratorResult<A, undefined>> {
    this.returned = true
    this.teardown()
    return done
  }

  private async open(): Promise<void> {
    const signal = this.call?.signal
    if (signal?.aborted) {
      this.aborted = true
      throw this.abortError(signal.reason)
    }
    signal?.addEventListener("abort", this.onAbort, { once: true })
    const operation = this.operation
    let response: Response
    try {
      const fetch = this.options.fetch ?? globalThis.fetch
      response = await fetch(this.url, {
        method: operation.method,
        headers: headersOf(this.options, this.call, "text/event-stream"),
        signal: this.controller.signal
      })
    } catch (cause) {
      throw this.transportError(cause)
    }
    if (this.closed) {
      void response.body?.cancel().catch(() => {})
      return
    }
    const contentType = response.headers.get("content-type")
    if (response.status !== operation.success.status) {
      let text: string
      try {
        text = await response.text()
      } catch (cause) {
        throw this.transportError(cause)
      }
      interpret(operation, response.status, contentType, text)
    }
    if (contentType === null || !/^text\/event-stream\s*(?:;|$)/i.test(contentType.trim()) || response.body === null) {
      void response.body?.cancel().catch(() => {})
      throw new ClientError({
        reason: "UnsupportedContentType",
        message: `${operation.name}: expected a text/event-stream response, got ${contentType ?? "no content type"}`,
        status: response.status
      })
    }
    this.reader = response.body.getReader()
  }

  /** Closes the connection (idempotent): aborts the request and cancels the body. */
  private teardown(): void {
    if (this.closed) return
    this.closed = true
    this.call?.signal?.removeEventListener("abort", this.onAbort)
    this.controller.abort()
    // An in-memory Response (an embedded host's fetch) ignores the abort signal: cancel its body too.
    void this.reader?.cancel().catch(() => {})
  }

  private abortError(cause?: unknown): ClientError {
    return new ClientError({
      reason: "Transport",
      message: `${this.operation.name}: the stream was aborted`,
      cause: cause ?? this.call?.signal?.reason
    })
  }

  private transportError(cause: unknown): ClientError {
    return new ClientError({
      reason: "Transport",
      message: `${this.operation.name}: stream failed: ${describe(cause)}`,
      cause
    })
  }
}

const isClientError = (u: unknown): u is ClientError => u instanceof ClientError
