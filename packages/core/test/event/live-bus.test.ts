import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Effect, Exit, Fiber, Layer, Scope, Stream } from "effect"
import { Config } from "../../src/config/config.js"
import { EventLog } from "../../src/event/event-log.js"
import { LiveBus } from "../../src/event/live-bus.js"
import { Locations } from "../../src/location/locations.js"
import { Sessions } from "../../src/session/sessions.js"
import { TestDatabase } from "../../src/testing/test-database.js"
import { tempDir } from "../fixture.js"

const event = (n: number): LiveBus.Envelope => ({ id: `evt_${n}`, type: "test.live", data: { n } })

describe("LiveBus", () => {
  it.scoped("delivers every event published after subscribe, in order, to every subscriber", () =>
    Effect.gen(function* () {
      const bus = yield* LiveBus.Service
      yield* bus.publish(event(0)) // nobody listens yet: not replayed to later subscribers
      const a = yield* bus.subscribe()
      const b = yield* bus.subscribe({ capacity: 16 })
      yield* bus.publishAll([event(1), event(2)])
      yield* bus.publish(event(3))
      const taken = (s: typeof a) => Effect.map(Stream.runCollect(Stream.take(s, 3)), Chunk.toReadonlyArray)
      expect((yield* taken(a)).map((e) => e.id)).toEqual(["evt_1", "evt_2", "evt_3"])
      expect((yield* taken(b)).map((e) => e.id)).toEqual(["evt_1", "evt_2", "evt_3"])
    }).pipe(Effect.provide(LiveBus.layer))
  )

  it.scoped(
    "a subscriber that never reads is cut off with SlowConsumerError; publishers and others are unaffected",
    () =>
      Effect.gen(function* () {
        const bus = yield* LiveBus.Service
        const slow = yield* bus.subscribe({ capacity: 4 })
        const fast = yield* bus.subscribe({ capacity: 4 })
        const received: Array<string> = []
        const reader = yield* Stream.runForEach(fast, (e) => Effect.sync(() => void received.push(e.id))).pipe(
          Effect.fork
        )
        expect(yield* bus.subscriberCount).toBe(2)
        for (let n = 1; n <= 20; n++) {
          yield* bus.publish(event(n)) // never blocks, even with a full subscriber
          // Let the fast reader keep up, as a live consumer does.
          yield* Effect.repeat(Effect.yieldNow(), { until: () => received.length >= n })
        }
        expect(received).toHaveLength(20)
        expect(yield* bus.subscriberCount).toBe(1)
        const exit = yield* Stream.runDrain(slow).pipe(Effect.exit)
        expect(exit).toEqual(Exit.fail(LiveBus.SlowConsumerError.of(4)))
        yield* bus.publish(event(21))
        yield* Effect.repeat(Effect.yieldNow(), { until: () => received.length >= 21 })
        yield* Fiber.interrupt(reader)
      }).pipe(Effect.provide(LiveBus.layer))
  )

  it.effect("closing a subscription's scope detaches it; shutting the bus down ends every stream", () =>
    Effect.gen(function* () {
      const busScope = yield* Scope.make()
      const bus = Context.get(yield* Layer.buildWithScope(LiveBus.layer, busScope), LiveBus.Service)
      const subscription = yield* Scope.make()
      yield* bus.subscribe().pipe(Scope.extend(subscription))
      expect(yield* bus.subscriberCount).toBe(1)
      yield* Scope.close(subscription, Exit.void)
      expect(yield* bus.subscriberCount).toBe(0)

      const open = yield* Scope.make()
      const stream = yield* bus.subscribe().pipe(Scope.extend(open))
      const fiber = yield* Stream.runCollect(stream).pipe(Effect.fork)
      yield* bus.publish(event(1))
      yield* Scope.close(busScope, Exit.void)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isSuccess(exit)).toBe(true)
      yield* bus.publish(event(2)) // after shutdown: ignored
      expect(yield* bus.subscriberCount).toBe(0)
      yield* Scope.close(open, Exit.void)
    })
  )

  it.scoped("live session deltas are encoded envelopes without a durable position", () =>
    Effect.gen(function* () {
      const delta = yield* LiveBus.liveEvent("session.next.text.delta", {
        timestamp: 1,
        sessionID: "ses_dd74ef5eeffe73avBsRqxtP7D1" as never,
        assistantMessageID: "msg_228b108e4001LbPROD3a9DlRxd" as never,
        textID: "txt_0",
        delta: "Hel"
      })
      expect(delta.id).toMatch(/^evt_/)
      expect(delta.durable).toBeUndefined()
      expect(delta).toMatchObject({ type: "session.next.text.delta", data: { delta: "Hel", textID: "txt_0" } })
    })
  )
})

