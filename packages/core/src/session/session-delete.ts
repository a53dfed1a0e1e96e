export * as SessionDelete from "./session-delete.js"

/**
 * Session Delete: a session and its child sessions (the subagents it started, and theirs) cease to
 * exist, with everything this runtime keeps for them.
 *
 * ```
 *   get ──► the tree (session + descendants) ──► interrupt each, until none runs here or elsewhere
 *     ──► ONE transaction: their event rows and sequences, session rows and every row that references
 *         them (messages, inbox, instructions, requests, leases, reverts), forgotten by KnownSessions
 *     ──► session.deleted on the LiveBus, one per session (their follows end there)
 *     ──► their managed files: tool output files and data-directory plan files
 * ```
 *
 * Interrupting first means the running Step settles (partial output is persisted, then deleted with
 * the rest) and the sessions' pending permission and question requests are rejected, so nobody waits
 * on them. The deletion is one commit: a reader sees all of the tree or none of it. Files go after
 * the commit, so a crash in between leaves only files (tool outputs expire on their own).
 *
 * Not kept: the project's file snapshots (`Snapshots`), a shadow repository shared by every session
 * of the project, whose trees other sessions may share; and a plan file in a git worktree, which
 * belongs to the project.
 *
 * A prompt racing with the deletion either commits before it (and is deleted with the session) or
 * fails as for an unknown session; a drain it woke in the short window between the interrupt and the
 * commit fails at its next write and goes idle. Another process's cached knowledge of the session is
 * not reachable from here: its writes for the session are refused by the foreign keys.
 */

import { SqlClient } from "@effect/sql"
import { Errors, Identifier, Session } from "@opencode-ai/schema"
import { Clock, Context, Data, Effect, Layer, Schema } from "effect"
import { WallClock } from "../clock/wall-clock.js"
import * as EventLog from "../event/event-log.js"
import type * as LiveBus from "../event/live-bus.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import * as PermissionRequests from "../permission/permission-requests.js"
import * as QuestionRequests from "../question/question-requests.js"
import { RunningSessions } from "../runner/running-sessions.js"
import type { SessionLeases } from "../runner/session-leases.js"
import { SessionRunner } from "../runner/session-runner.js"
import { ManagedOutput } from "../tool/managed-output.js"
import * as KnownSessions from "./known-sessions.js"
import * as MessageProjection from "./message-projection.js"
import * as PlanFile from "./plan-file.js"
import * as Sessions from "./sessions.js"

/** What one deletion removed. */
export interface Removed {
  /** The sessions deleted: the one asked for first, then its descendants (parents before children). */
  readonly sessions: ReadonlyArray<Session.SessionV2Info>
  /** The managed files deleted (tool output files, plan files). */
  readonly files: ReadonlyArray<string>
}

export interface Interface {
  /**
   * Deletes the session and its descendants (see the module doc) and resolves once their rows are
   * gone, `session.deleted` has been published for each, and their managed files are removed.
   * Unknown session (including one already deleted) → SessionNotFoundError, and nothing happens: a
   * second delete of the same id fails that way with the same end state, so retrying is safe.
   *
   * Interruption while interrupting the sessions leaves them in place (perhaps interrupted); once
   * the transaction starts, the deletion and the file removal run to completion.
   */
  readonly remove: (sessionID: Identifier.SessionID) => Effect.Effect<Removed, Errors.SessionNotFoundError>
}

/** `yield* SessionDelete.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionDelete")<Service, Interface>() {}

/** How many rounds of interrupts a deletion waits through for a tree that keeps running. */
const interruptRounds = 50
/** The pause between rounds (ms). */
const interruptPauseMs = 20

const encodeInfo = Schema.encodeSync(Session.SessionV2Info)

/** A child session was started while the tree was being deleted: the deletion starts over. */
class TreeChanged extends Data.TaggedError("Core/SessionTreeChanged") {}

