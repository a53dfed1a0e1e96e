export * as InstructionCheckpoint from "./instruction-checkpoint.js"

/**
 * InstructionCheckpoint: the Session-owned durable Instruction Baseline, its baseline sequence and the
 * Applied Instructions record, used to prepare every Step (table `instruction_checkpoint`).
 *
 * `prepare` is the only thing that admits instruction changes. It runs at a Safe Step Boundary (prior
 * tools settled, before prompt promotion) and only when the runner calls it: a source changing never
 * wakes anything; the change is sampled at the next boundary that happens anyway.
 *
 * ```
 *   no checkpoint ──initialize──▶ Blocked: write nothing
 *        ▲                  └───▶ Complete: store baseline + Applied (no update) ──▶ checkpoint
 *        │ reset                                                                       │
 *        └───────────────────────────────── checkpoint ◀──────────────────────────────┘
 *                                              │ prepare
 *          compaction recorded after baseline_seq?
 *            yes ─rebaseline─▶ Blocked: write nothing
 *                          └─▶ Complete: replace baseline + Applied (no update)
 *            no ──reconcile──▶ Unchanged: write nothing
 *                          ├─▶ Updated, text "": advance Applied silently
 *                          └─▶ Updated, text:    append context.updated + advance Applied,
 *                                                one transaction
 * ```
 */

import { SqlClient, SqlSchema } from "@effect/sql"
import { type Errors, Identifier } from "@opencode-ai/schema"
import { Clock, Context, Data, Effect, Layer, Option, Schema } from "effect"
import { EventLog } from "../event/event-log.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { KnownSessions } from "../session/known-sessions.js"
import * as SessionEvents from "../session/session-events.js"
import { PreparedSql } from "../storage/prepared-sql.js"
import * as FifoLock from "../sync/fifo-lock.js"
import { ContextUpdated } from "./context-updated.js"
import { Instructions } from "./instructions.js"

/** What a session's checkpoint holds. */
export interface Checkpoint {
  /** The exact joined Instruction Baseline, byte for byte as rendered. */
  readonly baseline: string
  /** The session's last event seq when the baseline was rendered: history after it follows the baseline. */
  readonly baselineSeq: number
  readonly applied: Instructions.Applied
  /** The seq of the latest completed compaction recorded for the session, if any. */
  readonly compactionSeq?: number
}

/** An Instruction Update admitted by this prepare: the durable event's message, text and seq. */
export interface Update {
  readonly messageID: Identifier.MessageID
  readonly text: string
  readonly seq: number
}

/**
 * The Step may run: send `baseline` as the instruction part of the provider-cache prefix. `update`
 * is present only when this call admitted an Instruction Update (it is already durable in the log and
 * part of Session History from now on, so a retried attempt replays it from history).
 */
export interface Prepared {
  readonly _tag: "Prepared"
  readonly baseline: string
  readonly baselineSeq: number
  readonly update?: Update
}

/**
 * No complete baseline can be rendered because these sources are unavailable: nothing was written,
 * the Step must not run, and pending input stays untouched. Try again at a later boundary.
 */
export interface Blocked {
  readonly _tag: "Blocked"
  readonly unavailable: ReadonlyArray<Instructions.Key>
}

export type Preparation = Prepared | Blocked

/** What {@link Interface.compacted} committed. */
export interface Compacted {
  /** The seq of the compaction's own event (the first draft). */
  readonly seq: number
  /** The baseline was replaced in the same transaction (false: the next prepare renders it). */
  readonly rebaselined: boolean
}

