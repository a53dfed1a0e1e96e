export * as MessageCursor from "./message-cursor.js"

import { Cursor } from "@opencode-ai/schema"
import { Schema } from "effect"

export const Order = Schema.Literal("asc", "desc")
export type Order = typeof Order.Type

/**
 * A message list query with its defaults applied, bound to one session: `desc` walks the session's
 * messages from the newest to the oldest (by the seq of the event that created each), `asc` the
 * reverse.
 */
export const Query = Schema.Struct({
  sessionID: Schema.String,
  order: Order,
  limit: Schema.Int.pipe(Schema.between(1, 200))
})
export interface Query extends Schema.Schema.Type<typeof Query> {}

/** A position between two messages: the key of the message on its near side. */
export const Anchor = Schema.Struct({ seq: Schema.Int, id: Schema.String })
export interface Anchor extends Schema.Schema.Type<typeof Anchor> {}

/**
 * What a message cursor carries: the query it continues (its session included), the anchor, and
 * which side of the anchor the page lies on (`next`: after it in query order, `previous`: before).
 */
export const Payload = Schema.Struct({ query: Query, anchor: Anchor, direction: Cursor.Direction })
export interface Payload extends Schema.Schema.Type<typeof Payload> {}

/** The opaque token form: base64url JSON. Decoding anything this module did not encode fails. */
export const Token = Cursor.codec(Payload)

/**
 * The token of `payload`: the bytes `Schema.encodeSync(Token)` makes (the Payload's fields in
 * declaration order), built without a Schema pass, since every page of messages issues one or two.
 * Payloads are only built by the message list, from a checked query and a stored key.
 */
export const encode = (payload: Payload): Cursor.Token => {
  const { query, anchor } = payload
  return Cursor.tokenOf({
    query: { sessionID: query.sessionID, order: query.order, limit: query.limit },
    anchor: { seq: anchor.seq, id: anchor.id },
    direction: payload.direction
  })
}

export const decode = Schema.decodeUnknown(Token)
