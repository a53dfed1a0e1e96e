export * as LiveBus from "./live-bus.js"

import { Event, Identifier } from "@opencode-ai/schema"
import { Cause, Chunk, Clock, Context, Effect, Layer, Option, Queue, Schema, type Scope, Stream } from "effect"
import { Traced } from "../observability/traced.js"

/*
 * The LiveBus: the in-process, instance-wide live event bus behind `GET /api/event`.
 *
 *   EventLog.append ──(after commit, in commit order)──┐
 *   runner deltas (session.next.text.delta, ...) ──────┼──► publish ──► subscriber 1 [bounded] ──► stream
 *   other instance activity ───────────────────────────┘            └─► subscriber 2 [bounded] ──► stream
 *
 * Publishing never blocks and never fails: each subscriber has its own bounded buffer, and a subscriber
 * whose buffer is full when an event arrives is cut off (its stream fails with SlowConsumerError)
 * instead of slowing the publisher or anyone else. There is no replay: a subscriber sees what is
 * published while it is subscribed, in publish order.
 */

/**
 * What travels on the bus: an instance event envelope in its encoded (JSON) form, as
 * `InstanceEvent.V2Event` describes it. Durable events (committed through EventLog) carry `durable`;
 * live-only events (deltas, lifecycle) do not. The bus does not validate envelopes: publishers own
 * their shapes, and the HTTP stream forwards only the types its contract declares.
 */
export interface Envelope {
  readonly id: string
  readonly type: string
  readonly durable?: Event.Durable | undefined
  readonly location?: unknown
  readonly metadata?: unknown
  readonly data: unknown
}

/** How many undelivered events a subscriber may hold before it is cut off, unless it asks otherwise. */
export const defaultCapacity = 1024

/**
 * A subscriber fell more than `capacity` events behind. Only that subscriber fails; the events it had
 * not taken yet are dropped with it. A live consumer recovers by refreshing authoritative state and
 * subscribing again.
 */
export class SlowConsumerError extends Schema.TaggedError<SlowConsumerError>()("SlowConsumerError", {
  capacity: Schema.Int,
  message: Schema.String
}) {
  static of(capacity: number): SlowConsumerError {
    return new SlowConsumerError({
      capacity,
      message: `The subscriber fell more than ${capacity} events behind the live bus and was disconnected`
    })
  }
}

export interface SubscribeOptions {
  /** The subscriber's buffer, in events (an integer ≥ 1); default {@link defaultCapacity}. */
  readonly capacity?: number | undefined
}

export interface Interface {
  /**
   * Hands `event` to every current subscriber, in publish order. It never blocks and never fails: a
   * subscriber whose buffer is full is cut off (see {@link SlowConsumerError}). After the bus has shut
   * down it does nothing.
   */
  readonly publish: (event: Envelope) => Effect.Effect<void>
  /** {@link publish} for several events, in order, atomically with respect to other publishes. */
  readonly publishAll: (events: Iterable<Envelope>) => Effect.Effect<void>
  /**
   * Subscribes for as long as the scope is open. Every event published after this effect resolves is
   * in the returned stream (so a caller may announce itself, e.g. send `server.connected`, knowing
   * nothing later is missed). The stream fails with SlowConsumerError when the subscriber falls more
   * than `capacity` events behind, and ends when the bus shuts down (the instance is closing).
   * Closing the scope unsubscribes; the stream must not be run after that.
   */
  readonly subscribe: (
    options?: SubscribeOptions
  ) => Effect.Effect<Stream.Stream<Envelope, SlowConsumerError>, never, Scope.Scope>
  /**
   * {@link subscribe} without the Stream, for a consumer that runs its own loop: the same subscriber
   * (counted, buffered, cut off when slow), whose events are taken with {@link Listener.take}.
   */
  readonly listen: (options?: SubscribeOptions) => Effect.Effect<Listener, never, Scope.Scope>
  /** How many subscribers are attached now (cut-off and closed ones are not counted). */
  readonly subscriberCount: Effect.Effect<number>
  /**
   * Calls `observer` with every event published while the scope is open, synchronously inside the
   * publish and after the subscribers got it (so it sees publish order). It is not a subscriber: it
   * has no buffer, is never cut off and is not counted. It must not block, throw or publish (the
   * LiveRelay hands events to a fiber of its own).
   */
  readonly observe: (observer: (event: Envelope) => void) => Effect.Effect<void, never, Scope.Scope>
}

/** A subscription taken with {@link Interface.listen}. */
export interface Listener {
  /**
   * Waits until at least one event is buffered and takes every buffered event, in publish order. An
   * empty array means the subscription has ended (the bus shut down, or the scope closed); after the
   * subscriber was cut off for being slow, it fails with SlowConsumerError instead.
   */
  readonly take: Effect.Effect<ReadonlyArray<Envelope>, SlowConsumerError>
}

/** The live bus; `yield* LiveBus.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/LiveBus")<Service, Interface>() {}

interface Subscriber {
  readonly queue: Queue.Queue<Envelope>
  readonly capacity: number
  /** Set when the subscriber was cut off for being slow (rather than closed or shut down). */
  overflowed: boolean
}

