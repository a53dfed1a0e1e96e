export * as EventLog from "./event-log.js"

import { SqlClient, SqlError } from "@effect/sql"
import { type Event, Identifier } from "@opencode-ai/schema"
import { Chunk, Clock, Context, Effect, Layer, PubSub, type Queue, Schema, type Scope, Stream } from "effect"
import { WallClock } from "../clock/wall-clock.js"
import { RuntimeMetrics } from "../observability/runtime-metrics.js"
import * as LiveBus from "./live-bus.js"

/** A committed durable event: the schema's envelope with `durable` always present. */
export interface Envelope {
  readonly id: Identifier.EventID
  readonly type: string
  readonly durable: Event.Durable
  readonly data: unknown
}

/** An event to append: its type, the schema version of that type, and its JSON-serialisable data. */
export interface Draft {
  readonly type: string
  readonly version: number
  readonly data: unknown
}

/**
 * How an append numbers its events. `opens: true` marks the first event as the aggregate's origin
 * (a session's `session.created`): when the aggregate has no events yet it is numbered 0, so the
 * aggregate's own events still start at seq 1 and a read after seq 0 (the default) never returns
 * it. On an aggregate that already has events it is numbered like any other (the caller's
 * projection decides whether that is an error).
 */
export interface AppendOptions {
  readonly opens?: boolean | undefined
  /**
   * Live-only envelopes (deltas) published to the instance's LiveBus among the committed ones, once
   * they have committed: each `[index, envelope]` just before the committed envelope at `index`
   * (`events.length`: after the last), in the given order. Live subscribers thus see a batch in the
   * order it was produced although it commits as one transaction. Not written, not sent to
   * {@link Interface.subscribe}.
   */
  readonly live?: ReadonlyArray<readonly [index: number, envelope: LiveBus.Envelope]> | undefined
}

/** The committed envelopes with `live` (see {@link AppendOptions.live}) in their places. */
const interleave = (
  committed: ReadonlyArray<Envelope>,
  live: ReadonlyArray<readonly [number, LiveBus.Envelope]> | undefined
): ReadonlyArray<LiveBus.Envelope> => {
  if (live === undefined || live.length === 0) return committed
  const out: Array<LiveBus.Envelope> = []
  let next = 0
  for (let index = 0; index <= committed.length; index++) {
    while (next < live.length && live[next]![0] <= index) out.push(live[next++]![1])
    if (index < committed.length) out.push(committed[index]!)
  }
  while (next < live.length) out.push(live[next++]![1])
  return out
}

/**
 * Runs inside the append's transaction, after the event rows are written, to update the read
 * models. A failure (or defect) rolls the whole append back, and the failure is the append's.
 */
export type Projection<E> = (committed: ReadonlyArray<Envelope>) => Effect.Effect<void, E, SqlClient.SqlClient>

