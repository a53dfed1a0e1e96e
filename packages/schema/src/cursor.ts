export * as Cursor from "./cursor.js"

import { Encoding, Schema } from "effect"

/**
 * An opaque continuation token. Consumers pass it back unchanged; only the issuer reads it.
 * On the wire it is base64url JSON carrying the query, the anchor and the direction.
 */
export const Token = Schema.String.pipe(Schema.brand("Cursor"))
export type Token = typeof Token.Type

export const Direction = Schema.Literal("next", "previous")
export type Direction = typeof Direction.Type

/**
 * The codec between a cursor string and its payload: base64url over JSON over `payload`.
 * Decoding fails with a ParseError for anything not produced by the matching encoder.
 */
export const codec = <A, I>(payload: Schema.Schema<A, I>): Schema.Schema<A, string> =>
  Schema.compose(Schema.StringFromBase64Url, Schema.parseJson(payload))

/**
 * The token of a payload already in its encoded form (`encoded`: what `payload`'s Schema encodes to,
 * its fields in declaration order): base64url over its JSON, the bytes `codec`'s encoder makes. For
 * issuers that build the encoded form themselves, without a Schema pass per token.
 */
export const tokenOf = (encoded: unknown): Token => Token.make(base64Url(JSON.stringify(encoded)))

/** Printable ASCII: JSON text escapes the control characters below it. */
const printable = /^[ -~]*$/

/**
 * `Encoding.encodeBase64Url`'s text: a printable ASCII string (a cursor's JSON, unless a filter holds
 * other characters) through the platform's `btoa`, about four times faster; any other through Encoding.
 */
const base64Url = (text: string): string =>
  printable.test(text)
    ? btoa(text).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")
    : Encoding.encodeBase64Url(text)
