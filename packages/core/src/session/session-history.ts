export * as SessionHistory from "./session-history.js"

/**
 * SessionHistory: the reads over a session's projected messages (MessageProjection, table `message`)
 * and its durable log.
 *
 * - `messages` / `message`: the transcript a client reads, every message kept.
 * - `context`: Session History, the chronological conversation a Step gives the model, after the
 *   active compaction and InstructionCheckpoint baseline cutoffs. It is not the complete Model Context
 *   (agent prompt, baseline, tools and step-local additions are the runner's).
 * - `history`: a slice of the durable `session.next.*` log, for clients catching up.
 */

import { SqlClient } from "@effect/sql"
import { type Cursor, Errors, type Event, Quote, type SessionMessages } from "@opencode-ai/schema"
import { Context, Effect, Layer, Option } from "effect"
import * as EventLog from "../event/event-log.js"
import * as InstructionCheckpoint from "../instructions/instruction-checkpoint.js"
import { KnownSessions } from "./known-sessions.js"
import * as MessageCursor from "./message-cursor.js"
import * as MessageProjection from "./message-projection.js"
import { PageSize } from "./page-size.js"
import * as RevertedMessages from "./reverted-messages.js"

/** A first page (query fields, all optional) or a continuation (`cursor` alone). */
export interface MessagesInput {
  readonly cursor?: string | undefined
  readonly order?: MessageCursor.Order | undefined
  readonly limit?: number | undefined
}

/** One page of messages in query order, with the cursors to the neighbouring pages when they hold items. */
export interface Page {
  readonly data: ReadonlyArray<SessionMessages.SessionMessage>
  readonly cursor: { readonly previous?: Cursor.Token; readonly next?: Cursor.Token }
}

export interface HistoryInput {
  /** Only events with a greater seq; default 0 (from the start). */
  readonly after?: number | undefined
  /** At most this many events, 1..1000; default 100. */
  readonly limit?: number | undefined
}

/** A slice of the durable log: the events in seq order and whether the log continues past them. */
export interface History {
  readonly data: ReadonlyArray<Event.SessionDurableEvent>
  readonly hasMore: boolean
}

export interface ContextOptions {
  /**
   * The baseline seq of the InstructionCheckpoint the Step was prepared with (`Prepared.baselineSeq`);
   * by default the stored checkpoint's is read.
   */
  readonly baselineSeq?: number | undefined
}

export interface Interface {
  /**
   * One page of the session's messages, newest first unless `order: "asc"` (as `Sessions.list`);
   * `limit` defaults to 50 (1..200). The order is the chronology of the events that created the
   * messages, and pages are keyset-anchored on it, so messages added while walking never shift or
   * repeat items. `next` is present iff messages exist after the page's last item, `previous` iff
   * messages exist before its first one. A continuation is its cursor, optionally with a new `limit`
   * (upstream clients repeat it on every page); `order` with a cursor, an undecodable cursor, or one
   * issued for another session's messages, is an InvalidCursorError. Unknown session → SessionNotFoundError (checked first).
   */
  readonly messages: (
    sessionID: string,
    input?: MessagesInput
  ) => Effect.Effect<Page, Errors.SessionNotFoundError | Errors.InvalidCursorError | Errors.InvalidRequestError>
  /**
   * One message of the session. Unknown session → SessionNotFoundError; a message that does not
   * exist, or belongs to another session, → MessageNotFoundError (the two are indistinguishable).
   */
  readonly message: (
    sessionID: string,
    messageID: string
  ) => Effect.Effect<SessionMessages.SessionMessage, Errors.SessionNotFoundError | Errors.MessageNotFoundError>
  /**
   * Session History for the model, oldest first: the messages from the latest compaction on (the
   * compaction message, whose summary replaces what came before, and everything after it; all
   * messages when there was none), without the system messages (Instruction Updates) at or before
   * the checkpoint's baseline seq, which the baseline already contains. With no checkpoint every
   * system message is left out: the next Step renders a fresh complete baseline. Messages a committed
   * revert took out (RevertedMessages) are left out too. Durable audit history (`messages`) keeps them all.
   */
  readonly context: (
    sessionID: string,
    options?: ContextOptions
  ) => Effect.Effect<ReadonlyArray<SessionMessages.SessionMessage>, Errors.SessionNotFoundError>
  /**
   * The session's durable `session.next.*` events with seq > `after`, in seq order, at most `limit`
   * of them (`session.created` is not one of them); `hasMore` tells whether more follow. Bad `after`
   * or `limit` → InvalidRequestError. Unknown session → SessionNotFoundError.
   */
  readonly history: (
    sessionID: string,
    input?: HistoryInput
  ) => Effect.Effect<History, Errors.SessionNotFoundError | Errors.InvalidRequestError>
}