export interface Interface {
  /**
   * Prepares the instruction state of the next Step of `sessionID` from `instructions`, observing
   * each source exactly once:
   * - no checkpoint → `Instructions.initialize`. Blocked writes nothing. Complete stores the baseline
   *   verbatim with its Applied record and `baseline_seq` (the session's current seq), and emits NO
   *   update: the baseline already says it all;
   * - a completed compaction recorded after `baseline_seq` → `Instructions.rebaseline` from the
   *   stored Applied: the new baseline folds in every change (no update); Blocked writes nothing;
   * - otherwise → `Instructions.reconcile` against Applied, keeping the stored baseline. Unchanged
   *   writes nothing. An update with text appends `session.next.context.updated` and advances
   *   Applied in that same transaction (both commit or neither). An update with empty text advances
   *   Applied silently.
   *
   * Concurrency: calls on one session are serialized in this process, and every write is a
   * compare-and-set on the row that was read (a conflicting write, e.g. from another process on the
   * same file, makes this call start over), so racing boundaries admit one update, never two.
   * Interruption before the write leaves nothing behind; the write itself is atomic and, once
   * started, runs to completion. Unknown session → SessionNotFoundError.
   */
  readonly prepare: <R>(
    sessionID: Identifier.SessionID,
    instructions: Instructions.Instructions<R>
  ) => Effect.Effect<Preparation, Errors.SessionNotFoundError, R>
  /**
   * Deletes the session's checkpoint so the next prepare initializes a fresh complete baseline (session
   * move, committed revert). Idempotent. Waits for an in-flight prepare of the session in this process.
   */
  readonly reset: (sessionID: Identifier.SessionID) => Effect.Effect<void, Errors.SessionNotFoundError>
  /**
   * Records that a compaction completed at event `seq` of the session, so the next prepare rebaselines
   * (unless a baseline rendered at or after `seq` is already stored). A no-op without a checkpoint:
   * the next prepare initializes anyway. Recording an older seq than one already recorded changes
   * nothing. A `seq` beyond the session's log is a defect. See {@link markCompacted} for use inside
   * the compaction event's own transaction.
   */
  readonly recordCompaction: (
    sessionID: Identifier.SessionID,
    seq: number
  ) => Effect.Effect<void, Errors.SessionNotFoundError>
  /**
   * Completes a compaction: appends `drafts` (the compaction's `compaction.ended` first, then what
   * follows it, such as a synthetic continuation) and, in that SAME transaction, rebaselines the
   * checkpoint from `instructions` (`Instructions.rebaseline` against the stored Applied record,
   * observed once before the transaction): the new baseline, its Applied record and `baseline_seq`
   * (the session's seq after the drafts) are stored, and the compaction is recorded at the seq of
   * the first draft. So the completed compaction and its baseline commit together or not at all, and
   * every earlier Instruction Update falls before the new baseline. When the rebaseline is blocked (a
   * source never told to the model is unavailable) the compaction is recorded instead and the next
   * prepare rebaselines; without a checkpoint the drafts are appended alone (the next prepare
   * initializes). Serialized with {@link prepare}; a conflicting write starts it over. Resolves with
   * the seq of the first draft and whether the baseline was replaced.
   */
  readonly compacted: <R>(
    sessionID: Identifier.SessionID,
    instructions: Instructions.Instructions<R>,
    drafts: ReadonlyArray<EventLog.Draft>
  ) => Effect.Effect<Compacted, Errors.SessionNotFoundError, R>
  /** The stored checkpoint, if any. */
  readonly get: (
    sessionID: Identifier.SessionID
  ) => Effect.Effect<Option.Option<Checkpoint>, Errors.SessionNotFoundError>
}

/** The InstructionCheckpoint store; `yield* InstructionCheckpoint.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/InstructionCheckpoint")<Service, Interface>() {}

// ---------------------------------------------------------------------------------------------------
// SQL shared by the service and the in-transaction helpers

const AppliedJson = Schema.parseJson(Instructions.Applied)
const encodeApplied = Schema.encode(AppliedJson)

/** A stored checkpoint row, its Applied record decoded. */
const Row = Schema.Struct({
  baseline_text: Schema.String,
  baseline_seq: Schema.Number,
  applied: AppliedJson,
  compaction_seq: Schema.NullOr(Schema.Number),
  revision: Schema.Number
})
const SeqRow = Schema.Struct({ baseline_seq: Schema.Number })
const encodeData = Schema.encode(ContextUpdated.Data)

/** The session's last event seq (0 before its first event), as a subquery. */
const currentSeq = (sql: SqlClient.SqlClient, sessionID: Identifier.SessionID) =>
  EventLog.lastSeqFragment(sql, sessionID)

/**
 * Records a completed compaction at `seq` inside the caller's SQL transaction (for example the
 * projection of the compaction's own durable event, so the two commit together). Same semantics as
 * {@link Interface.recordCompaction}, without the session check.
 */
