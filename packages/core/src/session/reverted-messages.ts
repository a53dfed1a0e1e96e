export * as RevertedMessages from "./reverted-messages.js"

/**
 * Reverted Messages: the ranges of a session's messages that a committed revert took out of its active
 * history (table `session_revert`, owned here: every query over it is in this module). A range is every
 * message with a seq from the message the revert went back to up to the session's last seq when the
 * revert was committed. The durable log and the transcript (`SessionHistory.messages`) keep those
 * messages; Session History for the model (`SessionHistory.context`) leaves them out.
 *
 * The operations run on the SqlClient in context (inside a caller's transaction, on its connection);
 * an SQL error is a defect.
 */

import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Identifier } from "@opencode-ai/schema"
import { Clock, Effect, Option, Schema } from "effect"
import { Traced } from "../observability/traced.js"

/** One committed revert's range. */
export const Range = Schema.Struct({
  sessionID: Identifier.SessionID,
  fromSeq: Schema.Number,
  toSeq: Schema.Number,
  messageID: Identifier.MessageID
})
export interface Range extends Schema.Schema.Type<typeof Range> {}

/**
 * Records, inside the caller's SQL transaction (the projection of `session.next.revert.committed`),
 * that the messages with a seq in `fromSeq..toSeq` are reverted.
 */
export const record = (range: Range): Effect.Effect<void, never, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const now = yield* Clock.currentTimeMillis
    yield* SqlSchema.void({
      Request: Range,
      execute: (input) =>
        sql`INSERT INTO session_revert ${sql.insert({
          session_id: input.sessionID,
          from_seq: input.fromSeq,
          to_seq: input.toSeq,
          message_id: input.messageID,
          time_created: now
        })}`
    })(range)
  }).pipe(Effect.orDie, Traced.withSpan("RevertedMessages.record"))

/**
 * The SQL condition "the `message` row's `seq` is in no reverted range of the session", for a query
 * over table `message` of that one session; `table` names the `message` row when the query aliases it.
 * A session without reverts (most) answers it once per statement, not once per row: the uncorrelated
 * first test is evaluated once, and the per-row look-up only when it fails.
 */
export const notReverted = (
  sql: SqlClient.SqlClient,
  sessionID: Identifier.SessionID,
  table = "message"
): Statement.Fragment =>
  sql`(NOT EXISTS (SELECT 1 FROM session_revert WHERE session_id = ${sessionID})
    OR NOT EXISTS (SELECT 1 FROM session_revert r WHERE r.session_id = ${sessionID} AND ${sql.literal(table)}.seq BETWEEN r.from_seq AND r.to_seq))`

/** Whether the message with `seq` in the session is in a reverted range. */
export const isReverted = (
  sessionID: Identifier.SessionID,
  seq: number
): Effect.Effect<boolean, never, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    SqlSchema.findOne({
      Request: Schema.Struct({ sessionID: Identifier.SessionID, seq: Schema.Number }),
      Result: Schema.Struct({ found: Schema.Number }),
      execute: (request) => sql`
        SELECT 1 AS found FROM session_revert
        WHERE session_id = ${request.sessionID} AND ${request.seq} BETWEEN from_seq AND to_seq LIMIT 1`
    })({ sessionID, seq })
  ).pipe(Effect.map(Option.isSome), Effect.orDie, Traced.withSpan("RevertedMessages.isReverted"))

/**
 * How many reverted ranges the session has, as an SQL scalar subquery for a caller's statement that
 * must read it atomically with its own rows. Ranges are only ever added, so the same count means the
 * same ranges.
 */
export const countFragment = (sql: SqlClient.SqlClient, sessionID: Identifier.SessionID): Statement.Fragment =>
  sql`(SELECT count(*) FROM session_revert WHERE session_id = ${sessionID})`

/** The session's reverted seq ranges (`fromSeq..toSeq`, both included), oldest revert first. */
export const seqRanges = (
  sessionID: Identifier.SessionID
): Effect.Effect<ReadonlyArray<{ readonly fromSeq: number; readonly toSeq: number }>, never, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    SqlSchema.findAll({
      Request: Identifier.SessionID,
      Result: Schema.Struct({ fromSeq: Schema.Number, toSeq: Schema.Number }),
      execute: (id) =>
        sql`SELECT from_seq AS "fromSeq", to_seq AS "toSeq" FROM session_revert WHERE session_id = ${id} ORDER BY to_seq`
    })(sessionID)
  ).pipe(Effect.orDie)
