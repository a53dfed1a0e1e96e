export * as SessionInput from "./session-input.js"

/**
 * SessionInput: the session inbox (table `session_input`). Admission durably accepts a prompt as an
 * Admitted Prompt (pending input, not yet Session History); Prompt Promotion consumes it and appends
 * its user message to history. Both are single durable transitions through SessionEvents:
 *
 * ```
 *   admit ──► prompt.admitted + inbox row (promoted_seq NULL)          one transaction
 *                   │
 *   promoteSteers / promoteNextQueued
 *                   ▼
 *             prompted (→ user message) + promoted_seq = its seq      one transaction
 * ```
 *
 * Which prompts promote when is the runner's decision (steers at every Safe Step Boundary while the
 * drain continues, one queued prompt when the session would otherwise go idle); this module only
 * guarantees each promotion is atomic, in admission order, and happens at most once.
 */

import { FileSystem } from "@effect/platform"
import { SqlClient, SqlError, SqlSchema } from "@effect/sql"
import { AdmittedPrompt, Errors, Identifier } from "@opencode-ai/schema"
import { Clock, Context, Data, Effect, Layer, Option, ParseResult, Schema } from "effect"
import { Config } from "../config/config.js"
import type * as EventLog from "../event/event-log.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { Permission } from "../permission/permission.js"
import { KnownSessions } from "../session/known-sessions.js"
import { MessageProjection } from "../session/message-projection.js"
import * as SessionEvents from "../session/session-events.js"
import * as Sessions from "../session/sessions.js"
import { PreparedSql } from "../storage/prepared-sql.js"
import { ToolPath } from "../tool/builtin/tool-path.js"
import * as PromptResolution from "./prompt-resolution.js"

export interface AdmitInput {
  /** The user message the prompt becomes; makes admission idempotent. Default: a fresh message ID. */
  readonly id?: Identifier.MessageID | undefined
  readonly prompt: AdmittedPrompt.PromptInput
  /** Default `steer`. */
  readonly delivery?: AdmittedPrompt.Delivery | undefined
  /**
   * Rewrites the prompt before its attachments are resolved (a command's expansion). Runs only for a
   * new admission, never for a retry of an admitted `id`: idempotency compares `prompt` as given.
   */
  readonly prepare?:
    | ((prompt: AdmittedPrompt.PromptInput) => Effect.Effect<AdmittedPrompt.PromptInput, Errors.InvalidRequestError>)
    | undefined
}

export interface Interface {
  /**
   * Admits a prompt into the session's inbox: resolves its attachments (PromptResolution) and, in
   * one transaction, appends `session.next.prompt.admitted` and stores the inbox entry. Resolves with
   * the Admitted Prompt (`admittedSeq` = the event's seq). It never promotes or wakes anything.
   *
   * Idempotent by `id`: when `id` was already admitted to this session with the same prompt input and
   * delivery, resolves with the stored record (with `promotedSeq` once promoted) and appends nothing;
   * the attachments are not resolved again. The same `id` with a different prompt, delivery or
   * session, or naming a message already in history, is a ConflictError (`resource: "prompt"`).
   * Unknown session → SessionNotFoundError; an attachment that cannot be resolved →
   * InvalidRequestError. Concurrent admissions of one `id` admit it once.
   */
  readonly admit: (
    sessionID: Identifier.SessionID,
    input: AdmitInput
  ) => Effect.Effect<
    AdmittedPrompt.SessionInputAdmitted,
    Errors.SessionNotFoundError | Errors.ConflictError | Errors.InvalidRequestError
  >
  /** The session's Admitted Prompts not yet promoted, in admission order. */
  readonly pending: (
    sessionID: Identifier.SessionID
  ) => Effect.Effect<ReadonlyArray<AdmittedPrompt.SessionInputAdmitted>, Errors.SessionNotFoundError>
  /**
   * Promotes every pending steer of the session (only those admitted at or before `cutoffSeq` when
   * given), in admission order, as ONE transaction: a `session.next.prompted` per prompt (projecting
   * its user message) and each entry's `promoted_seq`. Resolves with how many were promoted (0 when
   * none were pending). Each entry is claimed inside the transaction (`promoted_seq IS NULL`), so
   * concurrent promotions, in this process or another on the same file, never promote one prompt
   * twice: a promotion that loses the race rolls back and retries with what is still pending.
   */
  readonly promoteSteers: (
    sessionID: Identifier.SessionID,
    cutoffSeq?: number
  ) => Effect.Effect<number, Errors.SessionNotFoundError>
  /**
   * Promotes the oldest pending queued prompt of the session, with the same atomicity and claim as
   * {@link promoteSteers}. Resolves with whether one was promoted.
   */
  readonly promoteNextQueued: (sessionID: Identifier.SessionID) => Effect.Effect<boolean, Errors.SessionNotFoundError>
  /** Whether the session has an Admitted Prompt not yet promoted ({@link pending} is not empty), read cheaply. */
  readonly hasPending: (sessionID: Identifier.SessionID) => Effect.Effect<boolean, Errors.SessionNotFoundError>
}