describe("EventLog → LiveBus", () => {
  it.scoped("every commit reaches the bus in commit order before append resolves", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const context = yield* Layer.build(
        EventLog.layer.pipe(
          Layer.provideMerge(TestDatabase.databaseLayer({ filename: path.join(dir, "log.db") })),
          Layer.provideMerge(LiveBus.layer)
        )
      )
      const log = Context.get(context, EventLog.Service)
      const bus = Context.get(context, LiveBus.Service)
      const live = yield* bus.subscribe()
      const committed = yield* log.append("agg_a", [
        { type: "test.one", version: 1, data: { n: 1 } },
        { type: "test.two", version: 1, data: { n: 2 } }
      ])
      yield* bus.publish(event(3)) // a "delta" published after the append cannot overtake it
      const seen = yield* Stream.runCollect(Stream.take(live, 3)).pipe(Effect.map(Chunk.toReadonlyArray))
      expect(seen.slice(0, 2)).toEqual(committed)
      expect(seen.map((e) => e.type)).toEqual(["test.one", "test.two", "test.live"])
      expect(seen[0]?.durable).toEqual({ aggregateID: "agg_a", seq: 1, version: 1 })
    })
  )
})

describe("EventLog.follow over the bus", () => {
  it.scoped("a consumer that falls behind its bounded buffer catches up from the log: no gap, no duplicate", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const context = yield* Layer.build(
        EventLog.layer.pipe(
          Layer.provideMerge(TestDatabase.databaseLayer({ filename: path.join(dir, "log.db") })),
          Layer.provideMerge(LiveBus.layer)
        )
      )
      const log = Context.get(context, EventLog.Service)
      const bus = Context.get(context, LiveBus.Service)
      const append = (aggregateID: string, n: number) =>
        log.append(aggregateID, [{ type: "test.happened", version: 1, data: { n } }])
      for (let n = 1; n <= 5; n++) yield* append("agg_slow", n)
      // A buffer of 2 events, a consumer that pulls one event at a time and only between bursts.
      const pull = yield* Stream.toPull(log.follow("agg_slow", { after: 2, capacity: 2 }))
      const seqs: Array<number> = []
      const take = Effect.map(pull, (chunk) => seqs.push(...Chunk.toReadonlyArray(chunk).map((e) => e.durable.seq)))
      yield* take
      for (let n = 6; n <= 40; n++) {
        yield* append("agg_slow", n)
        yield* bus.publish(event(n)) // unrelated live traffic shares the buffer
        if (n % 10 === 0) yield* take
      }
      while (seqs.at(-1) !== 40) yield* take
      expect(seqs).toEqual(Array.from({ length: 38 }, (_, i) => i + 3))
    })
  )
})

describe("Core.layer", () => {
  it.scoped(
    "has one bus per instance: the one its EventLog publishes to; two instances on one memo map share none",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const memoMap = yield* Layer.makeMemoMap
        const scope = yield* Effect.scope
        const core = (name: string) =>
          Layer.buildWithMemoMap(
            TestDatabase.coreLayer({
              databaseFile: path.join(dir, `${name}.db`),
              directory: dir,
              env: {},
              config: Config.layerTest({})
            }),
            memoMap,
            scope
          )
        const a = yield* core("a")
        const b = yield* core("b")
        expect(Context.get(a, LiveBus.Service)).not.toBe(Context.get(b, LiveBus.Service))
        const liveA = yield* Context.get(a, LiveBus.Service).subscribe()
        const liveB = yield* Context.get(b, LiveBus.Service).subscribe()
        const session = yield* Effect.gen(function* () {
          const location = yield* (yield* Locations.Service).resolve()
          return yield* (yield* Sessions.Service).create({ location })
        }).pipe(Effect.provide(a))
        const [created] = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(liveA, 1)))
        expect(created).toMatchObject({ type: "session.created", durable: { aggregateID: session.id, seq: 0 } })
        yield* Context.get(b, LiveBus.Service).publish(event(1))
        const [onlyB] = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(liveB, 1)))
        expect(onlyB?.id).toBe("evt_1")
      })
  )
})
