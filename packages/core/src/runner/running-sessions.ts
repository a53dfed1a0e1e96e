export * as RunningSessions from "./running-sessions.js"

/**
 * Running Sessions: whether a session is running now, for the operations that must not change a
 * session under a running Step (staging or undoing a revert, moving it). A session runs while a drain
 * of it runs in this process (SessionRunner.active) or another live host holds its lease
 * (SessionLeases.heldElsewhere). This is a look, not a lock: a drain that starts right after it is
 * not seen, so callers refuse only what they can see running.
 *
 * Over PostgreSQL it also answers which sessions run on the other hosts ({@link elsewhere}) for
 * `sessions.active`.
 */

import { Errors, type Identifier } from "@opencode-ai/schema"
import { Effect } from "effect"
import { LiveRelay } from "../event/live-relay.js"
import { Traced } from "../observability/traced.js"
import { SessionLeases } from "./session-leases.js"
import { SessionRunner } from "./session-runner.js"

/** Whether the session is running here or on another live host. */
export const isRunning = Traced.fn("RunningSessions.isRunning")(function* (sessionID: Identifier.SessionID) {
  const runner = yield* SessionRunner.Service
  const leases = yield* SessionLeases.Service
  const active = yield* runner.active
  return sessionID in active || (yield* leases.heldElsewhere(sessionID))
})

/** Fails with a ConflictError (`resource: "session"`) saying `what` is refused while the session runs. */
export const refuseWhileRunning = Traced.fn("RunningSessions.refuseWhileRunning")(function* (
  sessionID: Identifier.SessionID,
  what: string
) {
  if (yield* isRunning(sessionID)) {
    return yield* new Errors.ConflictError({
      resource: "session",
      message: `The session is running: ${what} is refused until it is idle (interrupt it or wait for it)`
    })
  }
})

/**
 * The sessions other hosts run now: those they announced (LiveRelay) whose lease a live host other
 * than this one still holds, checked in one read. A host lets a lease go when its drain ends, and a
 * killed host's leases stop counting once it is seen dead (its pid gone on this machine, or its
 * heartbeat overdue), so a session that settled, or was taken over and settled, drops out at once
 * rather than when its announcement lapses. Empty over SQLite, where hosts announce nothing.
 */
export const elsewhere = Traced.fn("RunningSessions.elsewhere")(function* () {
  const announced = yield* Effect.flatMap(LiveRelay.Service, (relay) => relay.activeElsewhere)
  if (announced.length === 0) return []
  const held = yield* Effect.flatMap(SessionLeases.Service, (leases) => leases.heldElsewhereAmong(announced))
  return announced.filter((sessionID) => held.has(sessionID))
})
