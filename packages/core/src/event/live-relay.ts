export * as LiveRelay from "./live-relay.js"

import { SqlClient } from "@effect/sql"
import { Identifier } from "@opencode-ai/schema"
import { Context, Deferred, Duration, Effect, Layer, Option, Schema } from "effect"
import { WallClock } from "../clock/wall-clock.js"
import { SessionRunner } from "../runner/session-runner.js"
import type { LiveBus } from "./live-bus.js"
import { LiveBus as Bus } from "./live-bus.js"

/*
 * The LiveRelay: what only the LiveBus carries, shared by the hosts over one PostgreSQL database.
 *
 *   host A: LiveBus ──observe──► session-scoped live-only envelopes ──► pg_notify(opencode_live) ─┐
 *   host B: LiveBus ◄──publish── (after their durable predecessor) ◄── LISTEN opencode_live ◄─────┘
 *   every host: its running sessions ──► pg_notify(opencode_live) every second ──► `active` elsewhere
 *
 * Durable events need none of this: EventLog announces every commit and each host reads the rows, so
 * they arrive gapless and in order. Live-only envelopes (text, reasoning, tool-input and compaction
 * deltas, `session.deleted`) have no row: the relay sends them themselves, best-effort. A delta may
 * be lost (the LISTEN connection drops, a host dies, a burst outgrows the queue); it is never sent
 * twice, and each host keeps the order its own host published a session's events in:
 * - a delta waits for the durable event it followed on its host (up to {@link orderWaitMs}); if that
 *   event has not come by then, the delta is dropped rather than shown before it, and later deltas
 *   stop waiting for that event;
 * - a delta that arrives after a durable event that followed it on its host is dropped. This happens
 *   when a delta and that later event committed in one chunk (the commit's announcement overtakes the
 *   delta): the durable event already carries what the delta said.
 * Instance-local live events (a PTY's, which only its host can serve) stay on their host.
 *
 * NOTIFY payloads are limited to 8000 bytes: envelopes are batched into payloads of at most
 * {@link payloadBytes}, and a batch that is larger (one long delta) is cut into fragments the
 * receiver joins again; fragments of one batch travel back to back (one sender fiber), so a batch
 * interrupted by another of its origin's is incomplete and dropped.
 *
 * Over SQLite nothing is relayed: processes sharing a file share durable events (EventLog's relay)
 * but each keeps its live deltas and its `active` to itself.
 */

/** The PostgreSQL channel that carries live-only envelopes and running-session announcements. */
export const channel = "opencode_live"

/** The largest NOTIFY payload the relay sends, in UTF-8 bytes (PostgreSQL refuses 8000 and more). */
export const payloadBytes = 7_800

/** How long a relayed delta waits on the receiving host for the durable event it followed (ms). */
export const orderWaitMs = 5_000

/** How often a host announces the sessions it runs, when they have not changed meanwhile (ms). */
export const announceMs = 1_000

/**
 * How long a host's announcement counts (ms): a host that stopped announcing (it died, or lost its
 * database connection) drops out of `active` everywhere after this.
 */
export const presenceMs = 3_500

/** One host's last announcement: the sessions it runs, and until when (epoch ms) that counts. */
interface Announcement {
  readonly sessions: ReadonlyArray<Identifier.SessionID>
  readonly until: number
}

/** How many outgoing envelopes may wait to be sent; beyond that new ones are dropped (best-effort). */
const outgoingCapacity = 10_000

/** How many sessions' last durable seq a host remembers (oldest forgotten first). */
const seenCapacity = 10_000

export interface Interface {
  /**
   * The sessions other hosts on this database announced they run, as they last announced them (at
   * most {@link presenceMs} old; a host that dies stops announcing). Empty over SQLite. An
   * announcement can outlive the drain it named by up to that long: `RunningSessions.elsewhere`
   * keeps only those whose lease a live host still holds.
   */
  readonly activeElsewhere: Effect.Effect<ReadonlyArray<Identifier.SessionID>>
}

/** `yield* LiveRelay.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/LiveRelay")<Service, Interface>() {}

/** One relayed envelope and the last durable seq of its session its host had published before it (-1: none). */
type Relayed = readonly [after: number, envelope: LiveBus.Envelope]

/** A whole message: envelopes (`e`) or a running-sessions announcement (`a`, valid for `t` ms). */
const Message = Schema.parseJson(
  Schema.Struct({
    o: Schema.String,
    e: Schema.optional(Schema.Array(Schema.Tuple(Schema.Number, Schema.Unknown))),
    a: Schema.optional(Schema.Array(Identifier.SessionID)),
    t: Schema.optional(Schema.Number)
  })
)
const decodeMessage = Schema.decodeUnknownOption(Message)

