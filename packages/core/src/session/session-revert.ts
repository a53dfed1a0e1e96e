export * as SessionRevert from "./session-revert.js"

/**
 * Session Revert: going back to the state before one message of a session, in two steps.
 *
 * ```
 *            stage {messageID, files?}                     commit
 *   none ─────────────────────────────────► staged ───────────────────► none (messages reverted,
 *     ▲                                        │                              InstructionCheckpoint reset)
 *     └────────────── clear (files back) ──────┘
 * ```
 *
 * - `stage` records the revert point (`session.next.revert.staged`, the session's `revert` field). With
 *   `files`, it also restores the worktree: every file the reverted Steps changed (between the start
 *   snapshot of the first reverted Step and the last snapshot the session took, see StepSnapshots) is
 *   put back as it was before that first Step, and a snapshot of the worktree just before is kept in
 *   `revert.snapshot` so that `clear` can bring it back. `revert.files` lists each file change the
 *   revert makes (from the worktree as it was to the restored state), so a file the user edited after
 *   the Step shows up there with the user's edit in its patch; it is never overwritten unseen. Files
 *   the reverted Steps never touched are left alone. Staging again replaces the staged revert (the
 *   earlier one is cleared first, files included).
 * - `clear` undoes a staged revert (`session.next.revert.cleared`): the restored files are put back as
 *   they were when it was staged.
 * - `commit` (`session.next.revert.committed`) removes the message and everything after it from the
 *   session's active history (RevertedMessages; the durable log and the transcript keep them) and
 *   deletes the InstructionCheckpoint in the same transaction, so the next Step starts from a fresh
 *   complete baseline. The worktree stays as staged.
 *
 * A prompt on a session with a staged revert commits it first (the server's prompt operation calls
 * {@link Interface.commitStaged}). Staging or clearing while the session runs, or while it has
 * admitted input waiting to run (staging only), is a ConflictError; so are `clear` and `commit` with
 * nothing staged.
 */

import { SqlClient } from "@effect/sql"
import { Errors, type Identifier, Quote, type Session } from "@opencode-ai/schema"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { SessionInput } from "../input/session-input.js"
import * as InstructionCheckpoint from "../instructions/instruction-checkpoint.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { RunningSessions } from "../runner/running-sessions.js"
import type { SessionLeases } from "../runner/session-leases.js"
import type { SessionRunner } from "../runner/session-runner.js"
import { Snapshots } from "../snapshot/snapshots.js"
import * as MessageProjection from "./message-projection.js"
import * as RevertedMessages from "./reverted-messages.js"
import * as SessionEvents from "./session-events.js"
import * as Sessions from "./sessions.js"

export interface StageInput {
  /** The message to go back to: it and every message after it are reverted. */
  readonly messageID: Identifier.MessageID
  /** Also restore the files the reverted Steps changed; default false (history only). */
  readonly files?: boolean | undefined
}

export interface Interface {
  /**
   * Stages a revert to the state before `messageID` and resolves with the staged RevertState. Unknown
   * session → SessionNotFoundError (checked first); a message that does not exist, belongs to another
   * session or was already reverted → MessageNotFoundError; running, or input waiting to run →
   * ConflictError. The staged state commits as one event; restored files are written right after it.
   */
  readonly stage: (
    sessionID: Identifier.SessionID,
    input: StageInput
  ) => Effect.Effect<
    Session.RevertState,
    Errors.SessionNotFoundError | Errors.MessageNotFoundError | Errors.ConflictError
  >
  /** Undoes the staged revert, files included. Nothing staged, or running → ConflictError. */
  readonly clear: (
    sessionID: Identifier.SessionID
  ) => Effect.Effect<void, Errors.SessionNotFoundError | Errors.ConflictError>
  /** Commits the staged revert. Nothing staged, or running → ConflictError. */
  readonly commit: (
    sessionID: Identifier.SessionID
  ) => Effect.Effect<void, Errors.SessionNotFoundError | Errors.ConflictError>
  /** Commits the staged revert if there is one (before a new prompt); otherwise does nothing. */
  readonly commitStaged: (
    sessionID: Identifier.SessionID
  ) => Effect.Effect<void, Errors.SessionNotFoundError | Errors.ConflictError>
}

