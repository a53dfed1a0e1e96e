export * as Page from "./page.js"

import type { Cursor } from "@opencode-ai/schema"
import { Effect, Option, Stream } from "effect"

/**
 * The Page projection of the Effect client. A cursor-paged list travels as the envelope `{data,
 * cursor: {previous?, next?}}`; the client hands out the decoded Page `{items, previous?, next?}`,
 * whose links are branded `Cursor.Token`s, and continues a list by sending a link back as its
 * `cursor`. The wire is the server's, unchanged.
 */

/**
 * One page of a cursor-paged list: its items, in the list's order, and opaque links to the
 * neighbouring pages of the same query, each present only when items exist beyond this page in that
 * direction. Pass a link back unchanged as the `cursor` of a continuation of the same list.
 */
export interface Page<Item> {
  readonly items: ReadonlyArray<Item>
  /** The link to the page before this one. */
  readonly previous?: Cursor.Token
  /** The link to the page after this one. */
  readonly next?: Cursor.Token
}

/** The decoded list envelope of a paged endpoint. */
export interface Envelope<Item> {
  readonly data: ReadonlyArray<Item>
  readonly cursor: { readonly previous?: Cursor.Token | undefined; readonly next?: Cursor.Token | undefined }
}

/** The Page of a decoded envelope (absent links are left out). */
export const fromEnvelope = <Item>(envelope: Envelope<Item>): Page<Item> => ({
  items: envelope.data,
  ...(envelope.cursor.previous === undefined ? {} : { previous: envelope.cursor.previous }),
  ...(envelope.cursor.next === undefined ? {} : { next: envelope.cursor.next })
})

/**
 * Every page of one query, first to last, as a cold `Stream`: each run starts over, requesting
 * `fetch(undefined)` (the initial query) and then `fetch(link)` with each page's `next` link, ending
 * after a page without one. A failed request fails the stream; interruption cancels the request in
 * flight.
 */
export const stream = <Item, E, R>(
  fetch: (cursor: Cursor.Token | undefined) => Effect.Effect<Page<Item>, E, R>
): Stream.Stream<Page<Item>, E, R> =>
  Stream.paginateEffect(undefined as Cursor.Token | undefined, (cursor) =>
    Effect.map(fetch(cursor), (page) => [page, Option.fromNullable(page.next)] as const)
  )
