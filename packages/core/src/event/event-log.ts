export * as EventLog from "./event-log.js"

import { SqlClient, SqlError, SqlSchema } from "@effect/sql"
import { type Event, Identifier } from "@opencode-ai/schema"
import {
  Array as Arr,
  Chunk,
  Clock,
  Context,
  Deferred,
  Duration,
  Effect,
  identity,
  Layer,
  Option,
  ParseResult,
  PubSub,
  type Queue,
  Schema,
  type Scope,
  Stream
} from "effect"
import { WallClock } from "../clock/wall-clock.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { RuntimeMetrics } from "../observability/runtime-metrics.js"
import { Traced } from "../observability/traced.js"
import { PreparedSql } from "../storage/prepared-sql.js"
import * as FifoLock from "../sync/fifo-lock.js"
import * as CommitFence from "./commit-fence.js"
import * as LiveBus from "./live-bus.js"
import { SqliteCommitWatch } from "./sqlite-commit-watch.js"

/**
 * Aggregate IDs are plain strings: the log is generic over its aggregates (sessions are the ones the
 * runtime has, and `SessionEvents` takes a `SessionID`; the log itself never interprets the id). The
 * empty string is reserved (SQLite's commit-order counter) and is a defect to append to or remove.
 */
export type AggregateID = string

/** A committed durable event: the schema's envelope with `durable` always present. */
export interface Envelope {
  readonly id: Identifier.EventID
  readonly type: string
  readonly durable: Event.Durable
  readonly data: unknown
}

/**
 * A committed event as the contract's JSON, for writers that hand it on as bytes (the session SSE
 * stream): `json` is exactly `JSON.stringify` of its {@link Envelope}, built from the stored text
 * without parsing or re-encoding `data`.
 */
export interface Encoded {
  readonly seq: number
  readonly type: string
  readonly json: string
}

