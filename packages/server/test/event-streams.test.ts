import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { ClientError, createOpencodeClient, isClientError, isSessionNotFoundError } from "@opencode-ai/client"
import { OpencodeClient } from "@opencode-ai/client/effect"
import { LiveBus, RuntimeMetrics } from "@opencode-ai/core"
import { EventStream } from "@opencode-ai/protocol"
import { Chunk, Effect, Exit, Fiber, Metric, Scope, Stream } from "effect"
import { startServer } from "./harness.js"
import {
  appendSynthetic,
  bus,
  createSession,
  eventually,
  type Frame,
  type Host,
  type Kind,
  open,
  SseReader,
  start,
  withCore
} from "./stream-harness.js"

/*
 * The two SSE streams (`GET /api/session/{id}/event`, `GET /api/event`) end to end, against the real
 * listener on 127.0.0.1 and against the in-memory web handler of the embedded host. Durable events
 * are appended with EventLog directly and live ones published on the LiveBus directly, so these
 * tests do not depend on the runner.
 */

const next = (reader: SseReader) => Effect.promise(() => reader.next())
const json = (frame: Frame | undefined): any => JSON.parse(frame?.data ?? "null")
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
const subscribers = (host: Host) => bus(host).subscriberCount

const delta = (sessionID: string, text: string) =>
  LiveBus.liveEvent("session.next.text.delta", {
    timestamp: 1,
    sessionID: sessionID as never,
    assistantMessageID: "msg_228b108e4001LbPROD3a9DlRxd" as never,
    textID: "txt_0",
    delta: text
  })

