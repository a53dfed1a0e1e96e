export * as JsonBody from "./json-body.js"

import { HttpServerResponse } from "@effect/platform"

/**
 * A 200 response whose body is JSON text the Core already holds in its wire form (a page of stored
 * records): written as it is, with the content type the encoded responses have, never parsed or
 * re-encoded. Only for text that is the endpoint's success schema encoded (the owner module builds it
 * from the stored encodings). The text goes to the socket as it is (Node encodes it as it writes),
 * with its length in UTF-8 bytes as `content-length`: no UTF-8 copy of it is made first.
 */
export const response = (json: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.raw(json, { contentType: "application/json", contentLength: Buffer.byteLength(json) })
