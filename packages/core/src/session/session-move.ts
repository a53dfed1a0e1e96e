export * as SessionMove from "./session-move.js"

/**
 * Session Move: a session continues in another Location. One durable event, `session.next.moved`,
 * commits in ONE transaction with the session row's new Location, project and subpath and the deletion
 * of its InstructionCheckpoint. So the next Step initializes a complete Instruction Baseline in the
 * destination: its AGENTS.md files, skills, references and environment, all re-resolved there by the
 * Location-scoped producers. The conversation itself is kept.
 *
 * Refused with a ConflictError while the session runs (its Step works in the old Location) and while a
 * revert is staged (its file snapshots belong to the old project: commit or clear it first).
 */

import { Errors, type Identifier, type Session } from "@opencode-ai/schema"
import { Clock, Context, Effect, Layer } from "effect"
import * as InstructionCheckpoint from "../instructions/instruction-checkpoint.js"
import { Locations } from "../location/locations.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { RunningSessions } from "../runner/running-sessions.js"
import type { SessionLeases } from "../runner/session-leases.js"
import type { SessionRunner } from "../runner/session-runner.js"
import * as SessionEvents from "./session-events.js"
import * as Sessions from "./sessions.js"

export interface Interface {
  /**
   * Moves the session to the Location `location` names (resolved as on session creation: a directory
   * that does not exist is an InvalidRequestError) and resolves with the moved session record. Moving
   * to the Location the session already has still resets its instructions (a fresh baseline there).
   * Unknown session → SessionNotFoundError (checked first); running, or a staged revert →
   * ConflictError. Interruption before the write leaves the session where it was.
   */
  readonly move: (
    sessionID: Identifier.SessionID,
    location: Locations.Ref
  ) => Effect.Effect<
    Session.SessionV2Info,
    Errors.SessionNotFoundError | Errors.InvalidRequestError | Errors.ConflictError
  >
}

/** `yield* SessionMove.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionMove")<Service, Interface>() {}

export const layer: Layer.Layer<
  Service,
  never,
  Sessions.Service | SessionEvents.Service | Locations.Service | SessionRunner.Service | SessionLeases.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const context = yield* Effect.context<SessionRunner.Service | SessionLeases.Service>()
    const sessions = yield* Sessions.Service
    const events = yield* SessionEvents.Service
    const locations = yield* Locations.Service

    const move = Traced.fn("SessionMove.move")(
      function* (sessionID: Identifier.SessionID, ref: Locations.Ref) {
        const session = yield* sessions.get(sessionID)
        const location = yield* locations.resolve(ref)
        yield* RunningSessions.refuseWhileRunning(sessionID, "moving it").pipe(Effect.provide(context))
        if (session.revert !== undefined) {
          return yield* new Errors.ConflictError({
            resource: "revert",
            message: "A revert is staged: commit or clear it before moving the session"
          })
        }
        const subdirectory = Sessions.subpathOfLocation(location)
        const now = yield* Clock.currentTimeMillis
        yield* events.append(
          sessionID,
          [
            SessionEvents.draft("session.next.moved", {
              timestamp: now,
              sessionID: session.id,
              location: {
                directory: location.directory,
                ...(location.workspaceID === undefined ? {} : { workspaceID: location.workspaceID })
              },
              ...(subdirectory === undefined ? {} : { subdirectory })
            })
          ],
          () => Effect.zipRight(Sessions.relocate(sessionID, location), InstructionCheckpoint.clear(sessionID))
        )
        return yield* sessions.get(sessionID)
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    return Service.of({ move })
  })
)
