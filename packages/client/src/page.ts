export * as Page from "./page.js"

import type { Operation, RequestOptions, Send } from "./transport.js"

/**
 * The Page projection of the Promise client (zero Effect). A cursor-paged list travels as the
 * envelope `{data, cursor: {previous?, next?}}`; the client hands out the Page `{items, previous?,
 * next?}` instead, and continues a list by sending a page's link back as its `cursor`. The wire is
 * the server's, unchanged.
 */

/** How a paged operation's envelope maps to a Page; the settings of its descriptor (see `Transport.Descriptor`). */
export interface Spec {
  /** The client method that walks every page (`listPages`). */
  readonly pages: string
  /** The envelope member holding the items (`data`). */
  readonly items: string
  /** The envelope member holding the `{previous?, next?}` links (`cursor`). */
  readonly links: string
  /** The input field a continuation sends its link in (`cursor`). */
  readonly cursor: string
}

/** The projected value; the generated `Page<Item>` type describes it. */
interface Projected {
  readonly items: unknown
  readonly previous?: string
  readonly next?: string
}

/**
 * The Page of a parsed envelope. Like every Promise-client result, the shape is trusted, not
 * validated: only the members named by `spec` are read (of an object; anything else has none), and
 * absent links are left out.
 */
export const project = (body: unknown, spec: Spec): Projected => {
  const envelope = body as Readonly<Record<string, unknown>> | null | undefined
  const links = (envelope?.[spec.links] ?? {}) as { readonly previous?: unknown; readonly next?: unknown }
  const page: { items: unknown; previous?: string; next?: string } = { items: envelope?.[spec.items] }
  if (typeof links.previous === "string") page.previous = links.previous
  if (typeof links.next === "string") page.next = links.next
  return page
}

/**
 * Every page of one query, first to last, as a lazy, cold `AsyncIterable`: nothing is sent until
 * iteration starts, and each iteration starts over. The first step sends `query`; each later step
 * sends the previous page's `next` link as the continuation's `cursor` (with the query's path parameters and
 * nothing else: the link carries the rest of the query, page size included); the iteration ends after
 * a page without `next`. A step rejects as the operation's method does (a declared tagged failure or a
 * `ClientError`); `options.signal` aborts the request in flight and every later one.
 */
export const walk = (
  send: Send,
  operation: Operation & Spec,
  query: Readonly<Record<string, unknown>> | undefined,
  options: RequestOptions | undefined
): AsyncIterable<Projected> => ({
  async *[Symbol.asyncIterator]() {
    let fields = query ?? {}
    for (;;) {
      const page = (await send(operation, fields, options)) as Projected
      yield page
      if (page.next === undefined) return
      // The path parameters are the same in every step; the link carries the rest of the query.
      const continuation: Record<string, unknown> = { [operation.cursor]: page.next }
      for (const [, name] of operation.path.matchAll(/\{([^}]+)\}/g))
        continuation[name as string] = fields[name as string]
      fields = continuation
    }
  }
})