export interface Interface {
  /**
   * Appends `events` to one aggregate's log as a single transaction: the sequence bump (gapless,
   * the first event of an aggregate gets seq 1, or 0 for an origin event: see {@link AppendOptions}),
   * the event rows and `project` commit together or
   * not at all. Resolves with the committed envelopes once committed; only then are they published
   * to live subscribers ({@link Interface.subscribe} and the instance's LiveBus), in commit order,
   * before this resolves. Appending no events writes and publishes nothing.
   *
   * Interruption while waiting for the writer leaves nothing written; once the transaction starts the
   * append runs to completion. It must not be called inside another SQL transaction (including from
   * a projection): that is a defect, because "published after commit" could not hold.
   */
  readonly append: <E = never>(
    aggregateID: string,
    events: ReadonlyArray<Draft>,
    project?: Projection<E>,
    options?: AppendOptions
  ) => Effect.Effect<ReadonlyArray<Envelope>, E>
  /**
   * Deletes whole aggregates: `project` (the read models of the aggregates, e.g. their rows
   * elsewhere; it runs first, so it can still read their logs, and returns the further aggregates
   * that go with them, if any), then the event rows and sequences of all of them, in ONE transaction, all or
   * nothing; a failure of `project` rolls it back and is this call's. Once committed, and
   * before this resolves, `announce` (live-only envelopes saying what was removed) is published to
   * the instance's LiveBus, and every {@link Interface.follow} of a removed aggregate in this process
   * ends when it reaches the last of them (one that starts later ends at once). Removing an
   * aggregate that has no log only runs `project`.
   *
   * A later append to a removed aggregate starts a new log (an origin append numbers it from 0
   * again); callers keep that from happening by forgetting the aggregate in the same transaction.
   * Event rowids never go back below those already handed out, so the relay of other processes over
   * the same file keeps seeing every later commit. Interruption while waiting for the writer leaves
   * everything in place; once the transaction starts it runs to completion. Like append, it must not
   * run inside another SQL transaction.
   */
  readonly remove: <E = never>(
    aggregateIDs: ReadonlyArray<string>,
    options: {
      readonly project?:
        | ((removed: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, E, SqlClient.SqlClient>)
        | undefined
      /** What the LiveBus is told once the removal has committed; its last envelope ends the follows. */
      readonly announce: readonly [LiveBus.Envelope, ...Array<LiveBus.Envelope>]
    }
  ) => Effect.Effect<void, E>
  /** The committed envelopes of one aggregate with `seq > after` (default 0), in seq order. */
  readonly read: (aggregateID: string, options?: { readonly after?: number }) => Effect.Effect<ReadonlyArray<Envelope>>
  /**
   * A live subscription to every envelope committed (on any aggregate) after it is taken, in commit
   * order. It lives until the scope closes; the queue is unbounded, so drain it.
   */
  readonly subscribe: Effect.Effect<Queue.Dequeue<Envelope>, never, Scope.Scope>
  /**
   * One aggregate's log as a stream without gaps or duplicates: the committed envelopes with
   * `seq > after`, then every later one as it commits (here at once; in another process sharing the
   * file, once the relay finds it). It ends when the aggregate is removed in this process (see
   * {@link Interface.remove}) and when the instance shuts down; interrupting the consumer releases
   * the subscription.
   *
   * Memory is bounded however slow the consumer: live commits wait in a LiveBus subscription of
   * `capacity` events (default `LiveBus.defaultCapacity`), and a consumer that falls further behind
   * catches up from the database after the last seq it received, then follows live again.
   */
  readonly follow: (
    aggregateID: string,
    options?: { readonly after?: number | undefined; readonly capacity?: number | undefined }
  ) => Stream.Stream<Envelope>
}

/** The durable event log service; `yield* EventLog.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/EventLog")<Service, Interface>() {}

const Row = Schema.Struct({
  id: Identifier.EventID,
  type: Schema.String,
  seq: Schema.Int,
  version: Schema.Int,
  data: Schema.parseJson()
})
const decodeRows = Schema.decodeUnknown(Schema.Array(Row))
const decodeForeign = Schema.decodeUnknown(Schema.Array(Schema.Struct({ ...Row.fields, aggregate_id: Schema.String })))

/** How often the log looks for events other processes committed to the same file (ms). */
export const relayIntervalMs = 250

/**
 * The `event_sequence` key that holds no aggregate's sequence but the rowid floor: the largest event
 * rowid ever handed out before a {@link Interface.remove}. Appends number their rows above it, so
 * removing the newest rows never makes SQLite hand their rowids out again (the relay of every process
 * reads by rowid, and would miss a commit below a rowid it has passed).
 */
const rowidFloorKey = ""

/** How many removed aggregates a log remembers, to end the follows that start after a removal. */
const removedCapacity = 1024

/**
 * The log over the database's SqlClient; every commit is also published to the instance's LiveBus.
 * Events that other processes commit to the same file (hosts sharing a database) are published too,
 * at most {@link relayIntervalMs} later: live readers here see every session, wherever it runs.
 */
export const layer: Layer.Layer<Service, never, SqlClient.SqlClient | LiveBus.Service> = Layer.scoped(
  Service,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const bus = yield* LiveBus.Service
    const live = yield* Effect.acquireRelease(PubSub.unbounded<Envelope>(), PubSub.shutdown)
    // SQLite has one writer anyway; holding this across commit and publish keeps publish order equal
    // to commit order, so live readers see each aggregate's seq strictly increasing.
    const writer = yield* Effect.makeSemaphore(1)
    // The ids this instance committed that the relay (below) has not passed yet: not published twice.
    const own = new Set<string>()
    // Aggregates removed in this process → the id of the envelope that ends their follows
    // (insertion-ordered, so the first key is the oldest). An append to one of them forgets it.
    const removed = new Map<string, string>()

    const insert = Effect.fn("EventLog.insert")(function* (
      aggregateID: string,
      events: ReadonlyArray<Draft>,
      opens: boolean
    ) {
      // A new aggregate's sequence starts at the last seq handed out: `n` (seqs 1..n), or `n - 1`
      // when the first event is its origin (seqs 0..n-1). An existing one just advances by `n`.
      const [bumped] = yield* sql<{ readonly seq: number }>`
        INSERT INTO event_sequence (aggregate_id, seq) VALUES (${aggregateID}, ${opens ? events.length - 1 : events.length})
        ON CONFLICT (aggregate_id) DO UPDATE SET seq = seq + ${events.length}
        RETURNING seq`
      if (bumped === undefined) return yield* Effect.dieMessage(`event_sequence returned no row for ${aggregateID}`)
      const first = bumped.seq - events.length + 1
      const [top] = yield* sql<{ readonly top: number }>`
        SELECT max(
          coalesce((SELECT max(rowid) FROM event), 0),
          coalesce((SELECT seq FROM event_sequence WHERE aggregate_id = ${rowidFloorKey}), 0)
        ) AS top`
      const rowid = (top?.top ?? 0) + 1
      const now = yield* Clock.currentTimeMillis
      const committed = events.map(
        (event, index): Envelope => ({
          id: Identifier.newEventID(now),
          type: event.type,
          durable: { aggregateID, seq: first + index, version: event.version },
          data: event.data
        })
      )
      yield* sql`INSERT INTO event ${sql.insert(
        committed.map((envelope, index) => ({
          rowid: rowid + index,
          id: envelope.id,
          aggregate_id: aggregateID,
          seq: envelope.durable.seq,
          type: envelope.type,
          version: envelope.durable.version,
          data: JSON.stringify(envelope.data),
          time_created: now
        }))
      )}`
      return committed
    }, Effect.orDie)

    const append = Effect.fn("EventLog.append")(
      function* <E>(
        aggregateID: string,
        events: ReadonlyArray<Draft>,
        project?: Projection<E>,
        options?: AppendOptions
      ) {
        if (events.length === 0) return []
        const outer = yield* Effect.serviceOption(SqlClient.TransactionConnection)
        if (outer._tag === "Some") {
          return yield* Effect.dieMessage("EventLog.append must not run inside another SQL transaction")
        }
        const transaction = insert(aggregateID, events, options?.opens === true).pipe(
          Effect.tap((committed) =>
            project === undefined ? Effect.void : Effect.provideService(project(committed), SqlClient.SqlClient, sql)
          ),
          sql.withTransaction,
          RuntimeMetrics.commit,
          Effect.catchIf((error): error is SqlError.SqlError => error instanceof SqlError.SqlError, Effect.die),
          Effect.tap((committed) =>
            Effect.sync(() => {
              removed.delete(aggregateID)
              committed.forEach((envelope) => own.add(envelope.id))
            })
          ),
          Effect.tap((committed) => PubSub.publishAll(live, committed)),
          // Still under the writer permit: the bus sees commits in commit order, and before append
          // resolves, so a publisher's later live deltas can never overtake its durable events.
          Effect.tap((committed) => bus.publishAll(interleave(committed, options?.live)))
        )
        return yield* writer.withPermits(1)(Effect.uninterruptible(transaction))
      },
      (effect, aggregateID) => Effect.annotateLogs(effect, { aggregateID })
    )

    const remove = Effect.fn("EventLog.remove")(function* <E>(
      aggregateIDs: ReadonlyArray<string>,
      options: {
        readonly project?:
          | ((removed: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, E, SqlClient.SqlClient>)
          | undefined
        readonly announce: readonly [LiveBus.Envelope, ...Array<LiveBus.Envelope>]
      }
    ) {
      const outer = yield* Effect.serviceOption(SqlClient.TransactionConnection)
      if (outer._tag === "Some") {
        return yield* Effect.dieMessage("EventLog.remove must not run inside another SQL transaction")
      }
      const deleteRows = (aggregateIDs: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          if (aggregateIDs.length === 0) return
          const [top] = yield* sql<{ readonly top: number }>`SELECT coalesce(max(rowid), 0) AS top FROM event`
          yield* sql`DELETE FROM event WHERE aggregate_id IN ${sql.in(aggregateIDs)}`
          yield* sql`DELETE FROM event_sequence WHERE aggregate_id IN ${sql.in(aggregateIDs)}`
          yield* sql`
          INSERT INTO event_sequence (aggregate_id, seq) VALUES (${rowidFloorKey}, ${top?.top ?? 0})
          ON CONFLICT (aggregate_id) DO UPDATE SET seq = max(seq, excluded.seq)`
        })
      const marker = options.announce[options.announce.length - 1]!.id
      // The projection first, so it can still read the logs it is removing (e.g. what they refer to).
      const transaction = (
        options.project === undefined
          ? Effect.succeed<ReadonlyArray<string>>([])
          : Effect.provideService(options.project(aggregateIDs), SqlClient.SqlClient, sql)
      ).pipe(
        Effect.map((further) => [...new Set([...aggregateIDs, ...further])]),
        Effect.tap(deleteRows),
        sql.withTransaction,
        Effect.catchIf((error): error is SqlError.SqlError => error instanceof SqlError.SqlError, Effect.die),
        Effect.flatMap((removedIDs) =>
          Effect.sync(() => {
            for (const aggregateID of removedIDs) {
              removed.delete(aggregateID)
              removed.set(aggregateID, marker)
            }
            while (removed.size > removedCapacity) removed.delete(removed.keys().next().value!)
          })
        ),
        Effect.zipRight(bus.publishAll(options.announce))
      )
      return yield* writer.withPermits(1)(Effect.uninterruptible(transaction))
    })

    const read = Effect.fn("EventLog.read")(function* (aggregateID: string, options?: { readonly after?: number }) {
      const rows = yield* sql`
        SELECT id, type, seq, version, data FROM event
        WHERE aggregate_id = ${aggregateID} AND seq > ${options?.after ?? 0}
        ORDER BY seq`.pipe(Effect.flatMap(decodeRows), Effect.orDie)
      return rows.map(
        (row): Envelope => ({
          id: row.id,
          type: row.type,
          durable: { aggregateID, seq: row.seq, version: row.version },
          data: row.data
        })
      )
    })

    const subscribe = PubSub.subscribe(live)

    // The relay: events other processes committed, found by rowid (which grows in commit order, and
    // never goes back: see rowidFloorKey), published under the writer permit so that they never interleave
    // with a local commit and its publication.
    let relayed =
      (yield* sql<{ readonly last: number | null }>`SELECT max(rowid) AS last FROM event`.pipe(Effect.orDie))[0]
        ?.last ?? 0
    const relay = Effect.gen(function* () {
      const fresh = yield* sql<{ readonly rowid: number; readonly id: string }>`
        SELECT rowid, id FROM event WHERE rowid > ${relayed} ORDER BY rowid`.pipe(Effect.orDie)
      if (fresh.length === 0) return
      relayed = fresh.at(-1)!.rowid
      const foreign = fresh.filter((row) => !own.delete(row.id)).map((row) => row.rowid)
      if (foreign.length === 0) return
      const rows = yield* sql`
        SELECT id, aggregate_id, type, seq, version, data FROM event WHERE rowid IN ${sql.in(foreign)} ORDER BY rowid`.pipe(
        Effect.flatMap(decodeForeign),
        Effect.orDie
      )
      const envelopes = rows.map(
        (row): Envelope => ({
          id: row.id,
          type: row.type,
          durable: { aggregateID: row.aggregate_id, seq: row.seq, version: row.version },
          data: row.data
        })
      )
      yield* PubSub.publishAll(live, envelopes)
      yield* bus.publishAll(envelopes)
    }).pipe(writer.withPermits(1), Effect.withSpan("EventLog.relay"))
    yield* Effect.forkScoped(
      WallClock.every(
        relayIntervalMs,
        relay.pipe(Effect.catchAllCause((cause) => Effect.logWarning("relaying other processes' events failed", cause)))
      )
    )

    const follow = (
      aggregateID: string,
      options?: { readonly after?: number | undefined; readonly capacity?: number | undefined }
    ): Stream.Stream<Envelope> =>
      Stream.suspend(() => {
        // The last seq handed downstream by this run: where a catch-up resumes.
        let delivered = options?.after ?? 0
        const from = (after: number): Stream.Stream<Envelope> =>
          Stream.unwrapScoped(
            Effect.gen(function* () {
              // Subscribe before reading, so an append committing in between is on the bus if not in the read.
              const live = yield* bus.subscribe({ capacity: options?.capacity })
              const past = yield* read(aggregateID, { after })
              // Removed before this run subscribed: nothing more will come.
              if (removed.has(aggregateID)) return Stream.fromIterable(past)
              // The last seq this run handed on. Live events come in seq order from this process's
              // own commits; another process's arrive later through the relay, possibly behind a
              // local one: a gap is filled from the log, and what was already handed on is dropped.
              let last = past.at(-1)?.durable.seq ?? after
              const inOrder = (chunk: Chunk.Chunk<Envelope>): Effect.Effect<Chunk.Chunk<Envelope>> => {
                const out: Array<Envelope> = []
                for (const [index, envelope] of Array.from(chunk).entries()) {
                  const seq = envelope.durable.seq
                  if (seq <= last) continue
                  if (seq === last + 1) {
                    out.push(envelope)
                    last = seq
                    continue
                  }
                  const rest = Chunk.drop(chunk, index + 1)
                  return Effect.flatMap(read(aggregateID, { after: last }), (missing) => {
                    out.push(...missing)
                    last = missing.at(-1)?.durable.seq ?? last
                    return Effect.map(inOrder(rest), (more) => Chunk.appendAll(Chunk.unsafeFromArray(out), more))
                  })
                }
                return Effect.succeed(Chunk.unsafeFromArray(out))
              }
              const tail = live.pipe(
                // Removed while following: the envelope announcing it is the end.
                Stream.takeWhile((envelope) => removed.get(aggregateID) !== envelope.id),
                Stream.filter((envelope): envelope is Envelope => envelope.durable?.aggregateID === aggregateID),
                Stream.mapChunksEffect(inOrder)
              )
              return Stream.concat(Stream.fromIterable(past), tail)
            })
          ).pipe(
            Stream.tap((envelope) =>
              Effect.sync(() => {
                delivered = envelope.durable.seq
              })
            ),
            // Fell behind the bus: the log has everything, so read on from the last delivered seq.
            Stream.catchTag("SlowConsumerError", () => Stream.suspend(() => from(delivered)))
          )
        return from(delivered)
      })

    return Service.of({ append, remove, read, subscribe, follow })
  })
)
