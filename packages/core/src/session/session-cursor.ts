export * as SessionCursor from "./session-cursor.js"

import { Cursor } from "@opencode-ai/schema"
import { Schema } from "effect"

export const Order = Schema.Literal("asc", "desc")
export type Order = typeof Order.Type

/**
 * A session list query with its defaults applied. `desc` walks creation order (`time_created`, then
 * `id` descending: ids count down within a millisecond) from newest to oldest, `asc` the reverse; the filters are exact except `search`, a case-insensitive title substring.
 */
export const Query = Schema.Struct({
  order: Order,
  limit: Schema.Int.pipe(Schema.between(1, 200)),
  search: Schema.optional(Schema.String),
  directory: Schema.optional(Schema.String),
  workspace: Schema.optional(Schema.String),
  project: Schema.optional(Schema.String),
  subpath: Schema.optional(Schema.String)
})
export interface Query extends Schema.Schema.Type<typeof Query> {}

/** A position between two sessions in a query's order: the key of the session on its near side. */
export const Anchor = Schema.Struct({ time: Schema.Number, id: Schema.String })
export interface Anchor extends Schema.Schema.Type<typeof Anchor> {}

/**
 * What a cursor carries: the query it continues, the anchor, and which side of the anchor the page
 * lies on (`next`: the items after it in query order, `previous`: the items before it).
 */
export const Payload = Schema.Struct({ query: Query, anchor: Anchor, direction: Cursor.Direction })
export interface Payload extends Schema.Schema.Type<typeof Payload> {}

/** The opaque token form: base64url JSON. Decoding anything this module did not encode fails. */
export const Token = Cursor.codec(Payload)

/**
 * The token of `payload`: the bytes `Schema.encodeSync(Token)` makes (the Payload's fields in
 * declaration order; an absent filter is left out), built without a Schema pass, since every page of a
 * list issues one or two. Payloads are only built by the session list, from a checked query and a
 * stored key.
 */
export const encode = (payload: Payload): Cursor.Token => {
  const { query, anchor } = payload
  return Cursor.tokenOf({
    query: {
      order: query.order,
      limit: query.limit,
      search: query.search,
      directory: query.directory,
      workspace: query.workspace,
      project: query.project,
      subpath: query.subpath
    },
    anchor: { time: anchor.time, id: anchor.id },
    direction: payload.direction
  })
}

export const decode = Schema.decodeUnknown(Token)