describe.each(["network", "in-memory"] as const)("event streams (%s host)", (kind: Kind) => {
  it.scopedLive("an unknown session is a 404 JSON before any stream; an unparsable Last-Event-ID is a 400", () =>
    Effect.gen(function* () {
      const host = yield* start(kind)
      const missing = yield* open(host, "/api/session/ses_missing/event")
      expect(missing.status).toBe(404)
      expect(missing.headers.get("content-type")).toMatch(/^application\/json/)
      expect(yield* Effect.promise(() => missing.json())).toMatchObject({
        _tag: "SessionNotFoundError",
        sessionID: "ses_missing"
      })

      const session = yield* createSession(host)
      const bad = yield* open(host, `/api/session/${session.id}/event`, { "last-event-id": "evt_1" })
      expect(bad.status).toBe(400)
      expect(yield* Effect.promise(() => bad.json())).toMatchObject({
        _tag: "InvalidRequestError",
        kind: "header",
        field: "Last-Event-ID"
      })
      const negative = yield* open(host, `/api/session/${session.id}/event?after=-1`)
      expect(negative.status).toBe(400)
    })
  )

  it.scopedLive(
    "replays after ?after or Last-Event-ID, then tails: 0 gaps, 0 duplicates while events are appended",
    () =>
      Effect.gen(function* () {
        const host = yield* start(kind)
        const session = yield* createSession(host)
        expect(yield* appendSynthetic(host, session.id, 20)).toBe(20)
        const last = 300
        const writer = yield* appendSynthetic(host, session.id, last - 20, 10).pipe(Effect.fork)

        /** Reads the stream at `query`/`headers` up to seq `last` and returns the seqs seen. */
        const read = (query: string, headers: Record<string, string> = {}) =>
          Effect.gen(function* () {
            const response = yield* open(host, `/api/session/${session.id}/event${query}`, headers)
            expect(response.status).toBe(200)
            expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
            expect(response.headers.get("cache-control")).toBe("no-cache")
            const reader = new SseReader(response)
            const seqs: Array<number> = []
            while (seqs.at(-1) !== last) {
              const frame = yield* next(reader)
              if (frame === undefined) return yield* Effect.dieMessage("the stream ended")
              const envelope = json(frame)
              // Frames carry `id: <seq>` and `event: <type>`, and the data is the whole envelope.
              expect(frame.id).toBe(String(envelope.durable.seq))
              expect(frame.event).toBe(envelope.type)
              expect(envelope).toMatchObject({
                type: "session.next.synthetic",
                durable: { aggregateID: session.id, version: 1 }
              })
              expect(envelope.id).toMatch(/^evt_/)
              seqs.push(envelope.durable.seq)
            }
            yield* Effect.promise(() => reader.cancel())
            return seqs
          })

        const [afterTen, lastEventId, wins, whole] = yield* Effect.all(
          [
            read("?after=10"),
            read("", { "last-event-id": "15" }),
            // Last-Event-ID (what a reconnecting SSE client sends) wins over the ?after of the original URL.
            read("?after=5", { "Last-Event-ID": "40" }),
            read("")
          ],
          { concurrency: "unbounded" }
        )
        yield* Fiber.join(writer)
        expect(afterTen).toEqual(range(11, last))
        expect(lastEventId).toEqual(range(16, last))
        expect(wins).toEqual(range(41, last))
        // session.created is the log's origin (seq 0), not a SessionDurableEvent: the whole log starts at seq 1.
        expect(whole).toEqual(range(1, last))
      })
  )

  it.scopedLive("sends heartbeats: comment lines on both streams, never an event", () =>
    Effect.gen(function* () {
      const host = yield* start(kind, { heartbeat: "20 millis" })
      const session = yield* createSession(host)
      const durable = new SseReader(yield* open(host, `/api/session/${session.id}/event`))
      yield* Effect.promise(() => durable.untilComments(2))
      expect(durable.comments).toBeGreaterThanOrEqual(2)
      yield* Effect.promise(() => durable.cancel())

      const live = new SseReader(yield* open(host, "/api/event"))
      expect((yield* next(live))?.event).toBe("server.connected")
      yield* Effect.promise(() => live.untilComments(2))
      expect(live.comments).toBeGreaterThanOrEqual(2)
      yield* Effect.promise(() => live.cancel())
    })
  )

  it.scopedLive("/api/event: server.connected first, then durable commits and live deltas in publish order", () =>
    Effect.gen(function* () {
      const host = yield* start(kind)
      const response = yield* open(host, "/api/event")
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
      const live = new SseReader(response)
      const connected = yield* next(live)
      expect(connected?.event).toBe("server.connected")
      expect(json(connected)).toMatchObject({ type: "server.connected", data: {} })
      expect(json(connected).id).toMatch(/^evt_/)

      const session = yield* createSession(host)
      yield* appendSynthetic(host, session.id, 1)
      yield* withCore(host, Effect.flatMap(delta(session.id, "Hel"), bus(host).publish))
      // Not a V2Event type: stays in process.
      yield* bus(host).publish({ id: "evt_internal", type: "test.internal", data: {} })
      yield* appendSynthetic(host, session.id, 1)

      const frames = [yield* next(live), yield* next(live), yield* next(live), yield* next(live)]
      expect(frames.map((f) => f?.event)).toEqual([
        "session.created",
        "session.next.synthetic",
        "session.next.text.delta",
        "session.next.synthetic"
      ])
      expect(frames.every((f) => f?.id === undefined)).toBe(true)
      // session.created is the log's origin (seq 0) and carries the v1 session record.
      expect(json(frames[0])).toMatchObject({
        durable: { aggregateID: session.id, seq: 0 },
        data: {
          sessionID: session.id,
          info: { id: session.id, slug: session.id, directory: session.location.directory, version: "0.1.0" }
        }
      })
      expect(json(frames[1]).durable.seq).toBe(1)
      expect(json(frames[2])).toMatchObject({ type: "session.next.text.delta", data: { delta: "Hel" } })
      expect(json(frames[2]).durable).toBeUndefined()
      expect(json(frames[3]).durable.seq).toBe(2)
      // Every event about the session carries its Location; server.connected the server's (the same here).
      for (const frame of [connected, ...frames]) {
        expect(json(frame).location).toEqual({ directory: session.location.directory })
      }
      yield* Effect.promise(() => live.cancel())
    })
  )

  it.scopedLive(
    "a slow consumer (never reads, small buffer) is cut off alone; another subscriber keeps receiving",
    () =>
      Effect.gen(function* () {
        const host = yield* start(kind, { liveCapacity: 4 })
        const session = yield* createSession(host)
        const slow = yield* open(host, "/api/event") // never read until the end
        const fast = new SseReader(yield* open(host, "/api/event"))
        expect((yield* next(fast))?.event).toBe("server.connected")
        yield* eventually(Effect.map(subscribers(host), (n) => n === 2))

        // Big events, so a network consumer's socket buffers fill too and the server stops writing to it.
        const payload = "x".repeat(64 * 1024)
        const published = kind === "network" ? 600 : 40
        for (let i = 0; i < published; i++) {
          yield* withCore(host, Effect.flatMap(delta(session.id, `${i}:${payload}`), bus(host).publish))
          const frame = yield* next(fast)
          expect(json(frame).data.delta.startsWith(`${i}:`)).toBe(true)
        }
        // The slow subscriber was detached from the bus; the fast one is still attached and receiving.
        yield* eventually(Effect.map(subscribers(host), (n) => n === 1))
        yield* withCore(host, Effect.flatMap(delta(session.id, "after"), bus(host).publish))
        expect(json(yield* next(fast)).data.delta).toBe("after")

        // Reading the slow one now: what was already in transit, then the failure frame, then the end.
        const reader = new SseReader(slow)
        const frames: Array<Frame> = []
        for (let frame = yield* next(reader); frame !== undefined; frame = yield* next(reader)) frames.push(frame)
        expect(frames.length).toBeLessThan(published)
        const failure = frames.at(-1)
        expect(failure?.event).toBe(EventStream.failureEvent)
        expect(json(failure)).toEqual([
          { _tag: "Die", defect: { _tag: "SlowConsumerError", message: expect.stringContaining("4 events") } }
        ])
        yield* Effect.promise(() => fast.cancel())
      })
  )

  it.scopedLive("opencode_sse_subscribers counts each stream from its start until its client lets go", () =>
    Effect.gen(function* () {
      const host = yield* start(kind)
      const session = yield* createSession(host)
      // The gauge is the process's: other hosts of this file may hold streams, so counts are relative.
      const gauge = (stream: "instance" | "session") =>
        Effect.map(Metric.value(RuntimeMetrics.sseSubscribers.pipe(Metric.tagged("stream", stream))), (s) => s.value)
      const before = { session: yield* gauge("session"), instance: yield* gauge("instance") }
      const sessionStream = new SseReader(yield* open(host, `/api/session/${session.id}/event`))
      const instanceStream = new SseReader(yield* open(host, "/api/event"))
      expect((yield* next(instanceStream))?.event).toBe("server.connected")
      yield* eventually(Effect.map(gauge("session"), (n) => n === before.session + 1))
      expect(yield* gauge("instance")).toBe(before.instance + 1)
      yield* Effect.promise(() => sessionStream.cancel())
      yield* eventually(Effect.map(gauge("session"), (n) => n === before.session))
      expect(yield* gauge("instance")).toBe(before.instance + 1)
      yield* Effect.promise(() => instanceStream.cancel())
      yield* eventually(Effect.map(gauge("instance"), (n) => n === before.instance))
    })
  )

  it.scopedLive("a HEAD request, or a client gone before the response, leaves no stream behind", () =>
    Effect.gen(function* () {
      const host = yield* start(kind)
      const session = yield* createSession(host)
      const before = yield* subscribers(host)
      for (const path of [`/api/session/${session.id}/event`, "/api/event"]) {
        const head = yield* Effect.promise(() => host.fetch(`${host.url}${path}`, { method: "HEAD" }))
        expect(head.status).toBe(200)
        expect(head.headers.get("content-type")).toMatch(/^text\/event-stream/)
        // Gone a moment after asking: before the head or after it, as the race falls; either way
        // nothing stays.
        const controller = new AbortController()
        const gone = host
          .fetch(`${host.url}${path}`, { headers: { accept: "text/event-stream" }, signal: controller.signal })
          .then(
            () => "answered",
            () => "aborted"
          )
        yield* Effect.sleep("1 millis")
        controller.abort()
        yield* Effect.promise(() => gone)
      }
      yield* eventually(Effect.map(subscribers(host), (n) => n === before))
      // The host still streams.
      const again = new SseReader(yield* open(host, `/api/session/${session.id}/event`))
      yield* Effect.promise(() => again.untilComments(1))
      yield* Effect.promise(() => again.cancel())
      yield* eventually(Effect.map(subscribers(host), (n) => n === before))
    })
  )

  it.scopedLive("closing the host ends open streams: global.disposed is the last event of /api/event", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const host = yield* start(kind).pipe(Scope.extend(scope))
      const session = yield* createSession(host)
      const live = new SseReader(yield* open(host, "/api/event"))
      expect((yield* next(live))?.event).toBe("server.connected")
      const durable = new SseReader(yield* open(host, `/api/session/${session.id}/event`))
      yield* Effect.promise(() => durable.untilComments(1))

      const closing = yield* Scope.close(scope, Exit.void).pipe(Effect.fork)
      const last = yield* next(live)
      expect(last?.event).toBe("global.disposed")
      expect(json(last)).toMatchObject({ type: "global.disposed", data: {} })
      expect(yield* next(live)).toBeUndefined()
      expect(yield* next(durable)).toBeUndefined()
      yield* Fiber.join(closing)
    })
  )

  it.scopedLive("Promise client: a lazy AsyncIterable; signal aborts; break closes the connection", () =>
    Effect.gen(function* () {
      const host = yield* start(kind)
      let requests = 0
      const fetch: typeof globalThis.fetch = (input, init) => {
        requests++
        return host.fetch(input, init)
      }
      const client = createOpencodeClient({ baseUrl: host.url, fetch })
      const session = yield* createSession(host)
      yield* appendSynthetic(host, session.id, 4)

      // Lazy: neither the call nor asking for an iterator sends anything; the first next() does.
      const iterable = client.events.subscribe()
      const iterator = iterable[Symbol.asyncIterator]()
      expect(requests).toBe(0)
      const first = yield* Effect.promise(() => iterator.next())
      expect(requests).toBe(1)
      expect(first.value).toMatchObject({ type: "server.connected" })
      expect(yield* subscribers(host)).toBe(1)
      // return() closes the request: the server sees the disconnect and releases the subscription.
      yield* Effect.promise(() => iterator.return!())
      yield* eventually(Effect.map(subscribers(host), (n) => n === 0))

      // `for await` + break, while live events flow.
      const seen = yield* Effect.promise(async () => {
        const types: Array<string> = []
        for await (const event of client.events.subscribe()) {
          types.push(event.type)
          if (event.type === "server.connected")
            await Effect.runPromise(withCore(host, Effect.flatMap(delta(session.id, "x"), bus(host).publish)))
          if (event.type === "session.next.text.delta") break
        }
        return types
      })
      expect(seen).toEqual(["server.connected", "session.next.text.delta"])
      yield* eventually(Effect.map(subscribers(host), (n) => n === 0))

      // An abort fails the pending step with a Transport ClientError and closes the connection.
      const controller = new AbortController()
      const aborted = client.events.subscribe(undefined, { signal: controller.signal })[Symbol.asyncIterator]()
      expect((yield* Effect.promise(() => aborted.next())).value).toMatchObject({ type: "server.connected" })
      const pending = aborted.next()
      controller.abort()
      const error = yield* Effect.promise(() =>
        pending.then(
          () => undefined,
          (e: unknown) => e
        )
      )
      expect(isClientError(error) && error.reason).toBe("Transport")
      yield* eventually(Effect.map(subscribers(host), (n) => n === 0))

      // The durable stream yields envelopes (seq inside); declared failures surface on the first step.
      const durable: Array<number> = []
      for (const event of yield* Effect.promise(() =>
        take(client.sessions.events({ sessionID: session.id, after: 2 }), 2)
      )) {
        durable.push(event.durable!.seq)
      }
      expect(durable).toEqual([3, 4])
      const resumed = yield* Effect.promise(() =>
        take(client.sessions.events({ sessionID: session.id }, { headers: { "Last-Event-ID": "3" } }), 1)
      )
      expect(resumed.map((e) => e.durable?.seq)).toEqual([4])
      const missing = yield* Effect.promise(() =>
        take(client.sessions.events({ sessionID: "ses_missing" }), 1).then(
          () => undefined,
          (e: unknown) => e
        )
      )
      expect(isSessionNotFoundError(missing)).toBe(true)
      expect(missing).not.toBeInstanceOf(ClientError)
    })
  )

  it.scopedLive("Effect client: a Stream of decoded events; a typed 404 before streaming; interruption closes", () =>
    Effect.gen(function* () {
      const host = yield* start(kind)
      const client = yield* OpencodeClient.make({ baseUrl: host.url }).pipe(
        Effect.provide(FetchHttpClient.layer),
        Effect.provideService(FetchHttpClient.Fetch, host.fetch)
      )
      const session = yield* createSession(host)
      yield* appendSynthetic(host, session.id, 5)
      const events = yield* client.sessions
        .events({ sessionID: session.id, after: 2 })
        .pipe(Stream.take(3), Stream.runCollect)
      expect(Chunk.toReadonlyArray(events).map((e) => [e.type, e.durable?.seq])).toEqual([
        ["session.next.synthetic", 3],
        ["session.next.synthetic", 4],
        ["session.next.synthetic", 5]
      ])
      const missing = yield* client.sessions
        .events({ sessionID: "ses_missing" as typeof session.id })
        .pipe(Stream.runDrain, Effect.flip)
      expect(missing._tag).toBe("SessionNotFoundError")

      const received: Array<string> = []
      const fiber = yield* client.events.subscribe().pipe(
        Stream.runForEach((event) => Effect.sync(() => void received.push(event.type))),
        Effect.fork
      )
      yield* eventually(Effect.sync(() => received.includes("server.connected")))
      yield* createSession(host)
      yield* eventually(Effect.sync(() => received.includes("session.created")))
      expect(yield* subscribers(host)).toBe(1)
      yield* Fiber.interrupt(fiber)
      yield* eventually(Effect.map(subscribers(host), (n) => n === 0))
    })
  )
})

/** The first `count` items of a lazy stream, closing it afterwards. */
const take = async <A>(iterable: AsyncIterable<A>, count: number): Promise<Array<A>> => {
  const out: Array<A> = []
  if (count === 0) return out
  for await (const item of iterable) {
    out.push(item)
    if (out.length === count) break
  }
  return out
}

describe("event streams on the real listener (Serve.layer)", () => {
  it.scopedLive("shutting the listener down ends open streams, so draining in-flight requests completes", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const { url } = yield* startServer().pipe(Scope.extend(scope))
      const session = yield* Effect.promise(() =>
        fetch(`${url}/api/session`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}"
        }).then((r) => r.json())
      )
      const live = new SseReader(yield* Effect.promise(() => fetch(`${url}/api/event`)))
      expect((yield* next(live))?.event).toBe("server.connected")
      const durable = new SseReader(yield* Effect.promise(() => fetch(`${url}/api/session/${session.data.id}/event`)))
      yield* Effect.promise(() => durable.untilComments(1))

      yield* Scope.close(scope, Exit.void)
      expect((yield* next(live))?.event).toBe("global.disposed")
      expect(yield* next(live)).toBeUndefined()
      expect(yield* next(durable)).toBeUndefined()
    })
  )
})
