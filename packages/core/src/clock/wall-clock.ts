export * as WallClock from "./wall-clock.js"

/**
 * WallClock: timing that must follow real time whatever Clock the caller's context has. Heartbeats,
 * polls between processes and grace periods on real connections are compared with the outside
 * world, so they run on the live clock; under a test's TestClock (which jumps, or never moves) they
 * neither replay every period in between nor wait for ever.
 */

import { Clock, type Duration, Effect, Schedule } from "effect"

/** The live clock. */
export const clock: Clock.Clock = Clock.make()

/** Sleeps `ms` of real time. */
export const sleep = (ms: Duration.DurationInput): Effect.Effect<void> => Effect.sleep(ms).pipe(Effect.withClock(clock))

/**
 * Runs `effect`, then again every `ms` of real time after each run ends, until interrupted or it fails.
 * The runs are not traced: a span (and its SQL spans) every tick of a heartbeat or a poll would bury
 * the traces that explain something. What a run starts in the background may trace itself again
 * (a session's Execution does, see SessionExecution).
 */
export const every = <E, R>(
  ms: Duration.DurationInput,
  effect: Effect.Effect<unknown, E, R>
): Effect.Effect<never, E, R> =>
  Effect.repeat(Effect.withTracerEnabled(effect, false), Schedule.spaced(ms)).pipe(
    Effect.zipRight(Effect.never),
    Effect.withClock(clock)
  )
