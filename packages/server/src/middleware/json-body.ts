export * as JsonBody from "./json-body.js"

import { IncomingMessage } from "node:http"
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { ApiErrors } from "@opencode-ai/protocol"
import { Errors } from "@opencode-ai/schema"
import { Option } from "effect"

/**
 * Whether the request carries a body: a `Content-Length` above 0 or a `Transfer-Encoding` on the
 * network; a web `Request` (the embedded host) says so itself when it has neither header.
 */
export const carriesBody = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const length = request.headers["content-length"]
  if (length !== undefined) return Number(length) !== 0
  if (request.headers["transfer-encoding"] !== undefined) return true
  const source: unknown = request.source
  // A network request has answered above. The global `Request` is only read for another source:
  // Node loads its fetch implementation (undici) on the first read, which would cost the first request.
  if (source instanceof IncomingMessage) return false
  return typeof Request !== "undefined" && source instanceof Request && source.body !== null
}

/** Whether `contentType` is `application/json`, parameters (`; charset=utf-8`) aside. */
export const isJson = (contentType: string | undefined): boolean =>
  contentType !== undefined && contentType.split(";")[0]?.trim().toLowerCase() === "application/json"

const quote = (text: string): string => (text.length > 200 ? `${text.slice(0, 200)}…` : text)

/**
 * Request bodies are accepted only as `application/json`: a request with a body of any other type,
 * or of none, is answered 415 `UnsupportedMediaTypeError` before it is read. This is what keeps a web
 * page from driving the server: the bodies a browser sends without a preflight (`text/plain`,
 * form-encoded, multipart, a `no-cors` Blob with no type) never reach a handler. A request without a
 * body (`wait`, `interrupt`, `compact`, any GET) needs no type. `Some` is the response to answer with.
 */
export const check = (
  request: HttpServerRequest.HttpServerRequest
): Option.Option<HttpServerResponse.HttpServerResponse> => {
  if (!carriesBody(request)) return Option.none()
  const contentType = request.headers["content-type"]
  if (isJson(contentType)) return Option.none()
  const error = new Errors.UnsupportedMediaTypeError({
    message:
      contentType === undefined
        ? "Request bodies must be application/json; this request has a body and no Content-Type"
        : `Request bodies must be application/json, not ${quote(contentType)}`,
    ...(contentType === undefined ? {} : { contentType: quote(contentType) })
  })
  return Option.some(HttpServerResponse.unsafeJson(error, { status: ApiErrors.status.UnsupportedMediaTypeError }))
}