/**
 * A bus, open until the scope closes. Closing it shuts the bus down: every subscriber's stream ends
 * (without failure) and later publishes are ignored.
 */
export const make: Effect.Effect<Interface, never, Scope.Scope> = Effect.gen(function* () {
  const subscribers = new Set<Subscriber>()
  const observers = new Set<(event: Envelope) => void>()
  let open = true

  // Synchronous on purpose: delivery to all subscribers happens in one step, so publish order is
  // the same for every subscriber and a publisher never yields to a consumer.
  const deliver = (event: Envelope) => {
    for (const subscriber of subscribers) {
      if (!subscriber.queue.unsafeOffer(event)) cutOff(subscriber)
    }
    for (const observer of observers) observer(event)
  }
  const cutOff = (subscriber: Subscriber) => {
    subscribers.delete(subscriber)
    subscriber.overflowed = true
    // Ends the subscriber's queue stream; the stream then fails because `overflowed` is set.
    Effect.runFork(Queue.shutdown(subscriber.queue))
  }

  yield* Effect.addFinalizer(() =>
    Effect.suspend(() => {
      open = false
      const all = [...subscribers]
      subscribers.clear()
      return Effect.forEach(all, (subscriber) => Queue.shutdown(subscriber.queue), { discard: true })
    })
  )

  const publish = (event: Envelope) => Effect.sync(() => deliver(event))
  const publishAll = (events: Iterable<Envelope>) =>
    Effect.sync(() => {
      for (const event of events) deliver(event)
    })

  const listen = Traced.fn("LiveBus.listen")(function* (options?: SubscribeOptions) {
    const capacity = options?.capacity ?? defaultCapacity
    if (!Number.isInteger(capacity) || capacity < 1) {
      return yield* Effect.dieMessage(`LiveBus capacity must be an integer >= 1, got ${capacity}`)
    }
    const subscriber: Subscriber = yield* Effect.acquireRelease(
      Effect.map(Queue.bounded<Envelope>(capacity), (queue) => {
        const subscriber: Subscriber = { queue, capacity, overflowed: false }
        if (open) subscribers.add(subscriber)
        else Effect.runFork(Queue.shutdown(queue))
        return subscriber
      }),
      (subscriber) =>
        Effect.suspend(() => {
          subscribers.delete(subscriber)
          return Queue.shutdown(subscriber.queue)
        })
    )
    // A take on a queue that is (or becomes) shut down is interrupted: that is the end of the events.
    const ended = Effect.suspend(() =>
      subscriber.overflowed ? Effect.fail(SlowConsumerError.of(subscriber.capacity)) : Effect.succeed([])
    )
    const take: Listener["take"] = Queue.takeBetween(subscriber.queue, 1, Number.MAX_SAFE_INTEGER).pipe(
      Effect.map(Chunk.toReadonlyArray),
      Effect.catchAllCause((cause) =>
        Effect.flatMap(Queue.isShutdown(subscriber.queue), (down) =>
          down && Cause.isInterrupted(cause) ? ended : Effect.failCause(cause)
        )
      )
    )
    return { take }
  })

  const subscribe = (options?: SubscribeOptions) =>
    Effect.map(listen(options), ({ take }) =>
      Stream.repeatEffectChunkOption(
        Effect.flatMap(Effect.mapError(take, Option.some), (events) =>
          events.length === 0 ? Effect.fail(Option.none()) : Effect.succeed(Chunk.unsafeFromArray(events))
        )
      )
    )

  return Service.of({
    publish,
    publishAll,
    subscribe,
    listen,
    subscriberCount: Effect.sync(() => subscribers.size),
    observe: (observer) =>
      Effect.acquireRelease(
        Effect.sync(() => observers.add(observer)),
        () => Effect.sync(() => observers.delete(observer))
      ).pipe(Effect.asVoid)
  })
})

/**
 * The bus as a layer (see {@link make}). It is one constant: within one build (and one memo map) it is
 * one bus. A host that may build several instances with a shared memo map builds a layer of its own
 * per instance, `Layer.scoped(LiveBus.Service, LiveBus.make)`, as `Core.layer` does.
 */
export const layer: Layer.Layer<Service> = Layer.scoped(Service, make)

/**
 * A live-only envelope (no `durable`): a fresh event ID and `data` as given. `data` must already be
 * in its encoded (JSON) form; {@link liveEvent} builds session deltas from typed data.
 */
export const envelope = (type: string, data: unknown): Effect.Effect<Envelope> =>
  Effect.map(Clock.currentTimeMillis, (now) => ({ id: Identifier.newEventID(now), type, data }))

/** A live-only session fragment (`session.next.*.delta`), its data encoded with the contract's schema. */
export const liveEvent = <T extends Event.SessionLiveEvent["type"]>(
  type: T,
  data: Extract<Event.SessionLiveEvent, { readonly type: T }>["data"]
): Effect.Effect<Envelope> => {
  const member = Event.SessionLiveEvent.members.find((m) => m.fields.type.literals[0] === type)
  if (member === undefined) return Effect.dieMessage(`not a live session event type: ${type}`)
  return Effect.flatMap(
    Effect.orDie(Schema.encodeUnknown(member.fields.data as Schema.Schema<unknown, unknown>)(data)),
    (encoded) => envelope(type, encoded)
  )
}
