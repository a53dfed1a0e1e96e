export * as RevertedMessages from "./reverted-messages.js"

/**
 * Reverted Messages: the ranges of a session's messages that a committed revert took out of its active
 * history (table `session_revert`, owned here). A range is every message with a seq from the message
 * the revert went back to up to the session's last seq when the revert was committed. The durable log
 * and the transcript (`SessionHistory.messages`) keep those messages; Session History for the model
 * (`SessionHistory.context`) leaves them out.
 */

import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"

/**
 * Records, inside the caller's SQL transaction (the projection of `session.next.revert.committed`),
 * that the messages with a seq in `fromSeq..toSeq` are reverted.
 */
export const record = Effect.fn("RevertedMessages.record")(function* (input: {
  readonly sessionID: string
  readonly fromSeq: number
  readonly toSeq: number
  readonly messageID: string
}) {
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis
  yield* sql`INSERT INTO session_revert ${sql.insert({
    session_id: input.sessionID,
    from_seq: input.fromSeq,
    to_seq: input.toSeq,
    message_id: input.messageID,
    time_created: now
  })}`.pipe(Effect.orDie)
})

/**
 * The SQL condition "the `message` row's `seq` is in no reverted range of the session", for a query
 * over table `message` of that one session; `table` names the `message` row when the query aliases it.
 */
export const notReverted = (sql: SqlClient.SqlClient, sessionID: string, table = "message") =>
  sql`NOT EXISTS (SELECT 1 FROM session_revert r WHERE r.session_id = ${sessionID} AND ${sql.literal(table)}.seq BETWEEN r.from_seq AND r.to_seq)`

/** Whether the message with `seq` in the session is in a reverted range. */
export const isReverted = Effect.fn("RevertedMessages.isReverted")(function* (sessionID: string, seq: number) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    SELECT 1 FROM session_revert WHERE session_id = ${sessionID} AND ${seq} BETWEEN from_seq AND to_seq LIMIT 1`.pipe(
    Effect.orDie
  )
  return rows.length > 0
})
