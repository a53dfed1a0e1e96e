export * as Transport from "./transport.js"

import { ClientError, type ClientErrorReason } from "./generated/client-error.js"
import { type Spec as PageSpec, project, walk } from "./page.js"
import { parser } from "./sse.js"

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

/**
 * The operation table the Promise emitter writes: for each client namespace, for each method, the
 * operation's {@link Descriptor}. The table is data, interpreted by {@link client}: the client ships one
 * short string per operation instead of one function each.
 */
export type Table = Readonly<Record<string, Readonly<Record<string, Descriptor>>>>

/**
 * How one operation travels, as space-separated tokens: the method, the path template (each `{name}`
 * is replaced by the URI-encoded input field of that name), then any of
 * - `?name`: a `form` query parameter (`name=value`; an array repeats the key);
 * - `&name`: a `deepObject` query parameter (each defined member of the object value as
 *   `name[member]=value`). Query parameters are sent in token order; undefined values are omitted;
 * - `.name`: an input field sent in the JSON body (an operation with a body has at least one such
 *   token; `.` alone is a body without fields). Undefined fields are omitted;
 * - `NNN`: the success status, when it is not 200;
 * - `NNNTag`: a declared failure: status `NNN` with the body's `_tag` `Tag`;
 * - `key=value` or `key` (a flag): an {@link Operation} setting: `rest=name`, `empty`, `bytes`,
 *   `unwrap=name`, `stream=event`, and a paged list's `pages`, `items`, `links` and `cursor`.
 * The table's shared tokens (the failures every operation declares) are appended to each descriptor.
 */
export type Descriptor = string

/** One operation, as {@link operation} reads its descriptor. */
export interface Operation extends Partial<PageSpec> {
  /** `namespace.method`, used in error messages. */
  readonly name: string
  readonly method: string
  readonly path: string
  /**
   * The path parameter that is the rest of the path (`/api/fs/read/{path}`): its value, slashes
   * included, is sent URI-encoded as one segment, so that no URL parser resolves its dot segments
   * before the server sees them (`""`, `.` and `..` get a leading `./` for the same reason).
   */
  readonly rest?: string
  /** The query parameters in order: the name and whether its style is `deepObject`. */
  readonly query: Array<readonly [name: string, deep: boolean]>
  /** The input fields sent as the JSON body; absent when the operation has no body. */
  readonly body?: Array<string>
  readonly status: number
  /** The success carries no body: the call resolves to `undefined`. */
  readonly empty?: true
  /** The success is bytes: the call resolves to the body as a `Blob` typed by its `Content-Type`. */
  readonly bytes?: true
  /** Resolve to this member of the JSON body instead of the whole body. */
  readonly unwrap?: string
  /** The `event:` name of a stream's terminal failure frame; present on a Server-Sent Events operation. */
  readonly stream?: string
  /** The declared failure tags, by status. */
  readonly errors: Record<number, Array<string>>
}

/** Reads one descriptor; `name` is `namespace.method`. */
export const operation = (name: string, descriptor: Descriptor): Operation => {
  const [method, path, ...tokens] = descriptor.split(" ") as [string, string, ...Array<string>]
  const op: { -readonly [K in keyof Operation]: Operation[K] } & Record<string, unknown> = {
    name,
    method,
    path,
    query: [],
    status: 200,
    errors: {}
  }
  for (const token of tokens) {
    const kind = token[0] as string
    const value = token.slice(1)
    if (kind === "?" || kind === "&") op.query.push([value, kind === "&"])
    else if (kind === ".") op.body = [...(op.body ?? []), value]
    // A digit: a status.
    else if (kind <= "9") {
      if (token.length === 3) op.status = +token
      else {
        const status = +token.slice(0, 3)
        op.errors[status] = [...(op.errors[status] ?? []), token.slice(3)]
      }
    } else {
      const [key, setting = true] = token.split("=") as [string, string?]
      op[key] = setting
    }
  }
  return op
}

/**
 * A client over `table`: for each namespace an object with one method per operation (and each paged
 * list's `pages` companion). `shared` is appended to every descriptor: the tokens every operation has,
 * each after a space. Validates `baseUrl` synchronously (a relative or invalid URL throws a
 * `TypeError`) and performs no I/O.
 *
 * A call resolves when the response has the operation's success status: to the parsed JSON body (or its
 * `unwrap` member, or its Page), after checking only the content type and the JSON syntax. It rejects
 * with the parsed body itself when the status is a declared error status and the body's `_tag` is
 * declared for it, and with a `ClientError` otherwise (see `ClientErrorReason`).
 *
 * A stream method returns a lazy, cold iterable: nothing is sent until iteration starts, and each
 * iteration opens its own connection on its first `next()`. The request's failures surface from that
 * `next()` as for a call (a success without a `text/event-stream` content type is
 * `UnsupportedContentType`). Each SSE event then yields its `data` parsed as JSON (the envelope; a
 * stream with ids has the id inside it, e.g. `durable.seq`). Comment lines (heartbeats) are skipped.
 * The iteration ends when the server ends the body. It fails with a `ClientError`: `Transport` when the
 * connection breaks or `signal` aborts, `MalformedResponse` for data that is not JSON, and
 * `StreamFailure` when the server ends the stream with its failure frame (the frame's data is the
 * error's `body`). Ending the iteration (`break`, `return()`) closes the connection. Nothing
 * reconnects: resuming is the caller's (e.g. `after` or `Last-Event-ID` with the last seq seen).
 */
