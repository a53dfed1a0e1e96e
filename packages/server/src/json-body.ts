export * as JsonBody from "./json-body.js"

import { HttpServerResponse } from "@effect/platform"

/**
 * A 200 response whose body is JSON text the Core already holds in its wire form (a page of stored
 * records): written as it is, with the content type the encoded responses have, never parsed or
 * re-encoded. Only for text that is the endpoint's success schema encoded (the owner module builds it
 * from the stored encodings).
 */
export const response = (json: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(json, { contentType: "application/json" })