export const markCompacted = Traced.fn("InstructionCheckpoint.markCompacted")(
  function* (sessionID: Identifier.SessionID, seq: number) {
    const sql = yield* SqlClient.SqlClient
    const current = yield* EventLog.lastSeq(sessionID)
    if (!Number.isInteger(seq) || seq < 1 || seq > current) {
      return yield* Effect.dieMessage(`compaction seq ${seq} is not an event of session ${sessionID}`)
    }
    yield* sql`
      UPDATE instruction_checkpoint
      SET compaction_seq = CASE WHEN compaction_seq IS NULL OR compaction_seq < ${seq} THEN ${seq} ELSE compaction_seq END
      WHERE session_id = ${sessionID}`.pipe(Effect.orDie)
  },
  (effect, sessionID) => LogAnnotation.session(effect, sessionID)
)

/**
 * Deletes the session's checkpoint inside the caller's SQL transaction (for example the projection of
 * a move or committed revert event). Unlike {@link Interface.reset} it does not wait for an in-flight
 * prepare in this process, so call it only while the session runs no Step.
 */
export const clear = Traced.fn("InstructionCheckpoint.clear")(
  function* (sessionID: Identifier.SessionID) {
    const sql = yield* SqlClient.SqlClient
    yield* sql`DELETE FROM instruction_checkpoint WHERE session_id = ${sessionID}`.pipe(Effect.orDie)
  },
  (effect, sessionID) => LogAnnotation.session(effect, sessionID)
)

/** Another writer changed (or deleted) the row this attempt read: start over from a fresh read. */
class Stale extends Data.TaggedError("StaleInstructionCheckpoint") {}

/**
 * Per-key mutual exclusion for this process: one permit per key, created on first use and dropped
 * once nobody holds or awaits it, so idle sessions cost nothing.
 */
const keyedLock = () => {
  const locks = new Map<string, { readonly lock: FifoLock.FifoLock; users: number }>()
  return <A, E, R>(key: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        let lock = locks.get(key)
        if (lock === undefined) {
          lock = { lock: FifoLock.unsafeMake(), users: 0 }
          locks.set(key, lock)
        }
        lock.users++
        return lock
      }),
      (lock) => lock.lock.withLock(effect),
      (lock) =>
        Effect.sync(() => {
          lock.users--
          if (lock.users === 0) locks.delete(key)
        })
    )
}

