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
import { type Cursor, Errors, type Event, type Identifier, Quote, type SessionMessages } from "@opencode-ai/schema"
import { Context, Effect, Layer, Option } from "effect"
import * as EventLog from "../event/event-log.js"
import * as InstructionCheckpoint from "../instructions/instruction-checkpoint.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { KnownSessions } from "./known-sessions.js"
import * as MessageCursor from "./message-cursor.js"
import * as MessageProjection from "./message-projection.js"
import { PageSize } from "./page-size.js"

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
    sessionID: Identifier.SessionID,
    input?: MessagesInput
  ) => Effect.Effect<Page, Errors.SessionNotFoundError | Errors.InvalidCursorError | Errors.InvalidRequestError>
  /**
   * The same page as {@link messages}, as the JSON text of its wire form (`{"data":[...],"cursor":{...}}`,
   * the contract's SessionMessagesResponse): the stored messages are written as they are, with no
   * decode and re-encode per message. Same failures.
   */
  readonly messagesJson: (
    sessionID: Identifier.SessionID,
    input?: MessagesInput
  ) => Effect.Effect<string, Errors.SessionNotFoundError | Errors.InvalidCursorError | Errors.InvalidRequestError>
  /**
   * One message of the session. Unknown session → SessionNotFoundError; a message that does not
   * exist, or belongs to another session, → MessageNotFoundError (the two are indistinguishable).
   */
  readonly message: (
    sessionID: Identifier.SessionID,
    messageID: Identifier.MessageID
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
    sessionID: Identifier.SessionID,
    options?: ContextOptions
  ) => Effect.Effect<ReadonlyArray<SessionMessages.SessionMessage>, Errors.SessionNotFoundError>
  /**
   * The session's durable `session.next.*` events with seq > `after`, in seq order, at most `limit`
   * of them (`session.created` is not one of them); `hasMore` tells whether more follow. Bad `after`
   * or `limit` → InvalidRequestError. Unknown session → SessionNotFoundError.
   */
  readonly history: (
    sessionID: Identifier.SessionID,
    input?: HistoryInput
  ) => Effect.Effect<History, Errors.SessionNotFoundError | Errors.InvalidRequestError>
}

/** Reads of a session's messages and log; `yield* SessionHistory.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionHistory")<Service, Interface>() {}

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
    const request = Effect.fnUntraced(function* (sessionID: Identifier.SessionID, input: MessagesInput) {
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

    const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
      Effect.provideService(effect, SqlClient.SqlClient, sql)

    /** One page as stored (MessageProjection.page), with its wire cursors. */
    const stored = (sessionID: Identifier.SessionID, input: MessagesInput) =>
      Effect.gen(function* () {
        yield* ensureSession(sessionID)
        const { query, anchor, direction } = yield* request(sessionID, input)
        const page = yield* MessageProjection.pageOn(sql, {
          sessionID: sessionID,
          order: query.order,
          limit: query.limit,
          anchor,
          direction
        })
        const cursor: Page["cursor"] = {
          ...(page.previous === undefined
            ? {}
            : { previous: MessageCursor.encode({ query, anchor: page.previous, direction: "previous" }) }),
          ...(page.next === undefined
            ? {}
            : { next: MessageCursor.encode({ query, anchor: page.next, direction: "next" }) })
        }
        return { infos: page.infos, cursor }
      })

    const messages = Traced.fn("SessionHistory.messages")(
      function* (sessionID: Identifier.SessionID, input: MessagesInput = {}) {
        const page = yield* stored(sessionID, input)
        const data = yield* Effect.forEach(page.infos, MessageProjection.decodeInfo)
        return { data, cursor: page.cursor } satisfies Page
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const messagesJson = Traced.fn("SessionHistory.messagesJson")(
      function* (sessionID: Identifier.SessionID, input: MessagesInput = {}) {
        const page = yield* stored(sessionID, input)
        return `{"data":[${page.infos.join(",")}],"cursor":${JSON.stringify(page.cursor)}}`
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const message = Traced.fn("SessionHistory.message")(
      function* (sessionID: Identifier.SessionID, messageID: Identifier.MessageID) {
        yield* ensureSession(sessionID)
        const found = yield* withSql(MessageProjection.find(sessionID, messageID))
        if (Option.isNone(found)) {
          return yield* new Errors.MessageNotFoundError({
            sessionID,
            messageID,
            message: `Message not found: ${Quote.clip(messageID)}`
          })
        }
        return found.value.message
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const context = Traced.fn("SessionHistory.context")(
      function* (sessionID: Identifier.SessionID, options: ContextOptions = {}) {
        yield* ensureSession(sessionID)
        const baselineSeq =
          options.baselineSeq ??
          Option.match(yield* checkpoints.get(sessionID), {
            onNone: () => Number.POSITIVE_INFINITY,
            onSome: (checkpoint) => checkpoint.baselineSeq
          })
        return yield* withSql(
          MessageProjection.context(sessionID, Number.isFinite(baselineSeq) ? baselineSeq : Number.MAX_SAFE_INTEGER)
        )
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const history = Traced.fn("SessionHistory.history")(
      function* (sessionID: Identifier.SessionID, input: HistoryInput = {}) {
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
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    return Service.of({ messages, messagesJson, message, context, history })
  })
)
