export * as BodyLimit from "./body-limit.js"

import * as http from "node:http"
import { HttpMethod, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Errors } from "@opencode-ai/schema"
import { Effect, Option, Stream } from "effect"

/** The request body limit unless `server.max_body` sets one: 10 MiB. */
export const defaultMaxBody = 10 * 1024 * 1024

/**
 * The deepest JSON body accepted: arrays and objects nested at most 100 levels. Deeper documents are
 * refused before they are decoded (the decoder and its error formatter recurse per level).
 */
export const maxJsonDepth = 100

/**
 * Whether the JSON text in `bytes` nests arrays or objects deeper than `max`. A linear scan that
 * skips string contents; it works on UTF-8 bytes as is, since every structural character is ASCII
 * and no byte of a multi-byte sequence is. Malformed JSON is left for the parser to report.
 */
export const exceedsDepth = (bytes: Uint8Array, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]
    if (inString) {
      if (c === 0x5c)
        i++ // a backslash escapes the next character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

const tooLarge = (limit: number) =>
  HttpServerResponse.unsafeJson(
    new Errors.PayloadTooLargeError({
      limit,
      message: `The request body is larger than ${limit} bytes (the server's max_body)`
    }),
    { status: 413 }
  )

/** How long the rest of a refused body is read and dropped before the connection is cut. */
const discardFor = 10_000

/**
 * Reads the rest of a refused body into nothing. Closing the connection at once would reset a client
 * that is still sending, before it reads the 413; so the bytes are dropped as they arrive (memory stays
 * flat), for at most {@link discardFor} ms, after which the connection is destroyed.
 */
const discard = (source: http.IncomingMessage) => {
  if (source.readableEnded) return
  const timer = setTimeout(() => source.destroy(), discardFor)
  timer.unref()
  source.once("end", () => clearTimeout(timer))
  source.once("close", () => clearTimeout(timer))
  source.resume()
}

const tooDeep = HttpServerResponse.unsafeJson(
  new Errors.InvalidRequestError({
    kind: "body",
    message: `The request body nests arrays or objects deeper than ${maxJsonDepth} levels`
  }),
  { status: 400 }
)

/**
 * A Node request's body, read until it ends or passes `limit` bytes (`None`). Past the limit nothing
 * more is kept: the rest is discarded as it arrives, so memory stays within `limit` whatever the
 * client sends, with or without a Content-Length. Interruption (the client went away) stops reading.
 */
const readNode = (source: http.IncomingMessage, limit: number) =>
  Effect.async<Option.Option<Buffer>>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const detach = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        detach()
        chunks.length = 0
        discard(source)
        resume(Effect.succeed(Option.none()))
      } else chunks.push(chunk)
    }
    const onEnd = () => {
      detach()
      resume(Effect.succeed(Option.some(Buffer.concat(chunks, size))))
    }
    const onError = () => {
      detach()
      resume(Effect.interrupt)
    }
    source.on("data", onData)
    source.once("end", onEnd)
    source.once("error", onError)
    return Effect.sync(detach)
  })

/** A web request's body (the embedded host), read like {@link readNode}. */
const readWeb = (request: HttpServerRequest.HttpServerRequest, limit: number) =>
  Effect.gen(function* () {
    const chunks: Array<Uint8Array> = []
    let size = 0
    let over = false
    yield* request.stream.pipe(
      Stream.takeUntil((chunk) => {
        size += chunk.length
        over = size > limit
        if (!over) chunks.push(chunk)
        return over
      }),
      Stream.runDrain,
      Effect.orDie
    )
    return over ? Option.none<Buffer>() : Option.some(Buffer.concat(chunks, size))
  })

/**
 * A body already read, as the source of the request the app sees: the part of a web `Request` that
 * `HttpServerRequest.fromWeb` reads (`method`, `url`, `body`, `text()`, `arrayBuffer()`), served from
 * memory. Not a web `Request` itself: constructing one and reading its text costs about 40 µs, and the
 * first one loads Node's fetch implementation, which the server otherwise never needs: the first
 * request with a body took 25–35 ms longer, and the server held 3–4 MiB more after 200 of them. `text()` decodes UTF-8 as a web
 * `Request` does (a leading byte order mark dropped, invalid bytes replaced); each call answers anew.
 */
class BufferedBody implements Pick<Request, "method" | "url" | "body" | "text" | "arrayBuffer"> {
  constructor(
    readonly method: string,
    readonly url: string,
    private readonly bytes: Buffer
  ) {}
  /** Read by `fromWeb` only when `modify` is given no headers; the guard always gives the request's own. */
  readonly headers = {}
  get body(): ReadableStream<Uint8Array<ArrayBuffer>> {
    const bytes = new Uint8Array(this.arrayBufferCopy())
    return new ReadableStream({
      start(controller) {
        controller.enqueue(bytes)
        controller.close()
      }
    })
  }
  text(): Promise<string> {
    return Promise.resolve(new TextDecoder().decode(this.bytes))
  }
  arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.resolve(this.arrayBufferCopy())
  }
  private arrayBufferCopy(): ArrayBuffer {
    const copy = new ArrayBuffer(this.bytes.length)
    new Uint8Array(copy).set(this.bytes)
    return copy
  }
}

const hasBody = (request: HttpServerRequest.HttpServerRequest, source: unknown): boolean => {
  if (!HttpMethod.hasBody(request.method)) return false
  if (source instanceof http.IncomingMessage) {
    const length = request.headers["content-length"]
    return request.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0")
  }
  return source instanceof Request && source.body !== null
}

const isJson = (contentType: string | undefined): boolean =>
  contentType === undefined || contentType.trim() === "" || contentType.toLowerCase().includes("json")

/**
 * Bounds what a request can make the server read, before any handler sees it:
 * - a body over `limit` bytes → `413 PayloadTooLargeError` (with the limit). A Content-Length over the
 *   limit is refused before any of it is read, a chunked body as soon as it passes the limit; the rest
 *   is dropped unread (see `discard`).
 * - a JSON body nested deeper than {@link maxJsonDepth} → `400 InvalidRequestError` (`kind: "body"`).
 * Otherwise the app runs on the same request with its body already read (so it is read once, and
 * from memory).
 */
export const guard = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>, limit: number) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    // The Node message on the listener, the web `Request` on the embedded host.
    const source: unknown = NodeHttpServerRequest.toIncomingMessage(request)
    if (!hasBody(request, source)) return yield* app
    const declared = Number(request.headers["content-length"] ?? Number.NaN)
    if (declared > limit) {
      if (source instanceof http.IncomingMessage) discard(source)
      return tooLarge(limit)
    }
    const body =
      source instanceof http.IncomingMessage ? yield* readNode(source, limit) : yield* readWeb(request, limit)
    if (Option.isNone(body)) return tooLarge(limit)
    if (isJson(request.headers["content-type"]) && exceedsDepth(body.value, maxJsonDepth)) return tooDeep
    // `fromWeb` reads no more of its `Request` than `BufferedBody` has (see there).
    const replay = new BufferedBody(request.method, request.url, body.value) as unknown as Request
    const buffered = HttpServerRequest.fromWeb(replay).modify({
      headers: request.headers,
      ...(Option.isSome(request.remoteAddress) ? { remoteAddress: request.remoteAddress.value } : {})
    })
    return yield* Effect.provideService(app, HttpServerRequest.HttpServerRequest, buffered)
  })
