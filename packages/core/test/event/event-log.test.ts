import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { it, layer } from "@effect/vitest"
import { Chunk, Context, Data, Deferred, Effect, Exit, Fiber, Layer, Option, Queue, Stream, TestServices } from "effect"
import { describe, expect } from "vitest"
import { CommitFence } from "../../src/event/commit-fence.js"
import { EventLog } from "../../src/event/event-log.js"
import { LiveBus } from "../../src/event/live-bus.js"
import { Database } from "../../src/storage/database.js"
import { PostgresDatabase } from "../../src/storage/postgres-database.js"
import { PostgresServer } from "../../src/testing/postgres-server.js"
import { tempDir } from "../fixture.js"
import { type Dialect, dialects, freshDatabase } from "../storage/dialects.js"

/** An EventLog (with its bus) over a fresh database of `dialect`, and the CommitFence when given. */
const logLayer = (dialect: Dialect, fence?: CommitFence.Interface) =>
  Effect.map(freshDatabase(dialect), (database) =>
    EventLog.layer.pipe(
      Layer.provideMerge(database),
      Layer.provideMerge(LiveBus.layer),
      Layer.provide(fence === undefined ? Layer.empty : Layer.succeed(CommitFence.Service, fence))
    )
  )

const draft = (n: number): EventLog.Draft => ({ type: "test.happened", version: 1, data: { n } })

class ProjectionFailed extends Data.TaggedError("ProjectionFailed") {}

const seqs = (envelopes: ReadonlyArray<EventLog.Envelope>) => envelopes.map((envelope) => envelope.durable.seq)

/** The first `count` events `pumpEncoded` hands on (then the pump is interrupted). */
const pumped = (log: EventLog.Interface, aggregateID: string, count: number) =>
  Effect.gen(function* () {
    const out: Array<EventLog.Encoded> = []
    const done = yield* Deferred.make<void>()
    const pump = yield* Effect.fork(
      log.pumpEncoded(aggregateID, (batch) =>
        Effect.suspend(() => {
          out.push(...batch)
          return out.length >= count ? Deferred.succeed(done, undefined) : Effect.void
        })
      )
    )
    yield* Deferred.await(done)
    yield* Fiber.interrupt(pump)
    return out.slice(0, count)
  })

