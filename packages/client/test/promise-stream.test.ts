import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  ClientError,
  createOpencodeClient,
  isClientError,
  isSessionNotFoundError,
  type SessionsEventsEvent
} from "../src/index.js"
import { json, type Loopback, refusedUrl, start } from "./loopback.js"

/*
 * The Promise client's SSE methods against a scripted loopback server: laziness, framing, and how each
 * failure surfaces during iteration. The end-to-end behaviour against the real server (resume, abort
 * and break observed by the server) is in packages/server/test/event-streams.test.ts.
 */

let server: Loopback
beforeAll(async () => {
  server = await start()
})
afterAll(() => server.close())

const sessionID = "ses_dd74ef5eeffe73avBsRqxtP7D1"
const envelope = (seq: number) => ({
  id: `evt_228b108e400${seq}AAAAAAAAAAAAA${seq}`,
  type: "session.next.synthetic",
  durable: { aggregateID: sessionID, seq, version: 1 },
  data: { timestamp: 1, sessionID, messageID: "msg_228b108e4001LbPROD3a9DlRxd", text: `note ${seq}` }
})
const frame = (seq: number) => `id: ${seq}\nevent: session.next.synthetic\ndata: ${JSON.stringify(envelope(seq))}\n\n`
const sse = (body: string) => ({ status: 200, contentType: "text/event-stream", body })

const collect = async <A>(iterable: AsyncIterable<A>): Promise<Array<A>> => {
  const out: Array<A> = []
  for await (const item of iterable) out.push(item)
  return out
}
const failure = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => {
      throw new Error("expected a rejection")
    },
    (error: unknown) => error
  )

describe("Promise client event streams", () => {
  it("returns a lazy AsyncIterable: no request until the first next(), one request per iteration", async () => {
    server.reply(() => sse(`: heartbeat\n\n${frame(2)}: heartbeat\n\n${frame(3)}`))
    const client = createOpencodeClient({ baseUrl: server.baseUrl })
    const before = server.received.length
    const events = client.sessions.events({ sessionID, after: 1 }, { headers: { "Last-Event-ID": "1" } })
    const iterator = events[Symbol.asyncIterator]()
    expect(server.received.length).toBe(before)
    const first = await iterator.next()
    expect(server.received.length).toBe(before + 1)
    const request = server.received.at(-1)!
    expect(request.url.pathname).toBe(`/api/session/${sessionID}/event`)
    expect(request.url.searchParams.get("after")).toBe("1")
    expect(request.headers.accept).toBe("text/event-stream")
    expect(request.headers["last-event-id"]).toBe("1")
    // Comment lines are skipped; each event's data is the envelope, its seq being the frame id.
    expect(first).toEqual({ done: false, value: envelope(2) })
    expect(await iterator.next()).toEqual({ done: false, value: envelope(3) })
    expect(await iterator.next()).toEqual({ done: true, value: undefined })
    const again: Array<SessionsEventsEvent> = await collect(events)
    expect(again.map((e) => e.durable?.seq)).toEqual([2, 3])
    expect(server.received.length).toBe(before + 2)
  })

  it("a declared error status rejects the first step with the tagged body; the method itself never throws", async () => {
    server.reply(() =>
      json(404, { _tag: "SessionNotFoundError", sessionID: "ses_x", message: "Session not found: ses_x" })
    )
    const client = createOpencodeClient({ baseUrl: server.baseUrl })
    const events = client.sessions.events({ sessionID: "ses_x" })
    const error = await failure(events[Symbol.asyncIterator]().next())
    expect(isSessionNotFoundError(error)).toBe(true)
    expect(error).not.toBeInstanceOf(ClientError)
  })

  it("the server's failure frame ends the iteration with a StreamFailure ClientError, after the events before it", async () => {
    const data = JSON.stringify([{ _tag: "Die", defect: { _tag: "SlowConsumerError", message: "too slow" } }])
    server.reply(() =>
      sse(
        `event: server.connected\ndata: {"id":"evt_1","type":"server.connected","data":{}}\n\nevent: effect/httpapi/stream/failure\ndata: ${data}\n\n`
      )
    )
    const client = createOpencodeClient({ baseUrl: server.baseUrl })
    const seen: Array<string> = []
    const error = await failure(
      (async () => {
        for await (const event of client.events.subscribe()) seen.push(event.type)
      })()
    )
    expect(seen).toEqual(["server.connected"])
    expect(isClientError(error) && error.reason).toBe("StreamFailure")
    expect((error as ClientError).body).toBe(data)
  })

  it("malformed data, a wrong content type, an undeclared status and a refused connection are ClientErrors", async () => {
    const client = createOpencodeClient({ baseUrl: server.baseUrl })
    server.reply(() => sse("event: server.connected\ndata: {not json\n\n"))
    expect(((await failure(collect(client.events.subscribe()))) as ClientError).reason).toBe("MalformedResponse")
    server.reply(() => json(200, { data: [] }))
    expect(((await failure(collect(client.events.subscribe()))) as ClientError).reason).toBe("UnsupportedContentType")
    server.reply(() => ({ status: 503, body: "busy" }))
    const unexpected = (await failure(collect(client.events.subscribe()))) as ClientError
    expect([unexpected.reason, unexpected.status, unexpected.body]).toEqual(["UnexpectedStatus", 503, "busy"])
    const refused = createOpencodeClient({ baseUrl: await refusedUrl() })
    expect(((await failure(collect(refused.events.subscribe()))) as ClientError).reason).toBe("Transport")
  })

  it("an already-aborted signal fails the first step without a request; an abort while waiting fails the pending step", async () => {
    const client = createOpencodeClient({ baseUrl: server.baseUrl })
    const before = server.received.length
    const aborted = new AbortController()
    aborted.abort()
    const early = (await failure(
      client.events.subscribe(undefined, { signal: aborted.signal })[Symbol.asyncIterator]().next()
    )) as ClientError
    expect(early.reason).toBe("Transport")
    expect(server.received.length).toBe(before)

    server.reply(() => ({ hang: true }))
    const controller = new AbortController()
    const pending = client.events.subscribe(undefined, { signal: controller.signal })[Symbol.asyncIterator]().next()
    await new Promise((resolve) => setTimeout(resolve, 20))
    controller.abort()
    expect(((await failure(pending)) as ClientError).reason).toBe("Transport")
  })

  it("return() before the first next() sends nothing and ends the iteration", async () => {
    const client = createOpencodeClient({ baseUrl: server.baseUrl })
    const before = server.received.length
    const iterator = client.events.subscribe()[Symbol.asyncIterator]()
    expect(await iterator.return!()).toEqual({ done: true, value: undefined })
    expect(await iterator.next()).toEqual({ done: true, value: undefined })
    expect(server.received.length).toBe(before)
  })
})
