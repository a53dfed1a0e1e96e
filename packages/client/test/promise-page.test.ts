import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest"
import {
  createOpencodeClient,
  isClientError,
  isSessionNotFoundError,
  type SessionMessage,
  type SessionsListContinuation,
  type SessionsListQuery,
  type SessionsMessagesResult,
  type SessionV2Info
} from "../src/index.js"
import { json, type Loopback, sessionJson, start } from "./loopback.js"

/**
 * The Promise client's Page projection against a scripted loopback server: what each kind of input
 * puts on the wire, and how the `…Pages` walk follows the links. The real server's paging through
 * both clients is in packages/server/test/client-pages.test.ts.
 */
let server: Loopback
beforeAll(async () => {
  server = await start()
})
afterAll(() => server.close())

const client = () => createOpencodeClient({ baseUrl: server.baseUrl })
const query = (n: number) => [...server.received[n]!.url.searchParams.entries()]

/** Serves `ids` in pages of `size`, the links being the page numbers, and records nothing else. */
const pages = (ids: ReadonlyArray<string>, size: number) =>
  server.reply((request) => {
    const cursor = request.url.searchParams.get("cursor")
    const index = cursor === null ? 0 : Number(cursor.replace("p", ""))
    const slice = ids.slice(index * size, index * size + size)
    const more = (index + 1) * size < ids.length
    return json(200, {
      data: slice.map(sessionJson),
      cursor: { ...(index > 0 ? { previous: `p${index - 1}` } : {}), ...(more ? { next: `p${index + 1}` } : {}) }
    })
  })

describe("Promise client Page projection", () => {
  it("an initial query sends its parameters; a continuation sends the cursor and only the continuation's", async () => {
    pages(["ses_1", "ses_2", "ses_3"], 2)
    const before = server.received.length
    const first = await client().sessions.list({ limit: 2, order: "asc", directory: "/w" })
    expect(first.items.map((s) => s.id)).toEqual(["ses_1", "ses_2"])
    expect(first.next).toBe("p1")
    expect(query(before)).toEqual([
      ["limit", "2"],
      ["order", "asc"],
      ["directory", "/w"]
    ])
    const second = await client().sessions.list({ cursor: first.next!, limit: 5 })
    expect(second).toEqual({ items: [sessionJson("ses_3")], previous: "p0" })
    expect(query(before + 1)).toEqual([
      ["limit", "5"],
      ["cursor", "p1"]
    ])
  })

  it("types the initial query and the continuation apart", () => {
    expectTypeOf<SessionsListQuery>().toHaveProperty("order")
    expectTypeOf<SessionsListContinuation["cursor"]>().toEqualTypeOf<string>()
    expectTypeOf<SessionsListContinuation["order"]>().toEqualTypeOf<undefined>()
    expectTypeOf<SessionsListQuery["cursor"]>().toEqualTypeOf<undefined>()
    // Compile-time only (never called): filters and ordering belong to the initial query.
    const mixed = () =>
      // @ts-expect-error a continuation takes no `order`
      client().sessions.list({ cursor: "p1", order: "asc" })
    const filtered = () =>
      // @ts-expect-error a continuation takes no filter
      client().sessions.list({ cursor: "p1", search: "x" })
    const walkFromCursor = () =>
      // @ts-expect-error a walk starts from an initial query
      client().sessions.listPages({ cursor: "p1" })
    expect([mixed, filtered, walkFromCursor].every((f) => typeof f === "function")).toBe(true)
  })

  it("listPages walks every page lazily: nothing is sent before iteration, then the initial query and the next links", async () => {
    const ids = Array.from({ length: 7 }, (_, i) => `ses_${i}`)
    pages(ids, 3)
    const before = server.received.length
    const walk = client().sessions.listPages({ limit: 3, search: "s" })
    expect(server.received.length).toBe(before)
    const seen: Array<ReadonlyArray<SessionV2Info>> = []
    for await (const page of walk) seen.push(page.items)
    expect(seen.map((items) => items.length)).toEqual([3, 3, 1])
    expect(seen.flat().map((s) => s.id)).toEqual(ids)
    expect([0, 1, 2].map((n) => query(before + n))).toEqual([
      [
        ["limit", "3"],
        ["search", "s"]
      ],
      [["cursor", "p1"]],
      [["cursor", "p2"]]
    ])
    // Cold: a second iteration starts over from the initial query.
    let pagesSeen = 0
    for await (const _ of walk) pagesSeen++
    expect(pagesSeen).toBe(3)
    expect(query(before + 3)).toEqual([
      ["limit", "3"],
      ["search", "s"]
    ])
  })

  it("messagesPages repeats the path parameter in each continuation and yields a single empty page for an empty list", async () => {
    server.reply(() => json(200, { data: [], cursor: {} }))
    const before = server.received.length
    const seen: Array<SessionsMessagesResult> = []
    for await (const page of client().sessions.messagesPages({ sessionID: "ses_x", order: "asc" })) seen.push(page)
    expect(seen).toEqual([{ items: [] }])
    expect(server.received[before]!.url.pathname).toBe("/api/session/ses_x/message")
    expectTypeOf(seen[0]!.items).toEqualTypeOf<ReadonlyArray<SessionMessage>>()

    server.reply((request) =>
      request.url.searchParams.get("cursor") === null
        ? json(200, { data: [], cursor: { next: "m1" } })
        : json(200, { data: [], cursor: {} })
    )
    const start = server.received.length
    for await (const _ of client().sessions.messagesPages({ sessionID: "ses_x", limit: 1 })) {
    }
    expect(server.received.slice(start).map((r) => `${r.url.pathname}${r.url.search}`)).toEqual([
      "/api/session/ses_x/message?limit=1",
      "/api/session/ses_x/message?cursor=m1"
    ])
  })

  it("a failed page rejects the walk's step with the declared failure or a ClientError", async () => {
    server.reply((request) =>
      request.url.searchParams.get("cursor") === null
        ? json(200, { data: [], cursor: { next: "gone" } })
        : json(404, { _tag: "SessionNotFoundError", sessionID: "ses_x", message: "gone" })
    )
    const iterator = client().sessions.messagesPages({ sessionID: "ses_x" })[Symbol.asyncIterator]()
    expect((await iterator.next()).value).toEqual({ items: [], next: "gone" })
    const failure = await iterator.next().then(
      () => undefined,
      (error: unknown) => error
    )
    expect(isSessionNotFoundError(failure)).toBe(true)

    server.reply(() => ({ status: 502, body: "bad gateway" }))
    const broken = await client()
      .sessions.listPages()
      [Symbol.asyncIterator]()
      .next()
      .then(
        () => undefined,
        (error: unknown) => error
      )
    expect(isClientError(broken) && broken.reason).toBe("UnexpectedStatus")
  })
})