layer(PostgresServer.layer(), { timeout: 120_000 })((it) => {
  for (const dialect of dialects) {
    describe(dialect, () => {
      /** Runs `body` against an EventLog over a fresh database of this dialect. */
      const withLog = <A, E, R>(_: Dialect, body: Effect.Effect<A, E, R>) =>
        Effect.flatMap(logLayer(dialect), (layer) => Effect.provide(body, layer))

      it.scoped("append assigns gapless seqs from 1 per aggregate and read returns them in order", () =>
        withLog(
          dialect,
          Effect.gen(function* () {
            const log = yield* EventLog.Service
            const first = yield* log.append("agg_a", [draft(1), draft(2)])
            const other = yield* log.append("agg_b", [draft(9)])
            const second = yield* log.append("agg_a", [draft(3)])
            expect(seqs(first)).toEqual([1, 2])
            expect(seqs(other)).toEqual([1])
            expect(seqs(second)).toEqual([3])
            expect(first[0]).toMatchObject({
              type: "test.happened",
              durable: { aggregateID: "agg_a", seq: 1, version: 1 },
              data: { n: 1 }
            })
            expect(first[0]?.id).toMatch(/^evt_[0-9a-f]{12}[0-9A-Za-z]{14}$/)

            const all = yield* log.read("agg_a")
            expect(all).toEqual([...first, ...second])
            expect(seqs(yield* log.read("agg_a", { after: 2 }))).toEqual([3])
            expect(yield* log.read("agg_missing")).toEqual([])
            expect(yield* log.append("agg_a", [])).toEqual([])
            expect(seqs(yield* log.read("agg_a"))).toEqual([1, 2, 3])
          })
        )
      )

      it.scoped("50 concurrent appends to one aggregate yield seq 1..N with no gaps or duplicates", () =>
        withLog(
          dialect,
          Effect.gen(function* () {
            const log = yield* EventLog.Service
            // Batches of 1 to 3 events, all racing; the total is 100.
            const sizes = Array.from({ length: 50 }, (_, i) => 1 + (i % 3))
            const results = yield* Effect.forEach(
              sizes,
              (size, i) =>
                log.append(
                  "agg_race",
                  Array.from({ length: size }, (_, k) => draft(i * 10 + k))
                ),
              { concurrency: "unbounded" }
            )
            const total = sizes.reduce((a, b) => a + b, 0)
            const expected = Array.from({ length: total }, (_, i) => i + 1)
            expect(results.flatMap(seqs).sort((a, b) => a - b)).toEqual(expected)
            // Each batch is contiguous: nothing interleaves inside one append.
            for (const batch of results)
              expect(seqs(batch)).toEqual(seqs(batch).map((_, k) => batch[0]!.durable.seq + k))
            expect(seqs(yield* log.read("agg_race"))).toEqual(expected)
          })
        )
      )

      it.scoped("a failing or dying projection rolls back the sequence bump, the rows and its own writes", () =>
        withLog(
          dialect,
          Effect.gen(function* () {
            const log = yield* EventLog.Service
            const sql = yield* SqlClient.SqlClient
            yield* log.append("agg_p", [draft(1)])

            const writeThen =
              <E>(fail: Effect.Effect<never, E>) =>
              () =>
                sql`INSERT INTO event_sequence (aggregate_id, seq) VALUES ('probe', 7)`.pipe(
                  Effect.orDie,
                  Effect.zipRight(fail)
                )
            const failed = yield* Effect.exit(
              log.append("agg_p", [draft(2), draft(3)], writeThen(new ProjectionFailed()))
            )
            expect(failed).toEqual(Exit.fail(new ProjectionFailed()))
            const died = yield* Effect.exit(log.append("agg_p", [draft(2)], writeThen(Effect.dieMessage("boom"))))
            expect(Exit.isFailure(died) && !Exit.isInterrupted(died)).toBe(true)
            const fresh = yield* Effect.exit(log.append("agg_fresh", [draft(1)], writeThen(new ProjectionFailed())))
            expect(Exit.isFailure(fresh)).toBe(true)

            expect(seqs(yield* log.read("agg_p"))).toEqual([1])
            expect(yield* log.read("agg_fresh")).toEqual([])
            expect(yield* sql`SELECT * FROM event_sequence WHERE aggregate_id IN ('probe', 'agg_fresh')`).toEqual([])
            expect(yield* sql`SELECT seq FROM event_sequence WHERE aggregate_id = 'agg_p'`).toEqual([{ seq: 1 }])
            // The next append continues right after the last committed one.
            expect(seqs(yield* log.append("agg_p", [draft(4)]))).toEqual([2])
          })
        )
      )

      it.scoped("subscribers are notified only after commit, and never of a rolled-back append", () =>
        withLog(
          dialect,
          Effect.gen(function* () {
            const log = yield* EventLog.Service
            const queue = yield* log.subscribe

            let seenDuringProjection = -1
            const committed = yield* log.append("agg_n", [draft(1)], () =>
              Effect.map(Queue.size(queue), (size) => {
                seenDuringProjection = size
              })
            )
            expect(seenDuringProjection).toBe(0)
            expect(yield* Queue.takeAll(queue)).toEqual(Chunk.fromIterable(committed))

            yield* Effect.exit(log.append("agg_n", [draft(2)], () => new ProjectionFailed()))
            expect(yield* Queue.size(queue)).toBe(0)

            const next = yield* log.append("agg_n", [draft(3)])
            expect(seqs(next)).toEqual([2])
            expect(Chunk.toReadonlyArray(yield* Queue.takeAll(queue))).toEqual(next)
          })
        )
      )

      it.scoped("follow replays after a seq, then streams live appends without gaps or duplicates", () =>
        withLog(
          dialect,
          Effect.gen(function* () {
            const log = yield* EventLog.Service
            yield* log.append("agg_f", [draft(1), draft(2)])
            yield* log.append("agg_other", [draft(1)])
            const fiber = yield* log.follow("agg_f", { after: 1 }).pipe(Stream.take(4), Stream.runCollect, Effect.fork)
            yield* log.append("agg_other", [draft(2)])
            yield* log.append("agg_f", [draft(3)])
            yield* log.append("agg_f", [draft(4), draft(5)])
            const followed = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
            expect(followed.map((envelope) => [envelope.durable.aggregateID, envelope.durable.seq])).toEqual([
              ["agg_f", 2],
              ["agg_f", 3],
              ["agg_f", 4],
              ["agg_f", 5]
            ])
          })
        )
      )

      it.scoped(
        "pumpEncoded: a consumer too slow for its subscription catches up from the log, with no gap or duplicate",
        () =>
          withLog(
            dialect,
            Effect.gen(function* () {
              const log = yield* EventLog.Service
              const bus = yield* LiveBus.Service
              yield* log.append("agg_s", [draft(1), draft(2)])
              const received: Array<number> = []
              // The consumer holds its first batch until `release`: meanwhile its subscription (2 events)
              // overflows and the bus cuts it off.
              const release = yield* Deferred.make<void>()
              const fiber = yield* log
                .pumpEncoded(
                  "agg_s",
                  (batch) =>
                    Effect.zipRight(
                      Effect.sync(() => received.push(...batch.map((event) => event.seq))),
                      Deferred.await(release)
                    ),
                  { capacity: 2 }
                )
                .pipe(Effect.fork)
              yield* Effect.yieldNow().pipe(Effect.repeat({ until: () => received.length > 0 }))
              for (let n = 3; n <= 20; n++) yield* log.append("agg_s", [draft(n)])
              expect(yield* bus.subscriberCount).toBe(0)
              yield* Deferred.succeed(release, undefined)
              // The pump subscribes again, reads 3..20 from the log, then follows live appends.
              yield* log.append("agg_s", [draft(21)])
              yield* Effect.yieldNow().pipe(Effect.repeat({ until: () => received.length >= 21 }))
              yield* log.append("agg_s", [draft(22)])
              yield* Effect.yieldNow().pipe(Effect.repeat({ until: () => received.length >= 22 }))
              expect(received).toEqual(Array.from({ length: 22 }, (_, index) => index + 1))
              yield* Fiber.interrupt(fiber)
              expect(yield* bus.subscriberCount).toBe(0)
            })
          )
      )

      it.scoped("append inside another SQL transaction is a defect and writes nothing", () =>
        withLog(
          dialect,
          Effect.gen(function* () {
            const log = yield* EventLog.Service
            const sql = yield* SqlClient.SqlClient
            const exit = yield* Effect.exit(sql.withTransaction(log.append("agg_t", [draft(1)])))
            expect(Exit.isFailure(exit) && !Exit.isInterrupted(exit)).toBe(true)
            expect(yield* log.read("agg_t")).toEqual([])
          })
        )
      )

      describe("remove", () => {
        const announce = (n: number): readonly [LiveBus.Envelope] => [
          { id: `evt_removed_${n}`, type: "test.removed", data: { n } }
        ]

        it.scoped(
          "deletes the aggregates' logs with the projection in one transaction, announces, and ends their follows",
          () =>
            withLog(
              dialect,
              Effect.gen(function* () {
                const log = yield* EventLog.Service
                const sql = yield* SqlClient.SqlClient
                const bus = yield* LiveBus.Service
                yield* log.append("agg_r", [draft(1), draft(2)])
                yield* log.append("agg_keep", [draft(1)])
                const onBus = yield* bus.subscribe()
                // Once the follow has replayed seq 2 it is subscribed: seq 3 reaches it live.
                const replayed = yield* Deferred.make<void>()
                const followed = yield* log.follow("agg_r").pipe(
                  Stream.tap((envelope) =>
                    envelope.durable.seq === 2 ? Deferred.succeed(replayed, undefined) : Effect.void
                  ),
                  Stream.runCollect,
                  Effect.fork
                )
                yield* Deferred.await(replayed)
                yield* log.append("agg_r", [draft(3)])

                // A failing projection rolls everything back and publishes nothing.
                const failed = yield* Effect.exit(
                  log.remove(["agg_r"], { project: () => Effect.fail(new ProjectionFailed()), announce: announce(0) })
                )
                expect(Exit.isFailure(failed)).toBe(true)
                expect(seqs(yield* log.read("agg_r"))).toEqual([1, 2, 3])

                let seen: ReadonlyArray<string> = []
                yield* log.remove(["agg_r"], {
                  project: (removed) =>
                    Effect.gen(function* () {
                      // The projection still sees the logs it removes.
                      const rows = yield* sql<{ readonly n: number }>`
                      SELECT count(*) AS n FROM event WHERE aggregate_id IN ${sql.in(removed)}`.pipe(Effect.orDie)
                      expect(rows[0]!.n).toBe(3)
                      seen = removed
                      return []
                    }),
                  announce: announce(1)
                })
                expect(seen).toEqual(["agg_r"])
                expect(yield* log.read("agg_r")).toEqual([])
                expect(seqs(yield* log.read("agg_keep"))).toEqual([1])
                const left = yield* sql<{ readonly aggregate_id: string }>`
                SELECT aggregate_id FROM event_sequence WHERE aggregate_id IN ('agg_r', 'agg_keep')`.pipe(Effect.orDie)
                expect(left.map((row) => row.aggregate_id)).toEqual(["agg_keep"])
                // The follow ended with everything it was handed before the removal.
                expect(seqs(Chunk.toReadonlyArray(yield* Fiber.join(followed)))).toEqual([1, 2, 3])
                const published = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(onBus, 2)))
                expect(published.map((envelope) => envelope.type)).toEqual(["test.happened", "test.removed"])
                // A follow that starts after the removal ends at once; an append starts the log afresh.
                expect(Chunk.toReadonlyArray(yield* Stream.runCollect(log.follow("agg_r")))).toEqual([])
                expect(seqs(yield* log.append("agg_r", [draft(1)]))).toEqual([1])
              })
            )
        )

        it.scoped.skipIf(dialect !== "sqlite")(
          "never hands out a removed position again: another process's relay sees the next commit",
          () =>
            Effect.gen(function* () {
              const dir = yield* tempDir
              const open = Layer.build(
                EventLog.layer.pipe(
                  Layer.provideMerge(Database.layer({ filename: path.join(dir, "shared.db") })),
                  Layer.provideMerge(LiveBus.layer)
                )
              )
              const a = Context.get(yield* open, EventLog.Service)
              const contextB = yield* open
              // B only relays: its log is built (and its relay runs) over the same file.
              const busB = Context.get(contextB, LiveBus.Service)
              yield* a.append("agg_old", [draft(1)])
              // The newest rows (the largest positions) belong to the aggregate that is removed.
              yield* a.append("agg_gone", [draft(1), draft(2), draft(3)])
              const onBus = yield* busB.subscribe()
              // B's relay passes A's rows before the removal.
              const relayed = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(onBus, 4)))
              expect(relayed.map((envelope) => envelope.durable?.aggregateID)).toEqual([
                "agg_old",
                "agg_gone",
                "agg_gone",
                "agg_gone"
              ])
              yield* a.remove(["agg_gone"], { announce: announce(2) })
              const next = yield* a.append("agg_new", [draft(7)])
              const sql = Context.get(contextB, SqlClient.SqlClient)
              const [row] = yield* sql<{
                readonly position: number
              }>`SELECT position FROM event WHERE id = ${next[0]!.id}`.pipe(Effect.orDie)
              expect(row!.position).toBe(5)
              const after = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(onBus, 1)))
              expect(
                after.map((envelope) => [envelope.durable?.aggregateID, (envelope.data as { n: number }).n])
              ).toEqual([["agg_new", 7]])
            })
        )
      })
    })
  }
})

