import * as path from "node:path"
import * as Sse from "@effect/experimental/Sse"
import { HttpApiBuilder, HttpApp, HttpServer } from "@effect/platform"
import { Config, type Core, EventLog, LiveBus, Locations, Sessions } from "@opencode-ai/core"
import { TestDatabase } from "@opencode-ai/core/testing"
import { Identifier } from "@opencode-ai/schema"
import { Clock, Context, Effect, Layer, Option, Schedule, type Scope } from "effect"
import { Router } from "../src/router.js"
import type { EventStreams } from "../src/sse/event-streams.js"
import { WebHandler } from "../src/web-handler.js"
import { listener, tempDir } from "./harness.js"

/**
 * A host for stream tests: Server's router over a Core the test can reach (to append durable events
 * and publish live ones directly), served either by a real listener on 127.0.0.1 (`network`) or by
 * the in-memory web handler the embedded SDK uses (`in-memory`). Closed with the enclosing Scope.
 */
export interface Host {
  readonly kind: "network" | "in-memory"
  /** Where requests go: a real origin, or a placeholder the in-memory fetch ignores. */
  readonly url: string
  /** `globalThis.fetch` for the network host; the web handler for the in-memory one. */
  readonly fetch: typeof globalThis.fetch
  readonly core: Context.Context<Core.Services>
}

export type Kind = Host["kind"]

const coreLayer = () => {
  const dir = tempDir("streams")
  return TestDatabase.coreLayer({
    databaseFile: path.join(dir, "opencode.db"),
    directory: dir,
    configDir: path.join(dir, "config"),
    env: {},
    config: Config.layerTest({})
  })
}

export const start = (kind: Kind, eventStreams: EventStreams.Options = {}): Effect.Effect<Host, never, Scope.Scope> =>
  kind === "network" ? network(eventStreams) : inMemory(eventStreams)

/** The listener composition of `Serve.layer` (router, then listener, then Core), with Core exposed. */
const network = (eventStreams: EventStreams.Options) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      HttpApiBuilder.serve().pipe(
        Layer.provide(Router.layer({ auth: Option.none(), eventStreams })),
        Layer.provideMerge(listener()),
        Layer.provideMerge(coreLayer())
      )
    ).pipe(Effect.orDie)
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    return {
      kind: "network",
      url: `http://127.0.0.1:${address.port}`,
      fetch: globalThis.fetch,
      core: context as Context.Context<Core.Services>
    } satisfies Host
  })

/** `WebHandler.make`'s composition (its fetch semantics included), with Core exposed. */
const inMemory = (eventStreams: EventStreams.Options) =>
  Effect.gen(function* () {
    const runtime = yield* Layer.toRuntime(
      Layer.mergeAll(
        Router.layer({ auth: Option.none(), eventStreams }),
        HttpApiBuilder.Router.Live,
        HttpApiBuilder.Middleware.layer,
        HttpServer.layerContext
      ).pipe(Layer.provideMerge(coreLayer()))
    ).pipe(Effect.orDie)
    const app = yield* HttpApiBuilder.httpApp.pipe(Effect.provide(runtime))
    const handler = WebHandler.fetchSemantics(HttpApp.toWebHandlerRuntime(runtime)(app))
    const fetch: typeof globalThis.fetch = (input, init) => handler(new Request(input, init))
    return {
      kind: "in-memory",
      url: "http://opencode.embedded",
      fetch,
      core: runtime.context as Context.Context<Core.Services>
    } satisfies Host
  })

/** Runs `effect` against the host's Core. */
export const withCore = <A, E>(host: Host, effect: Effect.Effect<A, E, Core.Services>): Effect.Effect<A, E> =>
  Effect.provide(effect, host.core)

/** A new session in the host's default location; its log holds `session.created` (seq 1). */
export const createSession = (host: Host) =>
  withCore(
    host,
    Effect.gen(function* () {
      const location = yield* (yield* Locations.Service).resolve(undefined).pipe(Effect.orDie)
      return yield* (yield* Sessions.Service).create({ location })
    })
  )

/**
 * Appends `count` durable `session.next.synthetic` events, one commit each; resolves with the last
 * seq. `pace` yields to the scheduler (a 1 ms sleep) every that many commits, so concurrent readers
 * connect while the log is still growing. `text` replaces each event's short text.
 */
export const appendSynthetic = (host: Host, sessionID: string, count: number, pace?: number, text?: string) =>
  withCore(
    host,
    Effect.gen(function* () {
      const log = yield* EventLog.Service
      let last = 0
      for (let i = 0; i < count; i++) {
        const now = yield* Clock.currentTimeMillis
        const [committed] = yield* log.append(sessionID, [
          {
            type: "session.next.synthetic",
            version: 1,
            data: { timestamp: now, sessionID, messageID: Identifier.newMessageID(now), text: text ?? `note ${i}` }
          }
        ])
        last = committed?.durable.seq ?? last
        if (pace !== undefined && i % pace === pace - 1) yield* Effect.sleep("1 millis")
      }
      return last
    })
  )

export const bus = (host: Host) => Context.get(host.core, LiveBus.Service)

// ── A raw SSE reader ────────────────────────────────────────────────────────────────────────────────

export interface Frame {
  readonly id: string | undefined
  readonly event: string
  readonly data: string
}

/**
 * Reads an SSE body: frames through Effect's SSE parser, comment lines counted separately (the parser
 * skips them). `next` resolves with the next frame, or `undefined` when the body has ended.
 */
export class SseReader {
  comments = 0
  ended = false
  private readonly frames: Array<Frame> = []
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>
  private readonly decoder = new TextDecoder()
  private pendingLine = ""
  private readonly parser = Sse.makeParser((event) => {
    if (event._tag === "Event") this.frames.push({ id: event.id, event: event.event, data: event.data })
  })

  constructor(readonly response: Response) {
    if (response.body === null) throw new Error("no body")
    this.reader = response.body.getReader()
  }

  async next(): Promise<Frame | undefined> {
    while (this.frames.length === 0) {
      if (this.ended) return undefined
      await this.pull()
    }
    return this.frames.shift()
  }

  /** Reads until `count` comment lines have arrived in total. */
  async untilComments(count: number): Promise<void> {
    while (this.comments < count && !this.ended) await this.pull()
  }

  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => {})
  }

  private async pull(): Promise<void> {
    const { done, value } = await this.reader.read()
    if (done) {
      this.ended = true
      return
    }
    const text = this.decoder.decode(value, { stream: true })
    const lines = (this.pendingLine + text).split("\n")
    this.pendingLine = lines.pop() ?? ""
    this.comments += lines.filter((line) => line.startsWith(":")).length
    this.parser.feed(text)
  }
}

export const open = (host: Host, pathAndQuery: string, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  Effect.promise(() =>
    host.fetch(`${host.url}${pathAndQuery}`, {
      headers: { accept: "text/event-stream", ...headers },
      ...(signal ? { signal } : {})
    })
  )

/** Waits (polling, without timing assertions) until `check` holds. */
export const eventually = <E, R>(check: Effect.Effect<boolean, E, R>) =>
  Effect.repeat(check, { until: (ok) => ok, schedule: Schedule.spaced("5 millis") })