/** `yield* SessionRevert.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionRevert")<Service, Interface>() {}

const nothingStaged = () =>
  new Errors.ConflictError({ resource: "revert", message: "No revert is staged in this session" })

export const layer: Layer.Layer<
  Service,
  never,
  | SqlClient.SqlClient
  | Sessions.Service
  | SessionEvents.Service
  | SessionInput.Service
  | Snapshots.Service
  | SessionRunner.Service
  | SessionLeases.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const running = yield* Effect.context<SessionRunner.Service | SessionLeases.Service>()
    const sessions = yield* Sessions.Service
    const events = yield* SessionEvents.Service
    const input = yield* SessionInput.Service
    const snapshots = yield* Snapshots.Service

    const refuseWhileRunning = (sessionID: Identifier.SessionID, what: string) =>
      Effect.provide(RunningSessions.refuseWhileRunning(sessionID, what), running)

    const append = (
      sessionID: Identifier.SessionID,
      draft: Parameters<typeof SessionEvents.draft>,
      extra?: Parameters<SessionEvents.Interface["append"]>[2]
    ) =>
      // The session exists (it was read just before) and the projections cannot fail.
      events.append(sessionID, [SessionEvents.draft(...draft)], extra).pipe(Effect.orDie)

    const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
      Effect.provideService(effect, SqlClient.SqlClient, sql)

    /** The session's message `messageID` with its seq, unless missing, foreign or reverted. */
    const target = Traced.fn("SessionRevert.target")(function* (
      sessionID: Identifier.SessionID,
      messageID: Identifier.MessageID
    ) {
      const found = yield* withSql(MessageProjection.find(sessionID, messageID))
      const reverted = Option.isNone(found)
        ? false
        : yield* withSql(RevertedMessages.isReverted(sessionID, found.value.seq))
      if (Option.isNone(found) || reverted) {
        return yield* new Errors.MessageNotFoundError({
          sessionID,
          messageID,
          message: `Message not found: ${Quote.clip(messageID)}`
        })
      }
      return found.value
    })

    /** The snapshots the assistant messages from `seq` on recorded, in order. */
    const stepSnapshots = Traced.fn("SessionRevert.stepSnapshots")(function* (
      sessionID: Identifier.SessionID,
      seq: number
    ) {
      const messages = yield* withSql(MessageProjection.assistantsFrom(sessionID, seq))
      return messages.flatMap((message) => (message.snapshot !== undefined ? [message.snapshot] : []))
    })

    /** Puts back the files a staged revert restored, as they were when it was staged. */
    const undoFiles = Traced.fn("SessionRevert.undoFiles")(function* (session: Session.SessionV2Info) {
      const revert = session.revert
      if (revert?.snapshot === undefined || revert.files === undefined || revert.files.length === 0) return
      const project = yield* snapshots.project(session.location.directory)
      if (Option.isNone(project)) return
      yield* snapshots
        .restore(
          project.value,
          revert.snapshot,
          revert.files.map((file) => file.path)
        )
        .pipe(Effect.orDie)
    })

    // Files first, then the record: a stop in between leaves the revert staged, and clearing it again
    // restores the same files once more. Once started, both run to completion.
    const clearStaged = Traced.fn("SessionRevert.clearStaged")(function* (session: Session.SessionV2Info) {
      yield* Effect.uninterruptible(
        Effect.gen(function* () {
          yield* undoFiles(session)
          const now = yield* Clock.currentTimeMillis
          yield* append(session.id, ["session.next.revert.cleared", { timestamp: now, sessionID: session.id }])
        })
      )
    })

    const stage = Traced.fn("SessionRevert.stage")(
      function* (sessionID: Identifier.SessionID, request: StageInput) {
        const session = yield* sessions.get(sessionID)
        const row = yield* target(sessionID, request.messageID)
        yield* refuseWhileRunning(sessionID, "staging a revert")
        if ((yield* input.pending(sessionID)).length > 0) {
          return yield* new Errors.ConflictError({
            resource: "session",
            message: "The session has admitted input waiting to run: staging a revert is refused until it has run"
          })
        }
        if (session.revert !== undefined) yield* clearStaged(session)

        // The worktree before the first reverted Step, and the last state the session's Steps saw.
        const taken = yield* stepSnapshots(sessionID, row.seq)
        const before = taken.find((snapshot) => snapshot.start !== undefined)?.start
        const last = taken
          .map((snapshot) => snapshot.end ?? snapshot.start)
          .filter((id) => id !== undefined)
          .at(-1)
        const project = yield* snapshots.project(session.location.directory)

        let files: ReadonlyArray<Session.FileDiff> = []
        let restore: { readonly project: Snapshots.Project; readonly to: string; readonly from: string } | undefined
        if (before !== undefined && last !== undefined && Option.isSome(project)) {
          const now = yield* snapshots.track(project.value)
          if (Option.isSome(now)) {
            const touched = yield* snapshots.changed(project.value, before, last).pipe(Effect.orDie)
            files = yield* snapshots.diff(project.value, now.value, before, touched).pipe(Effect.orDie)
            if (request.files === true && files.length > 0) {
              restore = { project: project.value, to: before, from: now.value }
            }
          }
        }
        const revert: Session.RevertState = {
          messageID: row.message.id,
          ...(restore === undefined ? {} : { snapshot: restore.from }),
          ...(files.length === 0 ? {} : { diff: files.map((file) => file.patch).join("") }),
          files
        }
        // The staged state commits before any file is written: a stop in between leaves a staged
        // revert whose `clear` restores the worktree as it already is, never restored files without a
        // record of how to bring them back. Once started, both run to completion.
        yield* Effect.uninterruptible(
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            yield* append(sessionID, ["session.next.revert.staged", { timestamp: now, sessionID: session.id, revert }])
            if (restore !== undefined) {
              yield* snapshots
                .restore(
                  restore.project,
                  restore.to,
                  files.map((file) => file.path)
                )
                .pipe(Effect.orDie)
            }
          })
        )
        return revert
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const clear = Traced.fn("SessionRevert.clear")(
      function* (sessionID: Identifier.SessionID) {
        const session = yield* sessions.get(sessionID)
        if (session.revert === undefined) return yield* nothingStaged()
        yield* refuseWhileRunning(sessionID, "clearing a revert")
        yield* clearStaged(session)
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const commitRevert = Traced.fn("SessionRevert.commitRevert")(function* (
      session: Session.SessionV2Info,
      revert: Session.RevertState
    ) {
      const found = yield* withSql(MessageProjection.find(session.id, revert.messageID))
      if (Option.isNone(found)) {
        return yield* Effect.dieMessage(`staged revert message ${revert.messageID} has no row`)
      }
      const row = found.value
      const now = yield* Clock.currentTimeMillis
      yield* append(
        session.id,
        ["session.next.revert.committed", { timestamp: now, sessionID: session.id, messageID: revert.messageID }],
        (committed) =>
          Effect.zipRight(
            RevertedMessages.record({
              sessionID: session.id,
              fromSeq: row.seq,
              toSeq: committed[committed.length - 1]!.durable.seq,
              messageID: revert.messageID
            }),
            InstructionCheckpoint.clear(session.id)
          )
      )
    })

    const commit = Traced.fn("SessionRevert.commit")(
      function* (sessionID: Identifier.SessionID) {
        const session = yield* sessions.get(sessionID)
        if (session.revert === undefined) return yield* nothingStaged()
        yield* refuseWhileRunning(sessionID, "committing a revert")
        yield* commitRevert(session, session.revert)
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const commitStaged = Traced.fn("SessionRevert.commitStaged")(
      function* (sessionID: Identifier.SessionID) {
        const session = yield* sessions.get(sessionID)
        if (session.revert === undefined) return
        yield* refuseWhileRunning(sessionID, "committing a revert")
        yield* commitRevert(session, session.revert)
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    return Service.of({ stage, clear, commit, commitStaged })
  })
)
