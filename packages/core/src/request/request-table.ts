export * as RequestTable from "./request-table.js"

/**
 * RequestTable: what the owners of the user-request tables (`permission_request`, `question_request`)
 * read the same way. Both tables keep one row per request with `id`, `session_id`, `origin` (`runner`
 * when a tool call waits on it), `info` (the request's JSON), `status` and `time_created`; each owner
 * names its own table and passes it here, so no other module names it.
 *
 * Only the reads and the recovery loop are shared: asking, answering and their events differ per
 * request kind and stay with each owner.
 */

import { SqlClient, SqlSchema } from "@effect/sql"
import { Identifier } from "@opencode-ai/schema"
import { Effect, Schema } from "effect"
import * as Sessions from "../session/sessions.js"

const SessionRow = Schema.Struct({ session_id: Identifier.SessionID })
const Location = Schema.Struct({ directory: Schema.String, workspaceID: Schema.optional(Schema.String) })

/**
 * The shared reads of one request table, rows decoded with `Id` (the request id) and `Info` (the
 * stored request JSON). Each runs inside the caller's transaction when there is one; errors are the
 * caller's to turn into defects.
 */
export const reads = <Id, Info>(
  sql: SqlClient.SqlClient,
  table: "permission_request" | "question_request",
  schemas: { readonly Id: Schema.Schema<Id, string>; readonly Info: Schema.Schema<Info, string> }
) => {
  const name = sql(table)
  return {
    /** The pending requests of the sessions in a Location, oldest first. */
    pendingIn: SqlSchema.findAll({
      Request: Location,
      Result: Schema.Struct({ info: schemas.Info }),
      execute: (location) => sql`
        SELECT info FROM ${name}
        WHERE status = 'pending' AND ${Sessions.inLocation(sql, sql`${name}.session_id`, location)}
        ORDER BY time_created, id`
    }),
    /** The session's pending requests that a tool call was waiting on. */
    stranded: SqlSchema.findAll({
      Request: Identifier.SessionID,
      Result: Schema.Struct({ id: schemas.Id }),
      execute: (sessionID) => sql`
        SELECT id FROM ${name} WHERE status = 'pending' AND session_id = ${sessionID} AND origin = 'runner'`
    }),
    /** The sessions with pending requests a tool call was waiting on. */
    strandedSessions: SqlSchema.findAll({
      Request: Schema.Void,
      Result: SessionRow,
      execute: () => sql`
        SELECT DISTINCT session_id FROM ${name} WHERE status = 'pending' AND origin = 'runner'
        ORDER BY session_id`
    })
  }
}

/**
 * The ids of every request (any status) of the given sessions in `table`, decoded with `Id`: what
 * Session Delete removes with them (each request keeps a log of its own). Runs inside the caller's
 * transaction when there is one; a storage failure is a defect.
 */
export const idsOfSessions =
  <Id>(table: "permission_request" | "question_request", Id: Schema.Schema<Id, string>) =>
  (sessionIDs: ReadonlyArray<Identifier.SessionID>): Effect.Effect<ReadonlyArray<Id>, never, SqlClient.SqlClient> =>
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      SqlSchema.findAll({
        Request: Schema.Array(Identifier.SessionID),
        Result: Schema.Struct({ id: Id }),
        execute: (ids) => sql`SELECT id FROM ${sql(table)} WHERE session_id IN ${sql.in(ids)} ORDER BY id`
      })(sessionIDs)
    ).pipe(
      Effect.map((rows) => rows.map((row) => row.id)),
      Effect.orDie
    )

/**
 * Settles, with `settle`, each stranded request that no call of this process waits on (`waiting`),
 * one at a time, ignoring those another settlement won; resolves with how many it tried.
 */
export const settleOrphaned = <Id, E>(
  stranded: ReadonlyArray<{ readonly id: Id }>,
  waiting: ReadonlyMap<Id, unknown>,
  settle: (id: Id) => Effect.Effect<void, E>
): Effect.Effect<number> => {
  const orphaned = stranded.filter((row) => !waiting.has(row.id))
  return Effect.as(
    Effect.forEach(orphaned, (row) => Effect.ignore(settle(row.id)), { discard: true }),
    orphaned.length
  )
}