export const client = (options: ClientOptions, table: Table, shared: string): unknown => {
  const base = new URL(options.baseUrl)
  const root = `${base.origin}${base.pathname.replace(/\/+$/, "")}`
  /**
   * Sends one operation and interprets its response. A stream's success resolves to the `Response`
   * itself, its body unread; a stream is sent with its own `signal` (see {@link events}).
   */
  const send = async (
    op: Operation,
    input: Fields | undefined,
    call: RequestOptions | undefined,
    signal = call?.signal
  ): Promise<unknown> => {
    const fields = input ?? {}
    const url = urlOf(root, op, fields)
    const body = op.body && JSON.stringify(pick(fields, op.body))
    const headers = headersOf(options, call, op.stream ? "text/event-stream" : op.bytes ? "*/*" : "application/json")
    if (body) headers.set("content-type", "application/json")
    let response: Response
    let text: string
    try {
      // An undefined `body` or `signal` is an absent one (WebIDL dictionaries), as fetch reads them.
      response = await (options.fetch ?? globalThis.fetch)(url, {
        method: op.method,
        headers,
        body,
        signal
      } as RequestInit)
      if (response.status === op.status && (op.stream || op.bytes)) return op.stream ? response : await response.blob()
      text = await response.text()
    } catch (cause) {
      throw fail(op, "Transport", `${op.stream ? "stream" : "request"} failed: ${describe(cause)}`, { cause })
    }
    return interpret(op, response.status, response.headers.get("content-type"), text)
  }
  const out: Record<string, Record<string, unknown>> = {}
  for (const [namespace, descriptors] of Object.entries(table)) {
    const methods: Record<string, unknown> = {}
    out[namespace] = methods
    for (const [method, descriptor] of Object.entries(descriptors)) {
      const op = operation(`${namespace}.${method}`, descriptor + shared)
      methods[method] = op.stream
        ? (input?: Fields, call?: RequestOptions): AsyncIterable<unknown> => ({
            [Symbol.asyncIterator]: () => events(send, op, input, call)
          })
        : (input?: Fields, call?: RequestOptions) => send(op, input, call)
      if (op.pages) methods[op.pages] = (query?: Fields, call?: RequestOptions) => walk(send, op as Paged, query, call)
    }
  }
  return out
}

type Fields = Readonly<Record<string, unknown>>

/** A cursor-paged list's operation. */
type Paged = Operation & PageSpec

/** Sends one operation and interprets its response; see {@link client}. */
export type Send = (
  op: Operation,
  input: Fields | undefined,
  call: RequestOptions | undefined,
  signal?: AbortSignal
) => Promise<unknown>

const fail = (
  op: Operation,
  reason: ClientErrorReason,
  message: string,
  details: { readonly status?: number; readonly body?: string; readonly cause?: unknown }
): ClientError => new ClientError({ reason, message: `${op.name}: ${message}`, ...details })

const param = /\{([^}]+)\}/g

const urlOf = (root: string, op: Operation, fields: Fields): string => {
  const params = new URLSearchParams()
  for (const [name, deep] of op.query) {
    const value = fields[name]
    if (deep && typeof value === "object" && value !== null) {
      for (const member in value) append(params, `${name}[${member}]`, (value as Fields)[member])
    } else append(params, name, value)
  }
  const query = `${params}`
  return `${root}${op.path.replace(param, (_, name: string) => {
    const value = String(fields[name])
    return encodeURIComponent(name === op.rest && /^\.?\.?$/.test(value) ? `./${value}` : value)
  })}${query && `?${query}`}`
}

/** `accept`, then the client headers, then the call's, each replacing the previous name by name. */
const headersOf = (options: ClientOptions, call: RequestOptions | undefined, accept: string): Headers => {
  const headers = new Headers({ accept })
  for (const source of [options.headers, call?.headers]) for (const name in source) headers.set(name, source[name]!)
  return headers
}

const append = (params: URLSearchParams, key: string, value: unknown): void => {
  if (Array.isArray(value)) for (const item of value) append(params, key, item)
  else if (value !== undefined) params.append(key, String(value))
}

const pick = (fields: Fields, names: ReadonlyArray<string>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const name of names) if (fields[name] !== undefined) out[name] = fields[name]
  return out
}

const isJson = (contentType: string | null): boolean =>
  /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(`${contentType}`.trim())