/** What {@link Interface.read} returns: `seq > after` (default 0), at most `limit`, of `types` only. */
export interface ReadOptions {
  readonly after?: number | undefined
  readonly limit?: number | undefined
  readonly types?: ReadonlyArray<string> | undefined
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
   * Event positions (SQLite's commit order) never go back below those already handed out, so the
   * relay of other processes over the same file keeps seeing every later commit. Follows in other
   * processes are not ended by a removal (they see no more events). Interruption while waiting for the writer leaves
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
  /**
   * The committed envelopes of one aggregate with `seq > after` (default 0), in seq order; at most
   * `limit` of them, and only those of `types` when given. Inside a transaction (e.g. from a
   * projection) it reads on that transaction's connection.
   */
  readonly read: (aggregateID: string, options?: ReadOptions) => Effect.Effect<ReadonlyArray<Envelope>>
  /**
   * The committed envelopes of several aggregates (every seq, origins included), of `types` only when
   * given, ordered by aggregate ID then seq. Inside a transaction it reads on its connection.
   */
  readonly readMany: (
    aggregateIDs: ReadonlyArray<string>,
    options?: { readonly types?: ReadonlyArray<string> | undefined }
  ) => Effect.Effect<ReadonlyArray<Envelope>>
  /** The last seq handed out to `aggregateID` (0 when it has no log), on the current connection. */
  readonly lastSeq: (aggregateID: string) => Effect.Effect<number>
  /**
   * A live subscription to every envelope committed (on any aggregate) after it is taken, in commit
   * order. It lives until the scope closes; the queue is unbounded, so drain it.
   */
  readonly subscribe: Effect.Effect<Queue.Dequeue<Envelope>, never, Scope.Scope>
  /**
   * One aggregate's log as a stream without gaps or duplicates: the committed envelopes with
   * `seq > after`, then every later one as it commits (here at once; in another process sharing the
   * database, once the relay finds it or PostgreSQL announces it). It ends when the aggregate is removed in this process (see
   * {@link Interface.remove}) and when the instance shuts down; interrupting the consumer releases
   * the subscription.
   *
   * Memory is bounded however slow the consumer: live commits wait in a LiveBus subscription of
   * `capacity` events (default `LiveBus.defaultCapacity`), and a consumer that falls further behind
   * catches up from the database after the last seq it received, then follows live again.
   */
  readonly follow: (aggregateID: string, options?: FollowOptions) => Stream.Stream<Envelope>
  /**
   * {@link follow} as encoded JSON (see {@link Encoded}), with the same guarantees, for a consumer that
   * is not a Stream (an SSE response body): runs the follow, handing each replay page or batch of live
   * commits to `push` and waiting for it before reading on, so memory stays bounded by the consumer's
   * pace. The replay reads the log in keyset pages (`seq > last ORDER BY seq LIMIT n`, a small first
   * page, then larger ones), so the first events are handed on before the last row is read and a
   * writer can frame a whole page at once. It succeeds when the follow ends (the aggregate is removed in
   * this process, or the instance shuts down) and never fails; interrupting it releases the
   * subscription.
   */
  readonly pumpEncoded: (
    aggregateID: string,
    push: (batch: ReadonlyArray<Encoded>) => Effect.Effect<void>,
    options?: FollowOptions
  ) => Effect.Effect<void>
}

/** Where a follow starts (`seq > after`, default 0) and its live buffer (see {@link Interface.follow}). */
export interface FollowOptions {
  readonly after?: number | undefined
  /** The LiveBus subscriber's capacity, in events; default `LiveBus.defaultCapacity`. */
  readonly capacity?: number | undefined
}

/** The durable event log service; `yield* EventLog.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/EventLog")<Service, Interface>() {}

/** A row another process committed, as stored: `data` is the contract-encoded JSON text written at append. */
const ForeignRow = Schema.Struct({
  id: Schema.String,
  aggregate_id: Schema.String,
  type: Schema.String,
  seq: Schema.Number,
  version: Schema.Number,
  data: Schema.String,
  position: Schema.Number
})
const EnvelopeRow = Schema.Struct({
  id: Identifier.EventID,
  aggregate_id: Schema.String,
  type: Schema.String,
  seq: Schema.Int,
  version: Schema.Int,
  data: Schema.parseJson()
})
const SeqRow = Schema.Struct({ seq: Schema.Number })

/** The rows of one multi-row event insert, at most (8 placeholders each, well under SQLite's limit). */
const insertBatch = 500

/** `row[column]` as a number (PostgreSQL may answer a bigint as a string); anything else is a defect. */
const numberOf = (row: PreparedSql.Row | undefined, column: string): number => {
  const value = Number(row?.[column])
  if (row === undefined || typeof row[column] === "boolean" || !Number.isSafeInteger(value))
    throw new Error(`EventLog: expected an integer ${column}, got ${JSON.stringify(row)}`)
  return value
}
const PositionRow = Schema.Struct({ position: Schema.Number })

/**
 * How often, at the longest, the log looks for events other processes committed to the same SQLite
 * file (ms): the file system's report of a write comes first where it has one.
 */
export const relayIntervalMs = 250

/** The PostgreSQL channel that announces every durable commit (see {@link layer}). */
export const channel = "opencode_event"

/**
 * The `event_sequence` key that holds no aggregate's sequence but the SQLite commit-order counter:
 * the last `event.position` handed out. Each append bumps it in its own transaction, so (SQLite
 * having one writer) positions grow in commit order and never go back, even when the newest rows are
 * removed. It is not an aggregate: appending to or removing it is a defect.
 */
const positionKey = ""

/** How many removed aggregates a log remembers, to end the follows that start after a removal. */
const removedCapacity = 1024

/**
 * The sizes of the keyset pages a replay reads: a small first page, so that the first event is
 * handed on before the rest of a long log is read, then larger ones.
 */
const firstPage = 64
const nextPages = 256

/**
 * The {@link Encoded} of one row of a replay page, selected as `[seq, type, id, version, data]` values.
 * `json` is byte for byte what `JSON.stringify` of the row's {@link Envelope} gives (same keys in the
 * same order; `data` is the stored JSON text itself, never parsed). A replay reads thousands of rows,
 * so they come as arrays (no object per row) and are checked by hand instead of through a Schema
 * decode; a row of other types is a broken invariant (a defect).
 */
const encodeValues = (aggregateJson: string, row: ReadonlyArray<unknown>): Encoded => {
  const [seq, type, id, version, data] = row
  if (
    typeof seq !== "number" ||
    typeof type !== "string" ||
    typeof id !== "string" ||
    typeof version !== "number" ||
    typeof data !== "string"
  ) {
    throw new Error(`EventLog: a stored event row has unexpected column types: ${JSON.stringify(row).slice(0, 200)}`)
  }
  return {
    seq,
    type,
    json: `{"id":${JSON.stringify(id)},"type":${JSON.stringify(type)},"durable":{"aggregateID":${aggregateJson},"seq":${seq},"version":${version}},"data":${data}}`
  }
}

/** What a commit announces on PostgreSQL: who committed, to which aggregate, its last seq and how many. */
const Announcement = Schema.parseJson(
  Schema.Struct({ origin: Schema.String, aggregateID: Schema.String, seq: Schema.Number, count: Schema.Number })
)
const decodeAnnouncement = Schema.decodeUnknownOption(Announcement)

/**
 * The log over the database's SqlClient; every commit is also published to the instance's LiveBus.
 * Events that other processes commit to the same database (hosts sharing it) are published too:
 *
 * - SQLite: a relay reads the rows above the last `position` it saw (the commit-order counter, see
 *   `positionKey`) once another connection has committed (SqliteCommitWatch: asked every
 *   `relayPollMs`, and while another connection is committing also at the file system's report of a
 *   write to the database's write-ahead log, within milliseconds of the commit).
 * - PostgreSQL: every append runs `pg_notify(channel, {origin, aggregateID, seq, count})` inside its
 *   transaction, which PostgreSQL delivers on commit, in commit order, to every listener; the log
 *   listens on one connection (`PgClient.listen`, no polling) and, for another process's commit, reads
 *   that aggregate's rows by seq (not by position: a PostgreSQL sequence is not commit-ordered) and
 *   publishes them. The layer resolves once its LISTEN is in place, so no commit after that is missed
 *   while the connection holds; a follow that sees a seq gap reads the missing rows from the log.
 *
 * When a `CommitFence.Service` is in the context at build time, every append and remove calls its
 * `check` inside the transaction before writing rows (a refusal rolls everything back).
 */
export const layerWith = (options: {
  /** SQLite: how often the relay looks when the file system reports nothing; default {@link relayIntervalMs}. */
  readonly relayPollMs?: number | undefined
  /** SQLite: whether the relay also looks when the file system reports a write (default true; false only polls). */
  readonly watchFiles?: boolean | undefined
}): Layer.Layer<Service, never, SqlClient.SqlClient | LiveBus.Service> =>
  Layer.scoped(
    Service,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const bus = yield* LiveBus.Service
      const fence = yield* Effect.serviceOption(CommitFence.Service)
      // Imported here, so a host over SQLite never loads the PostgreSQL driver.
      const listener = yield* sql.onDialectOrElse({
        pg: () =>
          Effect.promise(() => import("../storage/postgres-database.js")).pipe(
            Effect.flatMap((module) =>
              Effect.map(
                Effect.serviceOption(module.PgClient.PgClient),
                Option.map((pg) => ({ pg, listenForever: module.listenForever }))
              )
            )
          ),
        orElse: () => Effect.succeedNone
      })
      const isPostgres = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
      const live = yield* Effect.acquireRelease(PubSub.unbounded<Envelope>(), PubSub.shutdown)
      // One commit at a time per process; holding this across commit and publish keeps publish order
      // equal to commit order, so live readers see each aggregate's seq strictly increasing.
      const writer = yield* FifoLock.make
      // The ids this instance committed that the SQLite relay (below) has not passed yet: not published
      // twice; and the position of its latest commit.
      const own = new Set<string>()
      let ownTop = 0
      // Who this instance is in PostgreSQL announcements: its own are not read back.
      const origin = Identifier.newEventID()
      // Aggregates removed in this process → the id of the envelope that ends their follows
      // (insertion-ordered, so the first key is the oldest). An append to one of them forgets it.
      const removed = new Map<string, string>()

      // The queries. Every one dies on an SQL or decoding error: the log's only failure mode is a defect.
      // PostgreSQL: an aggregate's sequence.
      const bumpSequence = PreparedSql.make(
        sql,
        `INSERT INTO event_sequence (aggregate_id, seq) VALUES (?, ?)
        ON CONFLICT (aggregate_id) DO UPDATE SET seq = event_sequence.seq + ? RETURNING seq`
      )
      // PostgreSQL: a position per event from a sequence.
      const newPositions = PreparedSql.make(
        sql,
        "SELECT nextval('event_position') AS position FROM generate_series(1, ?::integer)"
      )
      // SQLite: the commit-order counter is a row of event_sequence; it and the aggregate's sequence
      // both advance by the batch's size, in one statement.
      const bumpWithPosition = PreparedSql.make(
        sql,
        `INSERT INTO event_sequence (aggregate_id, seq) VALUES (?, ?), (?, ?)
        ON CONFLICT (aggregate_id) DO UPDATE SET seq = event_sequence.seq + ? RETURNING aggregate_id, seq`
      )
      // One statement per batch size (at most `insertBatch` rows each), compiled once.
      const insertColumns = "id, aggregate_id, seq, type, version, data, time_created, position"
      const insertStatements = new Map<number, PreparedSql.Statement>()
      const insertStatement = (rows: number) => {
        let statement = insertStatements.get(rows)
        if (statement === undefined) {
          const values = Array.from({ length: rows }, () => "(?, ?, ?, ?, ?, ?, ?, ?)").join(", ")
          statement = PreparedSql.make(sql, `INSERT INTO event (${insertColumns}) VALUES ${values}`)
          insertStatements.set(rows, statement)
        }
        return statement
      }
      const insertRows = (rows: ReadonlyArray<ReadonlyArray<unknown>>) =>
        Effect.forEach(Arr.chunksOf(rows, insertBatch), (batch) => insertStatement(batch.length).run(batch.flat()), {
          discard: true
        })
      const announce = SqlSchema.void({
        Request: Schema.String,
        execute: (payload) => sql`SELECT pg_notify(${channel}, ${payload})`
      })
      const deleteLogs = SqlSchema.void({
        Request: Schema.Array(Schema.String),
        execute: (aggregateIDs) =>
          sql`DELETE FROM event WHERE aggregate_id IN ${sql.in(aggregateIDs)}`.pipe(
            Effect.zipRight(sql`DELETE FROM event_sequence WHERE aggregate_id IN ${sql.in(aggregateIDs)}`)
          )
      })
      const ReadRequest = Schema.Struct({
        aggregateIDs: Schema.Array(Schema.String),
        after: Schema.Number,
        through: Schema.optional(Schema.Number),
        limit: Schema.optional(Schema.Number),
        types: Schema.optional(Schema.Array(Schema.String))
      })
      const selectRows = (request: typeof ReadRequest.Type) => sql`
      SELECT id, aggregate_id, type, seq, version, data FROM event
      WHERE ${request.aggregateIDs.length === 1 ? sql`aggregate_id = ${request.aggregateIDs[0]!}` : sql`aggregate_id IN ${sql.in(request.aggregateIDs)}`}
        AND seq > ${request.after}
        ${request.through === undefined ? sql`` : sql`AND seq <= ${request.through}`}
        ${request.types === undefined ? sql`` : sql`AND type IN ${sql.in(request.types)}`}
      ORDER BY aggregate_id, seq
      ${request.limit === undefined ? sql`` : sql`LIMIT ${request.limit}`}`
      const selectEnvelopes = SqlSchema.findAll({ Request: ReadRequest, Result: EnvelopeRow, execute: selectRows })
      const selectLastSeq = SqlSchema.findOne({
        Request: Schema.String,
        Result: SeqRow,
        execute: (aggregateID) => sql`SELECT seq FROM event_sequence WHERE aggregate_id = ${aggregateID}`
      })
      const selectAfterPosition = SqlSchema.findAll({
        Request: Schema.Number,
        Result: ForeignRow,
        execute: (after) => sql`
        SELECT id, aggregate_id, type, seq, version, data, position FROM event
        WHERE position > ${after} ORDER BY position`
      })
      const selectTopPosition = SqlSchema.single({
        Request: Schema.Void,
        Result: PositionRow,
        execute: () => sql`SELECT coalesce(max(position), 0) AS position FROM event`
      })

      const toEnvelope = (row: typeof EnvelopeRow.Type): Envelope => ({
        id: row.id,
        type: row.type,
        durable: { aggregateID: row.aggregate_id, seq: row.seq, version: row.version },
        data: row.data
      })

      const checkFence = (aggregateIDs: ReadonlyArray<string>) =>
        fence._tag === "None"
          ? Effect.void
          : Effect.forEach(aggregateIDs, (aggregateID) => fence.value.check(aggregateID), { discard: true }).pipe(
              Effect.provideService(SqlClient.SqlClient, sql)
            )

      /** The rows of one append, inside its transaction with the log's SqlClient in context (for the fence). */
      const insert = Effect.fnUntraced(function* (aggregateID: string, events: ReadonlyArray<Draft>, opens: boolean) {
        if (fence._tag === "Some") yield* fence.value.check(aggregateID)
        // A new aggregate's sequence starts at the last seq handed out: `n` (seqs 1..n), or `n - 1`
        // when the first event is its origin (seqs 0..n-1). An existing one just advances by `n`.
        const start = opens ? events.length - 1 : events.length
        let last: number
        let positions: ReadonlyArray<number>
        if (isPostgres) {
          const [bumped] = yield* bumpSequence.all([aggregateID, start, events.length])
          last = numberOf(bumped, "seq")
          positions = (yield* newPositions.all([events.length])).map((row) => numberOf(row, "position"))
        } else {
          const rows = yield* bumpWithPosition.all([aggregateID, start, positionKey, events.length, events.length])
          // RETURNING gives the two rows in no particular order.
          const seqOf = (key: string) =>
            numberOf(
              rows.find((row) => row.aggregate_id === key),
              "seq"
            )
          last = seqOf(aggregateID)
          positions = [seqOf(positionKey)]
        }
        const first = last - events.length + 1
        // SQLite answers the counter's new value (the last of ours); PostgreSQL one position per event.
        const position = (index: number) =>
          positions.length === 1 ? positions[0]! - events.length + 1 + index : positions[index]!
        const now = yield* Clock.currentTimeMillis
        const committed = events.map(
          (event, index): Envelope => ({
            id: Identifier.newEventID(now),
            type: event.type,
            durable: { aggregateID, seq: first + index, version: event.version },
            data: event.data
          })
        )
        yield* insertRows(
          committed.map((envelope, index) => [
            envelope.id,
            aggregateID,
            envelope.durable.seq,
            envelope.type,
            envelope.durable.version,
            // The contract-encoded JSON, written once: replays hand these bytes on as they are.
            JSON.stringify(envelope.data),
            now,
            position(index)
          ])
        )
        if (isPostgres) {
          yield* announce(JSON.stringify({ origin, aggregateID, seq: last, count: events.length }))
        }
        return { committed, top: position(events.length - 1) }
      })

      // Untraced: an append runs for every durable event batch of a Step, and a span per append costs
      // more than the statements it would time (the commit metric observes each transaction).
      const append = Effect.fnUntraced(
        function* <E>(
          aggregateID: string,
          events: ReadonlyArray<Draft>,
          project?: Projection<E>,
          options?: AppendOptions
        ) {
          if (events.length === 0) return []
          if (aggregateID === positionKey) return yield* Effect.dieMessage("EventLog.append: the empty aggregate ID")
          const outer = yield* Effect.serviceOption(SqlClient.TransactionConnection)
          if (outer._tag === "Some") {
            return yield* Effect.dieMessage("EventLog.append must not run inside another SQL transaction")
          }
          const transaction = insert(aggregateID, events, options?.opens === true).pipe(
            Effect.orDie,
            Effect.tap(({ committed }) => (project === undefined ? Effect.void : project(committed))),
            // The fence and the projection run on the transaction's connection, through the log's client.
            Effect.provideService(SqlClient.SqlClient, sql),
            sql.withTransaction,
            RuntimeMetrics.commit,
            Effect.catchIf((error): error is SqlError.SqlError => error instanceof SqlError.SqlError, Effect.die),
            Effect.map(({ committed, top }) => {
              removed.delete(aggregateID)
              if (!isPostgres) {
                for (const envelope of committed) own.add(envelope.id)
                ownTop = top
              }
              return committed
            }),
            Effect.tap((committed) => PubSub.publishAll(live, committed)),
            // Still under the writer permit: the bus sees commits in commit order, and before append
            // resolves, so a publisher's later live deltas can never overtake its durable events.
            Effect.tap((committed) => bus.publishAll(interleave(committed, options?.live)))
          )
          return yield* writer.withLock(Effect.uninterruptible(transaction))
        },
        (effect, aggregateID) => LogAnnotation.aggregate(effect, aggregateID)
      )

      const remove = Traced.fn("EventLog.remove")(function* <E>(
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
        if (aggregateIDs.includes(positionKey))
          return yield* Effect.dieMessage("EventLog.remove: the empty aggregate ID")
        const marker = options.announce[options.announce.length - 1]!.id
        // The fence first; then the projection, so it can still read the logs it is removing (e.g. what
        // they refer to); then the fence again for the further aggregates it added.
        const transaction = checkFence(aggregateIDs).pipe(
          Effect.zipRight(
            options.project === undefined
              ? Effect.succeed<ReadonlyArray<string>>([])
              : Effect.provideService(options.project(aggregateIDs), SqlClient.SqlClient, sql)
          ),
          Effect.map((further) => ({
            all: [...new Set([...aggregateIDs, ...further])].filter((id) => id !== positionKey),
            added: further.filter((id) => !aggregateIDs.includes(id))
          })),
          Effect.tap(({ all, added }) =>
            checkFence(added).pipe(Effect.zipRight(all.length === 0 ? Effect.void : deleteLogs(all)))
          ),
          Effect.map(({ all }) => all),
          sql.withTransaction,
          Effect.catchIf(
            (error): error is SqlError.SqlError | ParseResult.ParseError =>
              error instanceof SqlError.SqlError || ParseResult.isParseError(error),
            Effect.die
          ),
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
        return yield* writer.withLock(Effect.uninterruptible(transaction))
      })

      const readEnvelopes = (request: typeof ReadRequest.Type) =>
        selectEnvelopes(request).pipe(
          Effect.map((rows) => rows.map(toEnvelope)),
          Effect.orDie
        )

      const read = Traced.fn("EventLog.read")(function* (aggregateID: string, options?: ReadOptions) {
        return yield* readEnvelopes({
          aggregateIDs: [aggregateID],
          after: options?.after ?? 0,
          limit: options?.limit,
          types: options?.types
        })
      })

      const readMany = Traced.fn("EventLog.readMany")(function* (
        aggregateIDs: ReadonlyArray<string>,
        options?: { readonly types?: ReadonlyArray<string> | undefined }
      ) {
        if (aggregateIDs.length === 0) return []
        return yield* readEnvelopes({ aggregateIDs, after: -1, types: options?.types })
      })

      const lastSeq = Traced.fn("EventLog.lastSeq")(function* (aggregateID: string) {
        const row = yield* Effect.orDie(selectLastSeq(aggregateID))
        return row._tag === "Some" ? row.value.seq : 0
      })

      const subscribe = PubSub.subscribe(live)

      const publishForeign = (envelopes: ReadonlyArray<Envelope>) =>
        envelopes.length === 0
          ? Effect.void
          : PubSub.publishAll(live, envelopes).pipe(Effect.zipRight(bus.publishAll(envelopes)))

      if (listener._tag === "None") {
        // The SQLite relay: events other processes committed, found by position (which grows in commit
        // order and never goes back: see positionKey), published under the writer permit so that they
        // never interleave with a local commit and its publication.
        // It reads the rows only once another connection has committed (SqliteCommitWatch); until then
        // every row above `relayed` is this process's own, so its marks are passed at once. The question
        // is asked under the writer permit: a row another process commits after it has a position above
        // every local commit made before it.
        const watch = yield* SqliteCommitWatch.make({
          pollMs: options.relayPollMs ?? relayIntervalMs,
          watchFiles: options.watchFiles ?? true
        })
        let relayed = (yield* Effect.orDie(selectTopPosition(undefined))).position
        const relay = Effect.gen(function* () {
          if (!(yield* watch.changed)) {
            relayed = Math.max(relayed, ownTop)
            own.clear()
            return
          }
          const fresh = yield* Effect.orDie(selectAfterPosition(relayed))
          if (fresh.length === 0) return
          relayed = fresh.at(-1)!.position
          const envelopes: Array<Envelope> = []
          for (const row of fresh) {
            if (own.delete(row.id)) continue
            envelopes.push({
              id: row.id as Identifier.EventID,
              type: row.type,
              durable: { aggregateID: row.aggregate_id, seq: row.seq, version: row.version },
              data: JSON.parse(row.data)
            })
          }
          yield* publishForeign(envelopes)
        }).pipe(writer.withLock, Traced.withSpan("EventLog.relay"))
        yield* Effect.forkScoped(
          Effect.forever(
            watch.woken.pipe(
              Effect.zipRight(relay),
              Effect.catchAllCause((cause) => Effect.logWarning("relaying other processes' events failed", cause))
            )
          )
        )
      } else {
        // PostgreSQL: LISTEN on one connection; each announcement of another process's commit is read
        // back by (aggregate, seq range) and published, under the writer permit like a local commit.
        const ready = yield* Deferred.make<void>()
        const readyPayload = `ready:${origin}`
        const relayed = (payload: string) =>
          Effect.gen(function* () {
            if (payload === readyPayload) return yield* Deferred.succeed(ready, undefined)
            const announcement = decodeAnnouncement(payload)
            if (announcement._tag === "None" || announcement.value.origin === origin) return
            const { aggregateID, seq, count } = announcement.value
            const envelopes = yield* readEnvelopes({ aggregateIDs: [aggregateID], after: seq - count, through: seq })
            yield* publishForeign(envelopes).pipe(writer.withLock)
          }).pipe(
            Effect.catchAllCause((cause) => Effect.logWarning("relaying another process's commit failed", cause)),
            Traced.withSpan("EventLog.relay")
          )
        yield* listener.value.listenForever(
          listener.value.pg,
          channel,
          relayed,
          "listening for other processes' commits"
        )
        // LISTEN is issued when the stream starts: announce ourselves until we hear it back.
        yield* announce(readyPayload).pipe(
          Effect.orDie,
          Effect.zipRight(WallClock.sleep(Duration.millis(50))),
          Effect.forever,
          Effect.race(Deferred.await(ready))
        )
      }

      /**
       * Runs one follow of an aggregate's log (see {@link Interface.follow}): keyset pages of stored rows
       * after `after`, then live commits from the bus, each batch handed to `push` in seq order without
       * gaps or duplicates, and `push` waited for before anything more is read. Succeeds when the
       * aggregate is removed or the bus shuts down. A loop of effects, not a Stream: a follow is opened
       * per SSE connection, and each Stream stage costs more to start than a short replay.
       */
      const pump = <A>(
        aggregateID: string,
        options: FollowOptions | undefined,
        page: (after: number, limit: number | undefined) => Effect.Effect<ReadonlyArray<A>>,
        fromLive: (envelope: Envelope) => A,
        seqOf: (item: A) => number,
        push: (batch: ReadonlyArray<A>) => Effect.Effect<void>
      ): Effect.Effect<void> =>
        Effect.suspend(() => {
          // The last seq handed to `push`: where a replay page, a gap fill or a catch-up resumes.
          let last = options?.after ?? 0
          const handOn = (batch: ReadonlyArray<A>) => {
            if (batch.length === 0) return Effect.void
            last = seqOf(batch[batch.length - 1]!)
            return push(batch)
          }
          const replay = (limit: number): Effect.Effect<void> =>
            Effect.flatMap(
              Effect.suspend(() => page(last, limit)),
              (rows) => Effect.zipRight(handOn(rows), rows.length < limit ? Effect.void : replay(nextPages))
            )
          // Live commits come in seq order from this process's own appends; another process's arrive later
          // through the relay, possibly behind a local one: a gap is filled from the log, and what was
          // already handed on is dropped. True when the batch held the envelope that ends the follow.
          const live = (events: ReadonlyArray<LiveBus.Envelope>): Effect.Effect<boolean> => {
            const out: Array<A> = []
            // The last seq handed on or about to be (in `out`).
            let top = last
            for (let index = 0; index < events.length; index++) {
              const envelope = events[index]!
              // Removed while following: the envelope announcing it is the end.
              if (removed.get(aggregateID) === envelope.id) return Effect.as(handOn(out), true)
              if (envelope.durable?.aggregateID !== aggregateID) continue
              const seq = envelope.durable.seq
              if (seq <= top) continue
              if (seq === top + 1) {
                // A durable envelope of this aggregate is an EventLog envelope.
                out.push(fromLive(envelope as Envelope))
                top = seq
                continue
              }
              const rest = events.slice(index)
              return handOn(out).pipe(
                Effect.zipRight(Effect.suspend(() => page(last, undefined))),
                Effect.flatMap(handOn),
                Effect.zipRight(Effect.suspend(() => live(rest)))
              )
            }
            return Effect.as(handOn(out), false)
          }
          // One subscription: subscribe before reading, so an append committing in between is on the bus if
          // not in the read. Returns true when the follow ends; false when the subscriber was cut off for
          // being slow, to catch up from the log and subscribe again.
          const run = Effect.scoped(
            Effect.gen(function* () {
              const listener = yield* bus.listen({ capacity: options?.capacity })
              // Removed before this run subscribed: nothing more will come after what is stored.
              const ended = removed.has(aggregateID)
              yield* replay(firstPage)
              if (ended) return true
              for (;;) {
                const events = yield* listener.take
                if (events.length === 0) return true
                if (yield* live(events)) return true
              }
            }).pipe(Effect.catchTag("SlowConsumerError", () => Effect.succeed(false)))
          )
          return Effect.repeat(run, { until: (done) => done }).pipe(Effect.asVoid)
        })

      const readLive = (aggregateID: string) => (after: number, limit: number | undefined) =>
        readEnvelopes({ aggregateIDs: [aggregateID], after, limit })

      const pageText = `SELECT seq, type, id, version, data FROM event
        WHERE aggregate_id = ? AND seq > ? ORDER BY aggregate_id, seq`
      const pageRest = PreparedSql.make(sql, pageText)
      const pageLimited = PreparedSql.make(sql, `${pageText} LIMIT ?`)
      const encodedPage = (aggregateID: string) => {
        const aggregateJson = JSON.stringify(aggregateID)
        return (after: number, limit: number | undefined) =>
          (limit === undefined
            ? pageRest.values([aggregateID, after])
            : pageLimited.values([aggregateID, after, limit])
          ).pipe(
            Effect.flatMap((rows) => Effect.try(() => rows.map((row) => encodeValues(aggregateJson, row)))),
            Effect.orDie
          )
      }
      const encodeLive = (envelope: Envelope): Encoded => ({
        seq: envelope.durable.seq,
        type: envelope.type,
        json: JSON.stringify(envelope)
      })
      const seqOfEnvelope = (envelope: Envelope) => envelope.durable.seq
      const seqOfEncoded = (encoded: Encoded) => encoded.seq

      // The pump writes into a small buffer the stream reads, and ends it when the follow ends (an
      // interrupted pump ends nothing: the stream is gone).
      const follow = (aggregateID: string, options?: FollowOptions): Stream.Stream<Envelope> =>
        Stream.asyncScoped<Envelope>(
          (emit) =>
            pump(aggregateID, options, readLive(aggregateID), identity, seqOfEnvelope, (batch) =>
              Effect.promise(() => emit.chunk(Chunk.unsafeFromArray(batch)))
            ).pipe(Effect.zipRight(Effect.promise(() => emit.end())), Effect.forkScoped),
          2
        )

      const pumpEncoded = (
        aggregateID: string,
        push: (batch: ReadonlyArray<Encoded>) => Effect.Effect<void>,
        options?: FollowOptions
      ): Effect.Effect<void> => pump(aggregateID, options, encodedPage(aggregateID), encodeLive, seqOfEncoded, push)

      return Service.of({ append, remove, read, readMany, lastSeq, subscribe, follow, pumpEncoded })
    })
  )

/** {@link layerWith} with the default settings. */
export const layer: Layer.Layer<Service, never, SqlClient.SqlClient | LiveBus.Service> = layerWith({})

/**
 * The last seq of `aggregateID`'s log (0 before its first event) as an SQL scalar subquery, for a
 * statement of the caller's that must read it atomically with its own write (e.g. an upsert that
 * records "the log up to here"), on the caller's connection or transaction.
 */
export const lastSeqFragment = (sql: SqlClient.SqlClient, aggregateID: string) =>
  sql`coalesce((SELECT seq FROM event_sequence WHERE aggregate_id = ${aggregateID}), 0)`

/**
 * The last seq of `aggregateID`'s log (0 before its first event), read on the caller's connection, so
 * inside the caller's transaction when there is one (the service's {@link Interface.lastSeq} reads
 * outside any transaction).
 */
export const lastSeq = Traced.fn("EventLog.lastSeq")(function* (aggregateID: AggregateID) {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* SqlSchema.findAll({
    Request: Schema.String,
    Result: SeqRow,
    execute: (id) => sql`SELECT ${lastSeqFragment(sql, id)} AS seq`
  })(aggregateID).pipe(Effect.orDie)
  return row?.seq ?? 0
})