/** `f:<origin>:<batch>:<index>:<count>:<text>`: one fragment of a message longer than a payload. */
const fragmentPattern = /^f:([^:]+):(\d+):(\d+):(\d+):/

const sessionIDOf = (data: unknown): string | undefined => {
  const id =
    typeof data === "object" && data !== null ? (data as { readonly sessionID?: unknown }).sessionID : undefined
  return typeof id === "string" ? id : undefined
}

/**
 * `text` as NOTIFY payloads of at most {@link payloadBytes} bytes: itself, or fragments of it. A
 * fragment holds at most `payloadBytes / 3` UTF-16 units (3 bytes each at most in UTF-8) and never
 * splits a surrogate pair.
 */
export const payloads = (origin: string, batch: number, text: string): ReadonlyArray<string> => {
  if (Buffer.byteLength(text) <= payloadBytes) return [text]
  const header = (index: number, count: number) => `f:${origin}:${batch}:${index}:${count}:`
  const room = Math.floor((payloadBytes - header(99_999, 99_999).length) / 3)
  const slices: Array<string> = []
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + room, text.length)
    const last = text.charCodeAt(end - 1)
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--
    slices.push(text.slice(start, end))
    start = end
  }
  return slices.map((slice, index) => header(index, slices.length) + slice)
}

/**
 * The relay of this host (see the diagram above). Over PostgreSQL it sends and receives on
 * {@link channel} from when the layer is built until it closes; at close it announces that it runs
 * nothing, so the others drop it at once. Over SQLite it does nothing.
 */