/** The session inbox; `yield* SessionInput.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionInput")<Service, Interface>() {}

/**
 * The sessions with admitted prompts still waiting for promotion (start-up Recovery resumes them).
 * One read of a partial index: proportional to pending input, not to history.
 */
export const pendingSessions = Traced.fn("SessionInput.pendingSessions")(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* SqlSchema.findAll({
    Request: Schema.Void,
    Result: Schema.Struct({ session_id: Identifier.SessionID }),
    execute: () => sql`SELECT DISTINCT session_id FROM session_input WHERE promoted_seq IS NULL ORDER BY session_id`
  })(undefined).pipe(Effect.orDie)
  return rows.map((row) => row.session_id)
})

/** Another admission stored this id first: roll back and answer from the stored record. */
class AdmissionRaced extends Data.TaggedError("AdmissionRaced") {}
/** Another promotion claimed an entry first: roll back and start over from what is pending. */
class PromotionRaced extends Data.TaggedError("PromotionRaced") {}

/** An integer column: a number in SQLite, a numeric string for PostgreSQL's `bigint`. */
const Int = Schema.Union(Schema.Int, Schema.compose(Schema.NumberFromString, Schema.Int))

/** A `session_input` row, decoded: `prompt` is the resolved prompt's JSON, `input` the canonical input. */
const Row = Schema.Struct({
  id: Identifier.SessionMessageID,
  session_id: Identifier.SessionID,
  delivery: AdmittedPrompt.Delivery,
  input: Schema.String,
  prompt: Schema.parseJson(AdmittedPrompt.Prompt),
  admitted_seq: Int,
  promoted_seq: Schema.NullOr(Int),
  time_created: Int
})
type Row = typeof Row.Type

const encodePrompt = Schema.encode(Schema.parseJson(AdmittedPrompt.Prompt))
const encodeInput = Schema.encode(AdmittedPrompt.PromptInput)

/** JSON with object keys sorted, so two equal inputs compare equal whatever their key order. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === "object" && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner
  )

const conflict = (id: string) =>
  new Errors.ConflictError({
    resource: "prompt",
    message: `Prompt ${id} was already admitted with different content; use a new id for a new prompt`
  })

const toRecord = (row: Row): AdmittedPrompt.SessionInputAdmitted => ({
  admittedSeq: row.admitted_seq,
  id: row.id,
  sessionID: row.session_id,
  prompt: row.prompt,
  delivery: row.delivery,
  timeCreated: row.time_created,
  ...(row.promoted_seq === null ? {} : { promotedSeq: row.promoted_seq })
})

/** A failed statement or a row that does not decode is a defect: the one place this module says so. */
const storageDefects = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.catchIf(
    effect,
    (error): error is Extract<E, SqlError.SqlError | ParseResult.ParseError> =>
      error instanceof SqlError.SqlError || ParseResult.isParseError(error),
    Effect.die
  )