describe("two processes over one file", () => {
  /** Two logs over one database file, each with its own connection and bus, as two processes have. */
  const twoLogs = (options: { readonly relayPollMs?: number } = {}) =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const open = Layer.build(
        EventLog.layerWith(options).pipe(
          Layer.provideMerge(Database.layer({ filename: path.join(dir, "shared.db") })),
          Layer.provideMerge(LiveBus.layer)
        )
      )
      const a = yield* open
      const b = yield* open
      return {
        a: Context.get(a, EventLog.Service),
        b: Context.get(b, EventLog.Service),
        busB: Context.get(b, LiveBus.Service)
      }
    })

  it.scopedLive("another process's commits reach this one's live readers, once each, in seq order with no gap", () =>
    Effect.gen(function* () {
      const { a, b, busB } = yield* twoLogs()
      const onBus = yield* busB.subscribe()
      const followed = yield* b.follow("agg_x").pipe(Stream.take(6), Stream.runCollect, Effect.fork)
      yield* Effect.sleep("20 millis")
      // A commits 1..3; B commits 4 at once, so B's own event is on its bus before A's are relayed.
      yield* a.append("agg_x", [draft(1), draft(2)])
      yield* a.append("agg_x", [draft(3)])
      yield* b.append("agg_x", [draft(4)])
      yield* a.append("agg_x", [draft(5), draft(6)])
      const seen = Chunk.toReadonlyArray(yield* Fiber.join(followed))
      expect(seqs(seen)).toEqual([1, 2, 3, 4, 5, 6])
      expect(seen.map((envelope) => (envelope.data as { n: number }).n)).toEqual([1, 2, 3, 4, 5, 6])
      // The bus got every event once: B's own at commit, A's through the relay.
      const published = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(onBus, 6)))
      expect(published.map((envelope) => envelope.durable?.seq).sort()).toEqual([1, 2, 3, 4, 5, 6])
      yield* Effect.sleep(`${EventLog.relayIntervalMs * 2} millis`)
      expect(yield* Stream.runCollect(onBus.pipe(Stream.take(1), Stream.timeout("50 millis")))).toEqual(Chunk.empty())
    })
  )

  it.scopedLive(
    "another process's commit is relayed when the file system reports the write, not at the next poll",
    () =>
      Effect.gen(function* () {
        // An hour between polls: only the report of the write to the database's log can bring these.
        const { a, b } = yield* twoLogs({ relayPollMs: 3_600_000 })
        // B's own commits first: the relay passes them without publishing them again.
        yield* b.append("agg_w", [draft(1)])
        const third = yield* Deferred.make<void>()
        const followed = yield* b.follow("agg_w", { after: 1 }).pipe(
          Stream.tap((envelope) => (envelope.durable.seq === 3 ? Deferred.succeed(third, undefined) : Effect.void)),
          Stream.take(3),
          Stream.runCollect,
          Effect.fork
        )
        yield* Effect.sleep("20 millis")
        // 2 reaches B's follow when B's own 3 shows the gap; 4 only through the relay.
        yield* a.append("agg_w", [draft(2)])
        yield* b.append("agg_w", [draft(3)])
        yield* Deferred.await(third)
        yield* a.append("agg_w", [draft(4)])
        expect(seqs(Chunk.toReadonlyArray(yield* Fiber.join(followed)))).toEqual([2, 3, 4])
      }),
    20_000
  )
})

