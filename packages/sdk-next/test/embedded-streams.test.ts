import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { createOpencodeClient, isSessionNotFoundError } from "@opencode-ai/client"
import { Config } from "@opencode-ai/core"
import { OpenCode } from "@opencode-ai/sdk-next"
import { Effect, Exit, Fiber, Scope, Stream } from "effect"

/*
 * The event streams through Embedded OpenCode: the same client, the in-memory router as transport.
 * Responses stream unbuffered; each streamed response keeps its request scope until the body ends;
 * closing the host's scope ends the open streams.
 */

const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), `opencode-${prefix}-`))
const options = () => ({
  databaseFile: path.join(temp("embedded-streams"), "opencode.db"),
  directory: temp("instance"),
  env: {},
  configDir: temp("config"),
  config: Config.layerTest({}),
  eventStreams: { heartbeat: "20 millis" as const }
})

describe("event streams through Embedded OpenCode", () => {
  it.scopedLive("events.subscribe: server.connected, then live events as they happen (heartbeats are comments)", () =>
    Effect.gen(function* () {
      const host = yield* OpenCode.embedded(options())
      const received: Array<{ readonly type: string; readonly data: unknown; readonly location?: unknown }> = []
      const fiber = yield* host.events.subscribe().pipe(
        Stream.runForEach((event) => Effect.sync(() => void received.push(event))),
        Effect.fork
      )
      yield* Effect.repeat(Effect.sleep("5 millis"), { until: () => received.length > 0 })
      expect(received[0]?.type).toBe("server.connected")
      const session = yield* host.sessions.create()
      yield* Effect.repeat(Effect.sleep("5 millis"), {
        until: () => received.some((e) => e.type === "session.created")
      })
      const created = received.find((e) => e.type === "session.created")
      // The contract's session.created: the v1 session record, and the session's location.
      expect(created).toMatchObject({
        data: { sessionID: session.id, info: { id: session.id, slug: session.id, version: "0.1.0" } },
        location: { directory: session.location.directory }
      })
      // Heartbeats (every 20 ms here) are SSE comments: they never reach the decoded stream.
      yield* Effect.sleep("100 millis")
      expect(received.map((e) => e.type)).toEqual(["server.connected", "session.created"])
      yield* Fiber.interrupt(fiber)
    })
  )

  it.scopedLive("sessions.events: a typed SessionNotFoundError before streaming; a known session streams", () =>
    Effect.gen(function* () {
      const host = yield* OpenCode.embedded(options())
      const missing = yield* host.sessions
        .events({ sessionID: "ses_missing" as never })
        .pipe(Stream.runDrain, Effect.flip)
      expect(missing._tag).toBe("SessionNotFoundError")

      // Over the host's fetch the response arrives at once (headers, then a heartbeat comment), before
      // any event: the in-memory handler does not buffer the body.
      const session = yield* host.sessions.create()
      const response = yield* Effect.promise(() =>
        host.fetch(`${OpenCode.embeddedBaseUrl}/api/session/${session.id}/event`)
      )
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
      const reader = response.body!.getReader()
      const first = yield* Effect.promise(() => reader.read())
      expect(new TextDecoder().decode(first.value)).toBe(": heartbeat\n\n")
      yield* Effect.promise(() => reader.cancel())

      const promise = createOpencodeClient({ baseUrl: OpenCode.embeddedBaseUrl, fetch: host.fetch })
      const error = yield* Effect.promise(() =>
        promise.sessions
          .events({ sessionID: "ses_missing" })
          [Symbol.asyncIterator]()
          .next()
          .then(
            () => undefined,
            (e: unknown) => e
          )
      )
      expect(isSessionNotFoundError(error)).toBe(true)
    })
  )

  it.scopedLive("closing the host's scope ends open streams: global.disposed last on events.subscribe", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const host = yield* OpenCode.embedded(options()).pipe(Scope.extend(scope))
      const session = yield* host.sessions.create()
      const promise = createOpencodeClient({ baseUrl: OpenCode.embeddedBaseUrl, fetch: host.fetch })
      const live = promise.events.subscribe()[Symbol.asyncIterator]()
      expect((yield* Effect.promise(() => live.next())).value).toMatchObject({ type: "server.connected" })
      const durable: Array<unknown> = []
      const durableRun = yield* Effect.promise(async () => {
        for await (const event of promise.sessions.events({ sessionID: session.id })) durable.push(event)
        return "ended"
      }).pipe(Effect.fork)

      yield* Scope.close(scope, Exit.void)
      const types: Array<string> = []
      for (
        let step = yield* Effect.promise(() => live.next());
        step.done !== true;
        step = yield* Effect.promise(() => live.next())
      ) {
        types.push(step.value.type)
      }
      expect(types).toEqual(["global.disposed"])
      expect(yield* Fiber.join(durableRun)).toBe("ended")
      expect(durable).toEqual([])
    })
  )
})
