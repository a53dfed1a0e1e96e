import * as fs from "node:fs"
import * as net from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { LiveBus } from "@opencode-ai/core"
import { Effect, Fiber } from "effect"
import {
  appendSynthetic,
  bus,
  createSession,
  eventually,
  type Host,
  open,
  SseReader,
  start,
  withCore
} from "./stream-harness.js"

/*
 * A client that stops reading an event stream: the server's writes stop draining once the socket's
 * buffers are full. With a write timeout of 1 s, the server must reset that connection and release
 * it, for `GET /api/event` and `GET /api/session/{id}/event` alike, while a client that reads (or a
 * quiet stream with nothing to write) is left alone.
 */

const writeTimeout = "1 second"

/** The server's established TCP sockets on `port`, from the kernel's table (IPv4 loopback). */
const serverSockets = (port: number): number => {
  const hex = port.toString(16).toUpperCase().padStart(4, "0")
  return fs
    .readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f[1]?.endsWith(`:${hex}`) === true && f[3] === "01").length
}

const portOf = (host: Host) => Number(new URL(host.url).port)

/**
 * A raw `GET path` of an event stream, its socket paused at once (it reads only what is asked for);
 * `sent` is called once the request is written.
 */
const rawGet = (host: Host, path: string, sent: () => void = () => {}): net.Socket => {
  const socket = net.connect(portOf(host), "127.0.0.1", () => {
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${portOf(host)}\r\nAccept: text/event-stream\r\n\r\n`)
    sent()
  })
  socket.pause()
  return socket
}

/** A raw `GET path` that is never read. */
const stalled = (host: Host, path: string) =>
  Effect.promise(
    () =>
      new Promise<{ readonly socket: net.Socket; readonly closed: Promise<string> }>((resolve) => {
        const socket = rawGet(host, path, () => resolve({ socket, closed }))
        socket.setNoDelay(true)
        const closed = new Promise<string>((done) => {
          socket.once("error", (error) => done(`error ${(error as NodeJS.ErrnoException).code}`))
          socket.once("close", () => done("close"))
        })
      })
  )

/**
 * A raw `GET path` read at `rate` bytes a second (a fiftieth of it every 20 ms) until `done` holds for
 * the body read so far (chunked transfer coding removed) or the connection ends. Resolves to that body
 * and, if the connection ended before `done` held, how.
 */
const slowRead = (host: Host, path: string, rate: number, done: (body: string) => boolean) =>
  Effect.promise(
    () =>
      new Promise<{ readonly body: string; readonly ended: string | undefined }>((resolve) => {
        const socket = rawGet(host, path)
        const body = new Dechunked()
        const finish = (ended: string | undefined) => {
          clearInterval(reading)
          socket.destroy()
          resolve({ body: body.text, ended })
        }
        socket.once("error", (error) => finish(`error ${(error as NodeJS.ErrnoException).code}`))
        socket.once("close", () => finish("close"))
        const reading = setInterval(() => {
          const size = Math.min(socket.readableLength, rate / 50)
          // `read(0)` only asks the socket to fill its buffer (a paused socket reads nothing unasked).
          const piece: Buffer | null = socket.read(size)
          if (piece !== null && body.feed(piece.toString("latin1")) && done(body.text)) finish(undefined)
        }, 20)
      })
  )

/** The body of a raw HTTP/1.1 response with chunked transfer coding, fed as it is read. */
class Dechunked {
  text = ""
  private pending = ""
  private headEnded = false
  /** Whether the body grew. */
  feed(raw: string): boolean {
    this.pending += raw
    const before = this.text.length
    if (!this.headEnded) {
      const end = this.pending.indexOf("\r\n\r\n")
      if (end === -1) return false
      this.headEnded = true
      this.pending = this.pending.slice(end + 4)
    }
    for (;;) {
      const eol = this.pending.indexOf("\r\n")
      if (eol === -1) break
      const size = Number.parseInt(this.pending.slice(0, eol), 16)
      if (this.pending.length < eol + 2 + size + 2) break
      this.text += this.pending.slice(eol + 2, eol + 2 + size)
      this.pending = this.pending.slice(eol + 2 + size + 2)
    }
    return this.text.length > before
  }
}

const bigDelta = (sessionID: string, i: number) =>
  LiveBus.liveEvent("session.next.text.delta", {
    timestamp: 1,
    sessionID: sessionID as never,
    assistantMessageID: "msg_228b108e4001LbPROD3a9DlRxd" as never,
    textID: "txt_0",
    delta: `${i}:${"d".repeat(64 * 1024)}`
  })

describe("slow SSE consumers", () => {
  it.scopedLive(
    "GET /api/event: a client that stops reading is reset after the write timeout and released",
    () =>
      Effect.gen(function* () {
        const host = yield* start("network", { writeTimeout, liveCapacity: 4096 })
        const session = yield* createSession(host)
        const before = serverSockets(portOf(host))
        const client = yield* stalled(host, "/api/event")
        yield* eventually(bus(host).subscriberCount.pipe(Effect.map((n) => n === 1)))
        expect(serverSockets(portOf(host))).toBe(before + 1)
        // 64 MB of deltas: far more than the socket buffers hold, so the writer blocks.
        for (let i = 0; i < 1000; i++) yield* withCore(host, Effect.flatMap(bigDelta(session.id, i), bus(host).publish))
        // The server lets go: its subscriber and its socket are gone, with no help from the client.
        yield* eventually(bus(host).subscriberCount.pipe(Effect.map((n) => n === 0)))
        yield* eventually(Effect.sync(() => serverSockets(portOf(host)) === before))
        // And the client, once it looks, finds the connection reset.
        client.socket.resume()
        expect(yield* Effect.promise(() => client.closed)).toMatch(/ECONNRESET|close/)
      }),
    30_000
  )

  it.scopedLive(
    "GET /api/session/{id}/event: a stalled client is reset; it resumes with Last-Event-ID",
    () =>
      Effect.gen(function* () {
        const host = yield* start("network", { writeTimeout })
        const session = yield* createSession(host)
        const before = serverSockets(portOf(host))
        const client = yield* stalled(host, `/api/session/${session.id}/event`)
        yield* eventually(Effect.sync(() => serverSockets(portOf(host)) === before + 1))
        // 600 durable events of ~64 KB each: far more than the socket buffers hold.
        const big = "s".repeat(64 * 1024)
        const last = yield* appendSynthetic(host, session.id, 600, 50, big)
        yield* eventually(Effect.sync(() => serverSockets(portOf(host)) === before))
        client.socket.resume()
        expect(yield* Effect.promise(() => client.closed)).toMatch(/ECONNRESET|close/)

        // The client comes back saying what it had (here: up to seq 5) and gets the rest, in order.
        const response = yield* open(host, `/api/session/${session.id}/event`, { "last-event-id": "5" })
        expect(response.status).toBe(200)
        const reader = new SseReader(response)
        const ids: Array<number> = []
        while (ids.length < last - 5) {
          const frame = yield* Effect.promise(() => reader.next())
          if (frame === undefined) break
          ids.push(Number(frame.id))
        }
        expect(ids[0]).toBe(6)
        expect(ids.at(-1)).toBe(last)
        yield* Effect.promise(() => reader.cancel())
      }),
    60_000
  )

  it.scopedLive(
    "a client that reads a long replay slowly is not cut off, though the socket drains less often than the write timeout",
    () =>
      Effect.gen(function* () {
        // At 1 MB/s a full loopback send buffer drains in steps about 1.3 s apart (Linux wakes the
        // writer once a third of its 4 MiB is free): only the kernel's send queue shows the reading.
        const host = yield* start("network", { writeTimeout })
        const session = yield* createSession(host)
        const last = yield* appendSynthetic(host, session.id, 130, 20, "s".repeat(64 * 1024))
        // Done once the last event's frame is whole (it is read in pieces of 20 KB: look at the tail).
        const read = yield* slowRead(host, `/api/session/${session.id}/event`, 1_000_000, (body) => {
          const at = body.indexOf(`id: ${last}\n`, Math.max(0, body.length - 256 * 1024))
          return at !== -1 && body.indexOf("\n\n", at) !== -1
        })
        expect(read.ended).toBeUndefined()
        const ids = [...read.body.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]))
        expect(ids).toEqual(Array.from({ length: last }, (_, i) => i + 1))
      }),
    60_000
  )

  it.scopedLive("a client that reads, or a quiet stream, is not cut off by the write timeout", () =>
    Effect.gen(function* () {
      const host = yield* start("network", { writeTimeout, heartbeat: "10 seconds" })
      const session = yield* createSession(host)
      const response = yield* open(host, "/api/event")
      const reader = new SseReader(response)
      expect((yield* Effect.promise(() => reader.next()))?.event).toBe("server.connected")
      // Nothing to write for three write timeouts.
      yield* Effect.sleep("3 seconds")
      expect(yield* bus(host).subscriberCount).toBe(1)
      // Then a lot, read as it comes (the reader runs while the events are published).
      const reading = yield* Effect.fork(
        Effect.gen(function* () {
          let seen = 0
          while (seen < 200) {
            const frame = yield* Effect.promise(() => reader.next())
            if (frame === undefined) break
            if (frame.event === "session.next.text.delta") seen++
          }
          return seen
        })
      )
      for (let i = 0; i < 200; i++) {
        yield* withCore(host, Effect.flatMap(bigDelta(session.id, i), bus(host).publish))
        if (i % 10 === 9) yield* Effect.sleep("5 millis")
      }
      expect(yield* Fiber.join(reading)).toBe(200)
      expect(yield* bus(host).subscriberCount).toBe(1)
      yield* Effect.promise(() => reader.cancel())
    })
  )
})