layer(PostgresServer.layer(), { timeout: 120_000 })((it) => {
  describe("two hosts over one PostgreSQL database", () => {
    it.scoped("a commit on one host reaches a follow on the other through NOTIFY: gapless, in order", () =>
      Effect.gen(function* () {
        const server = yield* PostgresServer.Service
        const url = yield* server.database()
        // Two pools and two logs, as two hosts have.
        const open = Layer.build(
          EventLog.layer.pipe(Layer.provideMerge(PostgresDatabase.layer({ url })), Layer.provideMerge(LiveBus.layer))
        )
        const a = Context.get(yield* open, EventLog.Service)
        const contextB = yield* open
        const b = Context.get(contextB, EventLog.Service)
        yield* a.append("agg_pg", [draft(1)])
        const replayed = yield* Deferred.make<void>()
        const followed = yield* b.follow("agg_pg").pipe(
          Stream.tap((envelope) => (envelope.durable.seq === 1 ? Deferred.succeed(replayed, undefined) : Effect.void)),
          Stream.take(7),
          Stream.runCollect,
          Effect.fork
        )
        const encoded = yield* Effect.fork(pumped(b, "agg_pg", 7))
        yield* Deferred.await(replayed)
        // A's commits, concurrent ones among them, and one of B's own in between.
        yield* a.append("agg_pg", [draft(2), draft(3)])
        yield* Effect.all([a.append("agg_pg", [draft(4)]), a.append("agg_other", [draft(1)])], {
          concurrency: "unbounded"
        })
        yield* b.append("agg_pg", [draft(5)])
        yield* a.append("agg_pg", [draft(6), draft(7)])
        const seen = Chunk.toReadonlyArray(yield* Fiber.join(followed))
        expect(seqs(seen)).toEqual([1, 2, 3, 4, 5, 6, 7])
        expect(seen.map((envelope) => (envelope.data as { n: number }).n)).toEqual([1, 2, 3, 4, 5, 6, 7])
        // The encoded follow hands on exactly the JSON of the same envelopes.
        const json = yield* Fiber.join(encoded)
        expect(json.map((event) => event.json)).toEqual(seen.map((envelope) => JSON.stringify(envelope)))
        // B's bus saw A's commits once each (no polling: B has no relay timer on PostgreSQL).
        const busB = Context.get(contextB, LiveBus.Service)
        const onBus = yield* busB.subscribe()
        yield* a.append("agg_pg", [draft(8)])
        const next = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(onBus, 1)))
        expect(next.map((envelope) => envelope.durable?.seq)).toEqual([8])
        expect(
          yield* TestServices.provideLive(Stream.runCollect(onBus.pipe(Stream.take(1), Stream.timeout("300 millis"))))
        ).toEqual(Chunk.empty())
      })
    )
  })

  for (const dialect of dialects) {
    describe(`${dialect}: CommitFence`, () => {
      it.scoped("a fence that refuses makes append and remove die with CommitFenced and write nothing", () =>
        Effect.gen(function* () {
          const refused = new Set<string>()
          const checked: Array<string> = []
          const fence: CommitFence.Interface = {
            check: (aggregateID) =>
              Effect.gen(function* () {
                // It runs inside the transaction, on its connection.
                expect(Option.isSome(yield* Effect.serviceOption(SqlClient.TransactionConnection))).toBe(true)
                checked.push(aggregateID)
                if (refused.has(aggregateID)) return yield* Effect.die(new CommitFence.CommitFenced({ aggregateID }))
              })
          }
          const layer = yield* logLayer(dialect, fence)
          yield* Effect.gen(function* () {
            const log = yield* EventLog.Service
            const sql = yield* SqlClient.SqlClient
            const queue = yield* log.subscribe
            yield* log.append("agg_ok", [draft(1)])
            yield* log.append("agg_lost", [draft(1)])
            expect(checked).toEqual(["agg_ok", "agg_lost"])
            refused.add("agg_lost")
            yield* Queue.takeAll(queue)

            let projected = false
            const exit = yield* Effect.exit(
              log.append("agg_lost", [draft(2)], () =>
                Effect.sync(() => {
                  projected = true
                })
              )
            )
            expect(exit).toEqual(Exit.die(new CommitFence.CommitFenced({ aggregateID: "agg_lost" })))
            expect(projected).toBe(false)
            expect(seqs(yield* log.read("agg_lost"))).toEqual([1])
            expect(yield* log.lastSeq("agg_lost")).toBe(1)
            expect(yield* Queue.size(queue)).toBe(0)

            const removal = yield* Effect.exit(
              log.remove(["agg_lost"], { announce: [{ id: "evt_removed", type: "test.removed", data: {} }] })
            )
            expect(removal).toEqual(Exit.die(new CommitFence.CommitFenced({ aggregateID: "agg_lost" })))
            expect(seqs(yield* log.read("agg_lost"))).toEqual([1])
            const rows = yield* sql<{ readonly n: number }>`SELECT count(*) AS n FROM event`.pipe(Effect.orDie)
            expect(Number(rows[0]!.n)).toBe(2)
            // The others still commit.
            expect(seqs(yield* log.append("agg_ok", [draft(2)]))).toEqual([2])
          }).pipe(Effect.provide(layer))
        })
      )

      it.scoped("read filters by type and limit, readMany spans aggregates, lastSeq follows appends", () =>
        Effect.gen(function* () {
          const layer = yield* logLayer(dialect)
          yield* Effect.gen(function* () {
            const log = yield* EventLog.Service
            expect(yield* log.lastSeq("agg_q")).toBe(0)
            yield* log.append(
              "agg_q",
              [
                { type: "test.origin", version: 1, data: {} },
                draft(1),
                { type: "test.other", version: 1, data: { n: 2 } },
                draft(3)
              ],
              undefined,
              { opens: true }
            )
            yield* log.append("agg_r", [draft(1)])
            expect(yield* log.lastSeq("agg_q")).toBe(3)
            expect(seqs(yield* log.read("agg_q"))).toEqual([1, 2, 3])
            expect(seqs(yield* log.read("agg_q", { types: ["test.happened"] }))).toEqual([1, 3])
            expect(seqs(yield* log.read("agg_q", { after: 1, limit: 1 }))).toEqual([2])
            const many = yield* log.readMany(["agg_r", "agg_q"], { types: ["test.happened", "test.origin"] })
            expect(many.map((envelope) => [envelope.durable.aggregateID, envelope.durable.seq])).toEqual([
              ["agg_q", 0],
              ["agg_q", 1],
              ["agg_q", 3],
              ["agg_r", 1]
            ])
            // The encoded replay is byte for byte the JSON of the envelopes, in pages of any size.
            const envelopes = yield* log.read("agg_q")
            const encoded = yield* pumped(log, "agg_q", 3)
            expect(encoded.map((event) => event.json)).toEqual(envelopes.map((envelope) => JSON.stringify(envelope)))
          }).pipe(Effect.provide(layer))
        })
      )
    })
  }
})