export const layer: Layer.Layer<Service, never, SqlClient.SqlClient | SessionEvents.Service | KnownSessions.Service> =
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const events = yield* SessionEvents.Service
      const serialized = keyedLock()

      const ensureSession = (yield* KnownSessions.Service).ensure

      const findRow = PreparedSql.findOne(
        PreparedSql.make(
          sql,
          "SELECT baseline_text, baseline_seq, applied, compaction_seq, revision FROM instruction_checkpoint WHERE session_id = ?"
        ),
        Row
      )
      const read = (sessionID: Identifier.SessionID) => findRow([sessionID]).pipe(Effect.orDie)

      /** Stores a first baseline; Stale when another writer stored one first. Resolves with baseline_seq. */
      const insert = Traced.fn("InstructionCheckpoint.insert")(function* (
        sessionID: Identifier.SessionID,
        baseline: Instructions.Complete
      ) {
        const now = yield* Clock.currentTimeMillis
        const applied = yield* encodeApplied(baseline.applied).pipe(Effect.orDie)
        const row = yield* SqlSchema.findOne({
          Request: Schema.Void,
          Result: SeqRow,
          execute: () => sql`
            INSERT INTO instruction_checkpoint
              (session_id, baseline_text, baseline_seq, applied, compaction_seq, revision, time_created, time_updated)
            VALUES (${sessionID}, ${baseline.text}, (${currentSeq(sql, sessionID)}), ${applied}, NULL, 1, ${now}, ${now})
            ON CONFLICT (session_id) DO NOTHING
            RETURNING baseline_seq`
        })(undefined).pipe(Effect.orDie)
        if (Option.isNone(row)) return yield* new Stale()
        return row.value.baseline_seq
      })

      /**
       * Replaces the baseline after compaction, compare-and-set on `revision`; with `compactionSeq` it
       * also records that compaction. Resolves with baseline_seq.
       */
      const rewrite = Traced.fn("InstructionCheckpoint.rewrite")(function* (
        sessionID: Identifier.SessionID,
        revision: number,
        baseline: Instructions.Complete,
        compactionSeq?: number
      ) {
        const now = yield* Clock.currentTimeMillis
        const applied = yield* encodeApplied(baseline.applied).pipe(Effect.orDie)
        const row = yield* SqlSchema.findOne({
          Request: Schema.Void,
          Result: SeqRow,
          execute: () => sql`
            UPDATE instruction_checkpoint
            SET baseline_text = ${baseline.text}, baseline_seq = (${currentSeq(sql, sessionID)}), applied = ${applied},
                compaction_seq = ${compactionSeq === undefined ? sql`compaction_seq` : compactionSeq},
                revision = revision + 1, time_updated = ${now}
            WHERE session_id = ${sessionID} AND revision = ${revision}
            RETURNING baseline_seq`
        })(undefined).pipe(Effect.orDie)
        if (Option.isNone(row)) return yield* new Stale()
        return row.value.baseline_seq
      })

      /** Advances Applied alone, compare-and-set on `revision`; works inside the update's transaction too. */
      const advance = Traced.fn("InstructionCheckpoint.advance")(function* (
        sessionID: Identifier.SessionID,
        revision: number,
        next: Instructions.Applied
      ) {
        const now = yield* Clock.currentTimeMillis
        const applied = yield* encodeApplied(next).pipe(Effect.orDie)
        const rows = yield* sql`
        UPDATE instruction_checkpoint SET applied = ${applied}, revision = revision + 1, time_updated = ${now}
        WHERE session_id = ${sessionID} AND revision = ${revision}
        RETURNING revision`.pipe(Effect.orDie)
        if (rows.length === 0) return yield* new Stale()
      })

      /**
       * Publishes one Instruction Update through SessionEvents (so its system message is projected); the
       * extra projection advances Applied in the same transaction. The session was checked by prepare
       * and sessions are never deleted, so a missing one here is a defect.
       */
      const publish = Traced.fn("InstructionCheckpoint.publish")(function* (
        sessionID: Identifier.SessionID,
        revision: number,
        updated: Instructions.Updated
      ) {
        const now = yield* Clock.currentTimeMillis
        const messageID = Identifier.newMessageID(now)
        const data = yield* encodeData({
          timestamp: now,
          sessionID,
          messageID,
          text: updated.text
        }).pipe(Effect.orDie)
        const [committed] = yield* events
          .append(sessionID, [{ type: ContextUpdated.type, version: ContextUpdated.version, data }], () =>
            advance(sessionID, revision, updated.applied)
          )
          .pipe(Effect.catchTag("SessionNotFoundError", (error) => Effect.die(error)))
        if (committed === undefined) return yield* Effect.dieMessage("EventLog.append committed no event")
        return { messageID, text: updated.text, seq: committed.durable.seq } satisfies Update
      })

      const attempt = <R>(
        sessionID: Identifier.SessionID,
        instructions: Instructions.Instructions<R>
      ): Effect.Effect<Preparation, never, R> =>
        Effect.gen(function* () {
          const stored = yield* read(sessionID)

          if (Option.isNone(stored)) {
            const baseline = yield* Instructions.initialize(instructions)
            if (baseline._tag === "Blocked")
              return { _tag: "Blocked", unavailable: baseline.unavailable } as Preparation
            const baselineSeq = yield* insert(sessionID, baseline)
            yield* Effect.logDebug("instruction baseline initialized")
            return { _tag: "Prepared", baseline: baseline.text, baselineSeq } as Preparation
          }

          const row = stored.value
          if (row.compaction_seq !== null && row.compaction_seq > row.baseline_seq) {
            const baseline = yield* Instructions.rebaseline(instructions, row.applied)
            if (baseline._tag === "Blocked")
              return { _tag: "Blocked", unavailable: baseline.unavailable } as Preparation
            const baselineSeq = yield* rewrite(sessionID, row.revision, baseline)
            yield* Effect.logDebug("instruction baseline rebaselined after compaction")
            return { _tag: "Prepared", baseline: baseline.text, baselineSeq } as Preparation
          }

          const prepared: Prepared = { _tag: "Prepared", baseline: row.baseline_text, baselineSeq: row.baseline_seq }
          const reconciled = yield* Instructions.reconcile(instructions, row.applied)
          if (reconciled._tag === "Unchanged") return prepared as Preparation
          if (reconciled.text === "") {
            yield* advance(sessionID, row.revision, reconciled.applied)
            return prepared as Preparation
          }
          const update = yield* publish(sessionID, row.revision, reconciled)
          yield* Effect.logDebug("instruction update admitted").pipe(Effect.annotateLogs({ seq: update.seq }))
          return { ...prepared, update } as Preparation
        }).pipe(Effect.catchTag("StaleInstructionCheckpoint", () => attempt(sessionID, instructions)))

      const prepare = Traced.fn("InstructionCheckpoint.prepare")(
        function* <R>(sessionID: Identifier.SessionID, instructions: Instructions.Instructions<R>) {
          yield* ensureSession(sessionID)
          return yield* serialized(sessionID, attempt(sessionID, instructions))
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      const reset = Traced.fn("InstructionCheckpoint.reset")(
        function* (sessionID: Identifier.SessionID) {
          yield* ensureSession(sessionID)
          yield* serialized(sessionID, Effect.provideService(clear(sessionID), SqlClient.SqlClient, sql))
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      const recordCompaction = Traced.fn("InstructionCheckpoint.recordCompaction")(
        function* (sessionID: Identifier.SessionID, seq: number) {
          yield* ensureSession(sessionID)
          yield* Effect.provideService(markCompacted(sessionID, seq), SqlClient.SqlClient, sql)
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      const completeAttempt = <R>(
        sessionID: Identifier.SessionID,
        instructions: Instructions.Instructions<R>,
        drafts: ReadonlyArray<EventLog.Draft>
      ): Effect.Effect<Compacted, Errors.SessionNotFoundError, R> =>
        Effect.gen(function* () {
          const stored = yield* read(sessionID)
          const firstSeq = (committed: ReadonlyArray<EventLog.Envelope>) => {
            const first = committed[0]
            return first === undefined
              ? Effect.dieMessage("a compaction appended no event")
              : Effect.succeed(first.durable.seq)
          }
          if (Option.isNone(stored)) {
            return { seq: yield* firstSeq(yield* events.append(sessionID, drafts)), rebaselined: false }
          }
          const row = stored.value
          const baseline = yield* Instructions.rebaseline(instructions, row.applied)
          const committed = yield* events.append(sessionID, drafts, (envelopes) =>
            Effect.flatMap(firstSeq(envelopes), (seq) =>
              baseline._tag === "Complete"
                ? Effect.asVoid(rewrite(sessionID, row.revision, baseline, seq))
                : markCompacted(sessionID, seq)
            )
          )
          if (baseline._tag === "Blocked") {
            yield* Effect.logWarning(
              "compaction completed; the baseline is rebaselined once its sources are available",
              {
                unavailable: baseline.unavailable
              }
            )
          }
          return { seq: yield* firstSeq(committed), rebaselined: baseline._tag === "Complete" }
        }).pipe(Effect.catchTag("StaleInstructionCheckpoint", () => completeAttempt(sessionID, instructions, drafts)))

      const compacted = Traced.fn("InstructionCheckpoint.compacted")(
        function* <R>(
          sessionID: Identifier.SessionID,
          instructions: Instructions.Instructions<R>,
          drafts: ReadonlyArray<EventLog.Draft>
        ) {
          yield* ensureSession(sessionID)
          return yield* serialized(sessionID, completeAttempt(sessionID, instructions, drafts))
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      const get = Traced.fn("InstructionCheckpoint.get")(
        function* (sessionID: Identifier.SessionID) {
          yield* ensureSession(sessionID)
          return Option.map(
            yield* read(sessionID),
            (row): Checkpoint => ({
              baseline: row.baseline_text,
              baselineSeq: row.baseline_seq,
              applied: row.applied,
              ...(row.compaction_seq === null ? {} : { compactionSeq: row.compaction_seq })
            })
          )
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      return Service.of({ prepare, reset, recordCompaction, compacted, get })
    })
  )