export const layer: Layer.Layer<Service, never, SqlClient.SqlClient | Bus.Service | SessionRunner.Service> =
  Layer.scoped(
    Service,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const isPostgres = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
      // Other hosts' running sessions, by origin, with when the announcement stops counting.
      const elsewhere = new Map<string, Announcement>()
      const service = Service.of({
        activeElsewhere: Effect.sync(() => {
          const now = Date.now()
          const all = new Set<Identifier.SessionID>()
          for (const [origin, entry] of elsewhere) {
            if (entry.until < now) elsewhere.delete(origin)
            else for (const id of entry.sessions) all.add(id)
          }
          return [...all]
        })
      })
      if (!isPostgres) return service

      // Loaded only when the database is PostgreSQL.
      const { PgClient, listenForever } = yield* Effect.promise(() => import("../storage/postgres-database.js"))
      const pg = yield* Effect.serviceOption(PgClient.PgClient)
      if (Option.isNone(pg)) return service
      const bus = yield* Bus.Service
      const runner = yield* SessionRunner.Service
      const origin = Identifier.newEventID()

      // The last durable seq of each session published on this bus (own commits and relayed ones).
      const seen = new Map<string, number>()
      // Relayed deltas waiting for their session's seq to reach `after`.
      const waiting = new Map<string, Array<{ readonly after: number; readonly ready: Deferred.Deferred<void> }>>()
      // The envelopes this relay published: never sent back out.
      const foreign = new WeakSet<LiveBus.Envelope>()
      let outgoing: Array<Relayed> = []
      let wakeSender = yield* Deferred.make<void>()

      yield* bus.observe((envelope) => {
        const durable = envelope.durable
        if (durable !== undefined) {
          const id = durable.aggregateID
          seen.delete(id)
          seen.set(id, durable.seq)
          if (seen.size > seenCapacity) seen.delete(seen.keys().next().value!)
          const waiters = waiting.get(id)
          if (waiters !== undefined) {
            const rest = waiters.filter((waiter) => {
              if (waiter.after > durable.seq) return true
              Deferred.unsafeDone(waiter.ready, Effect.void)
              return false
            })
            if (rest.length === 0) waiting.delete(id)
            else waiting.set(id, rest)
          }
          return
        }
        if (foreign.has(envelope)) return
        const sessionID = sessionIDOf(envelope.data)
        if (sessionID === undefined || outgoing.length >= outgoingCapacity) return
        outgoing.push([seen.get(sessionID) ?? -1, envelope])
        Deferred.unsafeDone(wakeSender, Effect.void)
      })

      const notify = (payload: string) => sql`SELECT pg_notify(${channel}, ${payload})`.pipe(Effect.asVoid)
      let batch = 0
      const send = (message: {
        readonly e?: ReadonlyArray<Relayed>
        readonly a?: ReadonlyArray<string>
        readonly t?: number
      }) =>
        Effect.forEach(payloads(origin, batch++, JSON.stringify({ o: origin, ...message })), notify, { discard: true })

      // The sender: batches of envelopes, each as few payloads as fit, in publish order.
      yield* Effect.gen(function* () {
        yield* Deferred.await(wakeSender)
        wakeSender = yield* Deferred.make<void>()
        const taken = outgoing
        outgoing = []
        let group: Array<Relayed> = []
        let bytes = 0
        for (const relayed of taken) {
          const size = Buffer.byteLength(JSON.stringify(relayed))
          if (group.length > 0 && bytes + size > payloadBytes - 64) {
            yield* send({ e: group })
            group = []
            bytes = 0
          }
          group.push(relayed)
          bytes += size + 1
        }
        if (group.length > 0) yield* send({ e: group })
      }).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("relaying live events failed", cause)),
        Effect.forever,
        Effect.forkScoped
      )

      // This host's running sessions: announced when they change, and every `announceMs` regardless.
      let announced: string | undefined
      let lastAnnounce = 0
      yield* Effect.gen(function* () {
        const sessions = Object.keys(yield* runner.active).sort()
        const key = sessions.join(",")
        const now = Date.now()
        if (key === announced && now - lastAnnounce < announceMs) return
        yield* send({ a: sessions, t: presenceMs })
        announced = key
        lastAnnounce = now
      }).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("announcing running sessions failed", cause)),
        (announce) => WallClock.every(200, announce),
        Effect.forkScoped
      )
      yield* Effect.addFinalizer(() => send({ a: [], t: 0 }).pipe(Effect.ignore))

      // The receiver: joins fragments, then publishes envelopes in order, or records an announcement.
      const partial = new Map<string, { batch: string; parts: Array<string> }>()
      const publishRelayed = (entries: ReadonlyArray<readonly [number, unknown]>) =>
        Effect.forEach(
          entries,
          ([after, value]) =>
            Effect.gen(function* () {
              const envelope = value as LiveBus.Envelope
              const sessionID = sessionIDOf(envelope.data)
              if (sessionID !== undefined && after > (seen.get(sessionID) ?? -1)) {
                const ready = yield* Deferred.make<void>()
                const list = waiting.get(sessionID) ?? []
                list.push({ after, ready })
                waiting.set(sessionID, list)
                const arrived = yield* Deferred.await(ready).pipe(Effect.timeoutOption(Duration.millis(orderWaitMs)))
                if (Option.isNone(arrived)) {
                  const rest = (waiting.get(sessionID) ?? []).filter((waiter) => waiter.ready !== ready)
                  if (rest.length === 0) waiting.delete(sessionID)
                  else waiting.set(sessionID, rest)
                }
                // Its predecessor did not come in time: this delta is dropped, and later deltas do not
                // wait for that event again.
                if (Option.isNone(arrived)) {
                  if (after > (seen.get(sessionID) ?? -1)) seen.set(sessionID, after)
                  return
                }
              }
              // Late: a durable event that followed it on its host is out here already. Dropped, so
              // that no host shows a delta after the event that closed its block.
              if (sessionID !== undefined && after < (seen.get(sessionID) ?? -1)) return
              foreign.add(envelope)
              yield* bus.publish(envelope)
            }),
          { discard: true }
        )
      const received = (payload: string) =>
        Effect.gen(function* () {
          let text = payload
          const fragment = fragmentPattern.exec(payload)
          if (fragment !== null) {
            const [head, from, batchOf, index, count] = fragment
            if (from === origin) return
            const current = partial.get(from!)
            const parts = current !== undefined && current.batch === batchOf && Number(index) > 0 ? current.parts : []
            if (Number(index) !== parts.length) return partial.delete(from!)
            parts.push(payload.slice(head.length))
            if (parts.length < Number(count)) return partial.set(from!, { batch: batchOf!, parts })
            partial.delete(from!)
            text = parts.join("")
          }
          const message = decodeMessage(text)
          if (Option.isNone(message) || message.value.o === origin) return
          const { o, e, a, t } = message.value
          if (a !== undefined) {
            if (a.length === 0 || t === undefined || t <= 0) elsewhere.delete(o)
            else elsewhere.set(o, { sessions: a, until: Date.now() + t })
          }
          if (e !== undefined) yield* publishRelayed(e)
        }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("receiving relayed live events failed", cause)))
      yield* listenForever(pg.value, channel, received, "listening for relayed live events")
      return service
    })
  )