const interpret = (op: Operation, status: number, contentType: string | null, text: string): unknown => {
  if (status === op.status) {
    if (op.empty) return undefined
    if (!isJson(contentType)) {
      throw fail(op, "UnsupportedContentType", `expected a JSON response, got ${contentType ?? "no content type"}`, {
        status,
        body: text
      })
    }
    const value = parse(op, status, text)
    if (op.pages) return project(value, op as Paged)
    // Shapes are trusted, not validated: a body without the envelope member resolves to undefined.
    return op.unwrap === undefined ? value : (value as Fields | null)?.[op.unwrap]
  }
  const tags = op.errors[status]
  if (tags && isJson(contentType)) {
    const value = parse(op, status, text)
    const tag = (value as { readonly _tag?: unknown } | null)?._tag
    if (typeof tag === "string" && tags.includes(tag)) throw value
  }
  throw fail(op, "UnexpectedStatus", `unexpected response status ${status}`, { status, body: text })
}

const parse = (op: Operation, status: number, text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch (cause) {
    throw fail(op, "MalformedResponse", `the ${status} response is not valid JSON`, { status, body: text, cause })
  }
}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const ignore = (): void => {}

const done = { done: true, value: undefined } as const

/**
 * One connection of a stream (see {@link client}). States: not opened → open (reading) → closed (body
 * ended, failed or closed). Steps are meant to be awaited one at a time (as `for await` does);
 * `return()` may be called at any moment and resolves a pending step as done.
 */
const events = (
  send: Send,
  op: Operation,
  input: Fields | undefined,
  call: RequestOptions | undefined
): AsyncIterator<unknown, undefined> => {
  const controller = new AbortController()
  const decoder = new TextDecoder()
  const ready: Array<unknown> = []
  const signal = call?.signal
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  /** Thrown once the events before it have been yielded. */
  let failure: unknown
  /** The connection is closed (for whatever reason); nothing more is read. */
  let closed = false
  /** The caller ended the iteration (`return()`): pending and later steps are done, not failures. */
  let returned = false
  /** The caller's signal aborted: pending and later steps fail with a Transport ClientError. */
  let aborted = false

  /** Closes the connection (idempotent): aborts the request and cancels the body. */
  const teardown = (): void => {
    if (closed) return
    closed = true
    signal?.removeEventListener("abort", onAbort)
    controller.abort()
    // An in-memory Response (an embedded host's fetch) ignores the abort signal: cancel its body too.
    reader?.cancel().catch(ignore)
  }
  const onAbort = (): void => {
    aborted = true
    teardown()
  }
  const abortError = (cause?: unknown): ClientError =>
    fail(op, "Transport", "the stream was aborted", { cause: cause ?? signal?.reason })
  const feed = parser((event, data) => {
    if (failure !== undefined) return
    try {
      if (event !== op.stream) ready.push(JSON.parse(data))
      else
        failure = fail(op, "StreamFailure", `the server ended the stream with a failure: ${data}`, {
          status: op.status,
          body: data
        })
    } catch (cause) {
      failure = fail(op, "MalformedResponse", "an event's data is not valid JSON", {
        status: op.status,
        body: data,
        cause
      })
    }
  })

  const open = async (): Promise<void> => {
    if (signal?.aborted) {
      aborted = true
      throw abortError()
    }
    signal?.addEventListener("abort", onAbort, { once: true })
    // A failure status rejects here, as for a call; `stream failed: …` when no response was read.
    const response = (await send(op, input, call, controller.signal)) as Response
    const { status, body } = response
    const contentType = response.headers.get("content-type")
    // Closed meanwhile (`return()` during the request), or not an event stream: the body is not read.
    if (closed || !/^text\/event-stream\s*(?:;|$)/i.test(`${contentType}`.trim()) || body === null) {
      body?.cancel().catch(ignore)
      if (closed) return
      throw fail(
        op,
        "UnsupportedContentType",
        `expected a text/event-stream response, got ${contentType ?? "no content type"}`,
        {
          status
        }
      )
    }
    reader = body.getReader()
  }

  return {
    async next() {
      try {
        if (reader === undefined && !closed) await open()
        while (ready.length === 0) {
          // The catch below closes the connection.
          if (failure !== undefined) throw failure
          if (aborted) throw abortError()
          // Closed: the body ended (its last events are parsed), `return()` was called or the open lost the race.
          if (closed || reader === undefined) return done
          const chunk = await reader.read()
          // The last decode (no `stream`) flushes the decoder.
          feed(decoder.decode(chunk.value, { stream: !chunk.done }))
          if (chunk.done) teardown()
        }
        return { done: false, value: ready.shift() }
      } catch (cause) {
        if (returned && !aborted) return done
        teardown()
        if (aborted) throw abortError(cause)
        throw cause instanceof ClientError || !(cause instanceof Error)
          ? cause
          : fail(op, "Transport", `stream failed: ${describe(cause)}`, { cause })
      }
    },
    async return() {
      returned = true
      teardown()
      return done
    }
  }
}
