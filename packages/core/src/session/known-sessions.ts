export * as KnownSessions from "./known-sessions.js"

/**
 * KnownSessions: whether a session exists, remembered once seen. An ID found once exists until the
 * session is deleted (SessionDelete forgets it here in the deletion's own transaction), so it need
 * not be read again; every store that takes a session ID checks it here instead of each reading the
 * session table on every call (a Step used to read it half a dozen times). Another process that
 * deletes a session cannot reach this memory: there, the rows that reference the session refuse
 * writes for it (foreign keys).
 *
 * One per database (Core builds it next to the connection), so two instances in one process never
 * share what they know.
 */

import { SqlClient } from "@effect/sql"
import { Errors, type Identifier } from "@opencode-ai/schema"
import { Context, Effect, Layer } from "effect"
import * as Sessions from "./sessions.js"

export interface Interface {
  /**
   * Succeeds when the session exists, fails with SessionNotFoundError otherwise. The first check of
   * an ID reads its row through the SqlClient in context, so inside a transaction it reads on the
   * transaction's connection; later checks of a found ID read nothing. Unknown IDs are never
   * remembered: a session created later is found then.
   */
  readonly ensure: (sessionID: Identifier.SessionID) => Effect.Effect<void, Errors.SessionNotFoundError>
  /** Drops the IDs (their sessions were deleted): their next check reads the session table again. */
  readonly forget: (sessionIDs: ReadonlyArray<Identifier.SessionID>) => Effect.Effect<void>
}

/** `yield* KnownSessions.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/KnownSessions")<Service, Interface>() {}

/** How many IDs are remembered; past it the oldest are forgotten (and read again if checked). */
export const capacity = 10_000

export const layer: Layer.Layer<Service, never, SqlClient.SqlClient> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Insertion-ordered, so the first key is the oldest.
    const known = new Set<string>()

    const remember = (sessionID: Identifier.SessionID) => {
      known.add(sessionID)
      if (known.size > capacity) known.delete(known.values().next().value!)
    }

    const ensure = (sessionID: Identifier.SessionID): Effect.Effect<void, Errors.SessionNotFoundError> =>
      Effect.suspend(() =>
        known.has(sessionID)
          ? Effect.void
          : Effect.provideService(Sessions.exists(sessionID), SqlClient.SqlClient, sql).pipe(
              Effect.flatMap((found) =>
                found ? Effect.sync(() => remember(sessionID)) : Errors.SessionNotFoundError.of(sessionID)
              )
            )
      )

    const forget = (sessionIDs: ReadonlyArray<Identifier.SessionID>) =>
      Effect.sync(() => {
        for (const sessionID of sessionIDs) known.delete(sessionID)
      })

    return Service.of({ ensure, forget })
  })
)