export const layer: Layer.Layer<
  Service,
  never,
  | SqlClient.SqlClient
  | Sessions.Service
  | EventLog.Service
  | KnownSessions.Service
  | SessionRunner.Service
  | SessionLeases.Service
  | ManagedOutput.Service
  | PlanFile.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const context = yield* Effect.context<SessionRunner.Service | SessionLeases.Service>()
    const sql = yield* SqlClient.SqlClient
    const sessions = yield* Sessions.Service
    const log = yield* EventLog.Service
    const known = yield* KnownSessions.Service
    const runner = yield* SessionRunner.Service
    const managed = yield* ManagedOutput.Service
    const plans = yield* PlanFile.Service
    const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
      Effect.provideService(effect, SqlClient.SqlClient, sql)

    /** Interrupts every session of the tree until none runs (a prompt may wake one meanwhile). */
    const settle = Traced.fn("SessionDelete.settle")(function* (ids: ReadonlyArray<Identifier.SessionID>) {
      for (let round = 0; round < interruptRounds; round++) {
        // Parents first: a parent's task tool waits on its child, and interrupting it stops the child's run.
        yield* Effect.forEach(
          ids,
          (id) => runner.interrupt(id).pipe(Effect.catchTag("SessionNotFoundError", () => Effect.void)),
          {
            discard: true
          }
        )
        const running = yield* Effect.filter(ids, (id) => RunningSessions.isRunning(id)).pipe(Effect.provide(context))
        if (running.length === 0) return
        yield* WallClock.sleep(interruptPauseMs)
      }
      return yield* Effect.dieMessage(`sessions ${ids.join(", ")} kept running through ${interruptRounds} interrupts`)
    })

    /**
     * One attempt: the tree as read now, settled, then deleted in one transaction, which refuses
     * (rolling back) when a child was started meanwhile.
     */
    const attempt = Traced.fn("SessionDelete.attempt")(function* (sessionID: Identifier.SessionID) {
      const removed = yield* withSql(Sessions.tree(sessionID))
      if (removed.length === 0) return yield* Errors.SessionNotFoundError.of(sessionID)
      const ids = removed.map((session) => session.id)
      yield* settle(ids)
      const now = yield* Clock.currentTimeMillis
      const announce = removed.map(
        (session): LiveBus.Envelope => ({
          id: Identifier.newEventID(now),
          type: "session.deleted",
          data: { sessionID: session.id, info: encodeInfo(session) }
        })
      ) as unknown as readonly [LiveBus.Envelope, ...Array<LiveBus.Envelope>]
      let paths: ReadonlyArray<string> = []
      const commit = log.remove(ids, {
        announce,
        project: (aggregates) =>
          Effect.gen(function* () {
            const tree = aggregates as ReadonlyArray<Identifier.SessionID>
            if (yield* Sessions.hasChildOutside(tree)) return yield* new TreeChanged()
            paths = yield* MessageProjection.outputPaths(tree)
            // Permission and question requests keep their own logs (aggregate: the request id).
            const permissions = yield* PermissionRequests.idsOfSessions(tree)
            const questions = yield* QuestionRequests.idsOfSessions(tree)
            // Every table that references a session deletes its rows with it (ON DELETE CASCADE).
            const gone = yield* Sessions.removeAll(tree)
            // Deleted meanwhile by another caller: nothing of it is left to delete here.
            if (!gone.includes(sessionID)) return yield* Errors.SessionNotFoundError.of(sessionID)
            yield* known.forget(tree)
            return [...permissions, ...questions]
          })
      })
      // After the commit, files: each session's data-directory plan file and its tool output files.
      const discard = Effect.gen(function* () {
        const plansGone = yield* Effect.forEach(removed, (session) => plans.discard(session))
        const owned = paths.filter(managed.owns)
        yield* managed.discard(owned)
        return [...owned, ...plansGone.flatMap((found) => (found._tag === "Some" ? [found.value] : []))]
      })
      const files = yield* Effect.uninterruptible(
        Effect.zipRight(
          commit,
          Effect.suspend(() => discard)
        )
      )
      return { sessions: removed, files } satisfies Removed
    })

    const remove = Traced.fn("SessionDelete.remove")(
      function* (sessionID: Identifier.SessionID) {
        yield* sessions.get(sessionID)
        const deleted = yield* attempt(sessionID).pipe(
          Effect.retry({ while: (error) => error._tag === "Core/SessionTreeChanged", times: interruptRounds }),
          Effect.catchTag("Core/SessionTreeChanged", () =>
            Effect.dieMessage(`session ${sessionID} kept starting child sessions while it was deleted`)
          )
        )
        yield* Effect.logInfo("session deleted").pipe(
          Effect.annotateLogs({ sessions: deleted.sessions.length, files: deleted.files.length })
        )
        return deleted
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    return Service.of({ remove })
  })
)