/** Reads of a session's messages and log; `yield* SessionHistory.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionHistory")<Service, Interface>() {}

interface Row {
  readonly id: string
  readonly seq: number
  readonly type: string
  readonly info: string
}

const invalidQuery = (field: string, message: string) =>
  new Errors.InvalidRequestError({ kind: "query", field, message })

export const layer: Layer.Layer<
  Service,
  never,
  SqlClient.SqlClient | InstructionCheckpoint.Service | KnownSessions.Service | EventLog.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const log = yield* EventLog.Service
    const checkpoints = yield* InstructionCheckpoint.Service

    const ensureSession = (yield* KnownSessions.Service).ensure

    /** The query a request runs and the side of the anchor it reads, if it continues a cursor. */
    const request = Effect.fn("SessionHistory.request")(function* (sessionID: string, input: MessagesInput) {
      if (input.cursor !== undefined) {
        if (input.order !== undefined) {
          return yield* new Errors.InvalidCursorError({
            message: 'A cursor continues in the order it was issued for: send it without "order"'
          })
        }
        const payload = yield* MessageCursor.decode(input.cursor).pipe(
          Effect.mapError(
            () => new Errors.InvalidCursorError({ message: "The cursor is malformed or was not issued by this server" })
          )
        )
        if (payload.query.sessionID !== sessionID) {
          return yield* new Errors.InvalidCursorError({
            message: "The cursor was issued for another session's messages"
          })
        }
        if (input.limit === undefined) return payload
        const limit = yield* PageSize.check(input.limit)
        return { ...payload, query: { ...payload.query, limit } }
      }
      const limit = yield* PageSize.check(input.limit ?? PageSize.defaultLimit)
      const query: MessageCursor.Query = { sessionID, order: input.order ?? "desc", limit }
      return { query, anchor: undefined, direction: "next" as const }
    })

    const messages = Effect.fn("SessionHistory.messages")(
      function* (sessionID: string, input: MessagesInput = {}) {
        yield* ensureSession(sessionID)
        const { query, anchor, direction } = yield* request(sessionID, input)

        // `forward` walks in query order, backward against it; "beyond" means strictly past the key.
        const ascending = (forward: boolean) => (query.order === "asc") === forward
        const beyond = (key: MessageCursor.Anchor, forward: boolean) =>
          ascending(forward)
            ? sql`(seq > ${key.seq} OR (seq = ${key.seq} AND id > ${key.id}))`
            : sql`(seq < ${key.seq} OR (seq = ${key.seq} AND id < ${key.id}))`
        const owned = sql`session_id = ${sessionID}`
        const exists = (key: MessageCursor.Anchor, forward: boolean) =>
          sql`SELECT 1 FROM message WHERE ${owned} AND ${beyond(key, forward)} LIMIT 1`.pipe(
            Effect.map((rows) => rows.length > 0)
          )

        const forward = direction === "next"
        const sort = sql.literal(ascending(forward) ? "ASC" : "DESC")
        const keyOf = (row: Row): MessageCursor.Anchor => ({ seq: row.seq, id: row.id })
        // One read transaction, so the page and the neighbour checks see the same snapshot.
        const { items, previous, next } = yield* Effect.gen(function* () {
          const rows = yield* sql<Row>`
            SELECT id, seq, type, info FROM message
            WHERE ${owned} ${anchor === undefined ? sql.literal("") : sql`AND ${beyond(anchor, forward)}`}
            ORDER BY seq ${sort}, id ${sort}
            LIMIT ${query.limit + 1}`
          const more = rows.length > query.limit
          const taken = rows.slice(0, query.limit)
          const items = forward ? taken : taken.reverse()
          // The edges of the page in query order; an empty continuation page has only its anchor.
          const head = items.length > 0 ? keyOf(items[0]!) : anchor
          const tail = items.length > 0 ? keyOf(items[items.length - 1]!) : anchor
          // The extra row answers for the side the page was read towards; the other side is asked.
          const hasPrevious = forward ? head !== undefined && (yield* exists(head, false)) : more
          const hasNext = forward ? more : tail !== undefined && (yield* exists(tail, true))
          return { items, previous: hasPrevious ? head : undefined, next: hasNext ? tail : undefined }
        }).pipe(sql.withTransaction, Effect.orDie)

        const data = yield* Effect.forEach(items, (row) => MessageProjection.decodeInfo(row.info))
        return {
          data,
          cursor: {
            ...(previous === undefined
              ? {}
              : { previous: MessageCursor.encode({ query, anchor: previous, direction: "previous" }) }),
            ...(next === undefined ? {} : { next: MessageCursor.encode({ query, anchor: next, direction: "next" }) })
          }
        } satisfies Page
      },
      (effect, sessionID) => Effect.annotateLogs(effect, { sessionID })
    )

    const message = Effect.fn("SessionHistory.message")(
      function* (sessionID: string, messageID: string) {
        yield* ensureSession(sessionID)
        const [row] = yield* sql<{ readonly info: string }>`
          SELECT info FROM message WHERE id = ${messageID} AND session_id = ${sessionID}`.pipe(Effect.orDie)
        if (row === undefined) {
          return yield* new Errors.MessageNotFoundError({
            sessionID,
            messageID,
            message: `Message not found: ${Quote.clip(messageID)}`
          })
        }
        return yield* MessageProjection.decodeInfo(row.info)
      },
      (effect, sessionID) => Effect.annotateLogs(effect, { sessionID })
    )

    const context = Effect.fn("SessionHistory.context")(
      function* (sessionID: string, options: ContextOptions = {}) {
        yield* ensureSession(sessionID)
        const baselineSeq =
          options.baselineSeq ??
          Option.match(yield* checkpoints.get(sessionID), {
            onNone: () => Number.POSITIVE_INFINITY,
            onSome: (checkpoint) => checkpoint.baselineSeq
          })
        // Everything from the latest compaction on (a reverted one does not count), one read.
        const rows = yield* sql<Row>`
          SELECT id, seq, type, info FROM message
          WHERE session_id = ${sessionID}
            AND seq >= coalesce((
              SELECT max(c.seq) FROM message c
              WHERE c.session_id = ${sessionID} AND c.type = 'compaction' AND ${RevertedMessages.notReverted(sql, sessionID, "c")}
            ), 0)
            AND (type <> 'system' OR seq > ${Number.isFinite(baselineSeq) ? baselineSeq : Number.MAX_SAFE_INTEGER})
            AND ${RevertedMessages.notReverted(sql, sessionID)}
          ORDER BY seq`.pipe(Effect.orDie)
        return yield* Effect.forEach(rows, (row) => MessageProjection.decodeInfo(row.info))
      },
      (effect, sessionID) => Effect.annotateLogs(effect, { sessionID })
    )

    const history = Effect.fn("SessionHistory.history")(
      function* (sessionID: string, input: HistoryInput = {}) {
        yield* ensureSession(sessionID)
        const after = input.after ?? 0
        const limit = input.limit ?? 100
        if (!Number.isInteger(after) || after < 0)
          return yield* invalidQuery("after", "after must be a non-negative integer (a seq)")
        if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
          return yield* invalidQuery("limit", "limit must be an integer from 1 to 1000")
        }
        // The origin (`session.created`, seq 0) is never after a seq ≥ 0: every row read is an event of the page.
        const rows = (yield* log.read(sessionID, { after, limit: limit + 1 })).filter(
          (envelope) => envelope.type !== "session.created"
        )
        const data = yield* Effect.forEach(rows.slice(0, limit), (envelope) =>
          MessageProjection.decodeEvent(envelope).pipe(Effect.orDie)
        )
        return { data, hasMore: rows.length > limit } satisfies History
      },
      (effect, sessionID) => Effect.annotateLogs(effect, { sessionID })
    )

    return Service.of({ messages, message, context, history })
  })
)