export const layer: Layer.Layer<
  Service,
  never,
  SqlClient.SqlClient | SessionEvents.Service | Sessions.Service | KnownSessions.Service | FileSystem.FileSystem
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const events = yield* SessionEvents.Service
    const sessions = yield* Sessions.Service
    const fs = yield* FileSystem.FileSystem
    // The agents' rules decide which outside paths may be attached; a host without a config (an
    // offline admission) allows none.
    const config = yield* Effect.serviceOption(Config.Service)
    const outsideAllowed = (agentName: string | undefined) => {
      if (Option.isNone(config)) return undefined
      const agent = Option.orElse(config.value.agent(agentName ?? config.value.defaultAgent), () =>
        config.value.agent(config.value.defaultAgent)
      )
      if (Option.isNone(agent)) return undefined
      const rules = agent.value.permission
      return (real: string, kind: "file" | "directory") =>
        Permission.evaluate(rules, "external_directory", ToolPath.externalResource(real, kind)) === "allow"
    }

    // Every statement on `session_input` is here (this module owns the table).
    const columns = "id, session_id, delivery, input, prompt, admitted_seq, promoted_seq, time_created"
    const lookup = SqlSchema.findOne({
      Request: Schema.String,
      Result: Row,
      execute: (id) => sql`SELECT ${sql.literal(columns)} FROM session_input WHERE id = ${id}`
    })
    /**
     * The unpromoted rows of a session, in admission order: through the partial index of unpromoted
     * rows, then sorted (`+admitted_seq` keeps the planner off the (session_id, admitted_seq) index,
     * which would walk every prompt the session ever had). One Prepared Statement per shape asked for.
     */
    const pendingStatements = new Map<string, ReturnType<typeof PreparedSql.findAll<Row, typeof Row.Encoded>>>()
    const pendingRows = (request: {
      readonly sessionID: Identifier.SessionID
      readonly delivery?: AdmittedPrompt.Delivery
      readonly cutoffSeq?: number
      readonly limit?: number
    }) => {
      const params: Array<unknown> = [request.sessionID]
      let where = ""
      if (request.delivery !== undefined) {
        where += " AND delivery = ?"
        params.push(request.delivery)
      }
      if (request.cutoffSeq !== undefined) {
        where += " AND +admitted_seq <= ?"
        params.push(request.cutoffSeq)
      }
      let limit = ""
      if (request.limit !== undefined) {
        limit = " LIMIT ?"
        params.push(request.limit)
      }
      const text = `SELECT ${columns} FROM session_input WHERE session_id = ? AND promoted_seq IS NULL${where} ORDER BY +admitted_seq${limit}`
      let find = pendingStatements.get(text)
      if (find === undefined) {
        find = PreparedSql.findAll(PreparedSql.make(sql, text), Row)
        pendingStatements.set(text, find)
      }
      return find(params)
    }
    const insertStatement = PreparedSql.make(
      sql,
      `INSERT INTO session_input (${columns}) VALUES (?, ?, ?, ?, ?, ?, NULL, ?) ON CONFLICT (id) DO NOTHING RETURNING id`
    )
    const insertRow = (row: {
      readonly id: string
      readonly session_id: string
      readonly delivery: string
      readonly input: string
      readonly prompt: string
      readonly admitted_seq: number
      readonly time_created: number
    }) =>
      Effect.map(
        insertStatement.all([
          row.id,
          row.session_id,
          row.delivery,
          row.input,
          row.prompt,
          row.admitted_seq,
          row.time_created
        ]),
        (inserted) => inserted.length > 0
      )
    const claimStatement = PreparedSql.make(
      sql,
      "UPDATE session_input SET promoted_seq = ? WHERE id = ? AND promoted_seq IS NULL RETURNING id"
    )
    const claimRow = (id: string, promotedSeq: number) =>
      Effect.map(claimStatement.all([promotedSeq, id]), (claimed) => claimed.length > 0)
    const selectAnyPending = PreparedSql.make(
      sql,
      "SELECT 1 AS found FROM session_input WHERE session_id = ? AND promoted_seq IS NULL LIMIT 1"
    )
    const anyPending = (sessionID: Identifier.SessionID) =>
      Effect.map(selectAnyPending.all([sessionID]), (rows) => rows.length > 0)
    /** The stored record when it is the same admission, else a conflict. */
    const replay = (row: Row, sessionID: Identifier.SessionID, input: string, delivery: AdmittedPrompt.Delivery) =>
      row.session_id === sessionID && row.input === input && row.delivery === delivery
        ? Effect.succeed(toRecord(row))
        : Effect.fail(conflict(row.id))

    const ensureSession = (yield* KnownSessions.Service).ensure

    const admit = Traced.fn("SessionInput.admit")(
      function* (sessionID: Identifier.SessionID, request: AdmitInput) {
        const session = yield* sessions.get(sessionID)
        const delivery = request.delivery ?? "steer"
        const input = canonical(yield* encodeInput(request.prompt))
        if (request.id !== undefined) {
          const stored = yield* lookup(request.id)
          if (Option.isSome(stored)) return yield* replay(stored.value, session.id, input, delivery)
        }

        const given = request.prepare === undefined ? request.prompt : yield* request.prepare(request.prompt)
        const prompt = yield* PromptResolution.resolve(given, {
          directory: session.location.directory,
          outsideAllowed: outsideAllowed(session.agent)
        }).pipe(Effect.provideService(FileSystem.FileSystem, fs))
        const now = yield* Clock.currentTimeMillis
        const id = request.id ?? Identifier.newMessageID(now)
        const promptJson = yield* encodePrompt(prompt)

        const store = ([committed]: ReadonlyArray<EventLog.Envelope>) =>
          Effect.gen(function* () {
            if (committed === undefined) return yield* Effect.dieMessage("EventLog.append committed no event")
            // A client's id that already names a message of history (e.g. an assistant message) is
            // not free; a generated one is new.
            if (request.id !== undefined && (yield* MessageProjection.exists(id))) return yield* conflict(id)
            const inserted = yield* insertRow({
              id,
              session_id: session.id,
              delivery,
              input,
              prompt: promptJson,
              admitted_seq: committed.durable.seq,
              time_created: now
            })
            if (!inserted) return yield* new AdmissionRaced()
          })

        const committed = yield* events
          .append(
            session.id,
            [
              SessionEvents.draft("session.next.prompt.admitted", {
                timestamp: now,
                sessionID: session.id,
                messageID: id,
                prompt,
                delivery
              })
            ],
            store
          )
          .pipe(
            Effect.map(([envelope]) => envelope),
            Effect.catchTag("AdmissionRaced", () => Effect.succeed(undefined))
          )
        if (committed === undefined) {
          // Another admission of this id committed first (and this one rolled back): answer as a retry.
          const stored = yield* lookup(id)
          if (Option.isNone(stored)) return yield* Effect.dieMessage(`admission of ${id} raced, but no entry is stored`)
          return yield* replay(stored.value, session.id, input, delivery)
        }
        yield* Effect.logDebug("prompt admitted").pipe(
          Effect.annotateLogs({ messageID: id, seq: committed.durable.seq })
        )
        const record: AdmittedPrompt.SessionInputAdmitted = {
          admittedSeq: committed.durable.seq,
          id,
          sessionID: session.id,
          prompt,
          delivery,
          timeCreated: now
        }
        return record
      },
      storageDefects,
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const pending = Traced.fn("SessionInput.pending")(
      function* (sessionID: Identifier.SessionID) {
        yield* ensureSession(sessionID)
        return (yield* pendingRows({ sessionID })).map(toRecord)
      },
      storageDefects,
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const hasPending = Traced.fn("SessionInput.hasPending")(
      function* (sessionID: Identifier.SessionID) {
        yield* ensureSession(sessionID)
        return yield* anyPending(sessionID)
      },
      storageDefects,
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    /**
     * Promotes the rows `select` picks, in order, as one append; claims each inside its transaction
     * and starts over (re-selecting) when another promotion claimed one first.
     */
    const promote = <E>(
      sessionID: Identifier.SessionID,
      select: Effect.Effect<ReadonlyArray<Row>, E>
    ): Effect.Effect<number, E | SqlError.SqlError> =>
      Effect.gen(function* () {
        const rows = yield* select
        if (rows.length === 0) return 0
        const now = yield* Clock.currentTimeMillis
        const drafts = rows.map((row) =>
          SessionEvents.draft("session.next.prompted", {
            timestamp: now,
            sessionID: row.session_id,
            messageID: row.id,
            prompt: row.prompt,
            delivery: row.delivery
          })
        )
        const claim = (committed: ReadonlyArray<EventLog.Envelope>) =>
          Effect.forEach(
            committed,
            (envelope, index) =>
              Effect.flatMap(claimRow(rows[index]!.id, envelope.durable.seq), (claimed) =>
                claimed ? Effect.void : new PromotionRaced()
              ),
            { discard: true }
          )
        return yield* events.append(sessionID, drafts, claim).pipe(
          Effect.as(rows.length),
          Effect.tap((count) => Effect.logDebug("prompts promoted").pipe(Effect.annotateLogs({ count }))),
          Effect.catchTags({
            PromotionRaced: () => promote(sessionID, select),
            // Checked by the caller; sessions are never deleted.
            SessionNotFoundError: (error) => Effect.die(error)
          })
        )
      })

    const promoteSteers = Traced.fn("SessionInput.promoteSteers")(
      function* (sessionID: Identifier.SessionID, cutoffSeq?: number) {
        yield* ensureSession(sessionID)
        return yield* promote(
          sessionID,
          pendingRows({ sessionID, delivery: "steer", ...(cutoffSeq === undefined ? {} : { cutoffSeq }) })
        )
      },
      storageDefects,
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const promoteNextQueued = Traced.fn("SessionInput.promoteNextQueued")(
      function* (sessionID: Identifier.SessionID) {
        yield* ensureSession(sessionID)
        return (yield* promote(sessionID, pendingRows({ sessionID, delivery: "queue", limit: 1 }))) > 0
      },
      storageDefects,
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    return Service.of({ admit, pending, hasPending, promoteSteers, promoteNextQueued })
  })
)
