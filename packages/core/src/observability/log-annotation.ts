export * as LogAnnotation from "./log-annotation.js"

import { Effect, FiberRef, HashMap, Option } from "effect"

/**
 * `Effect.annotateLogs(effect, key, value)`, except where the fiber's log annotations already hold
 * `value` at `key` (a service called inside a session's drain, which annotates its sessionID once):
 * there the effect runs as it is. The log lines are the same either way; what is saved is the
 * FiberRef scope `annotateLogs` opens around the effect, about 25 runtime operations a call.
 */
export const annotate = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  key: string,
  value: unknown
): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber) => {
    const held = HashMap.get(fiber.getFiberRef(FiberRef.currentLogAnnotations), key)
    return Option.isSome(held) && held.value === value ? effect : Effect.annotateLogs(effect, key, value)
  })

/** {@link annotate} with a session's id, the annotation Core's services put on their calls. */
export const session = <A, E, R>(effect: Effect.Effect<A, E, R>, sessionID: string): Effect.Effect<A, E, R> =>
  annotate(effect, "sessionID", sessionID)

/**
 * `Effect.annotateLogs(effect, "aggregateID", aggregateID)` for an event log's aggregate, except where
 * the fiber's `sessionID` annotation is that id already: a session's log is its session, and the line
 * names it. So the annotation scope is not opened at each of a drain's appends.
 */
export const aggregate = <A, E, R>(effect: Effect.Effect<A, E, R>, aggregateID: string): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber) => {
    const session = HashMap.get(fiber.getFiberRef(FiberRef.currentLogAnnotations), "sessionID")
    return Option.isSome(session) && session.value === aggregateID
      ? effect
      : Effect.annotateLogs(effect, "aggregateID", aggregateID)
  })
