export * as InstructionEntries from "./instruction-entries.js"

/**
 * The InstructionEntry store (table `instruction_entry`): API-managed, durable, per-Session JSON
 * values under slash-free keys. Each stored entry is the Instruction Source `api/<key>` (see
 * {@link InstructionEntry}); a put or remove changes nothing the model sees until the next Safe Step
 * Boundary reconciles it, and never wakes the session.
 */

import { SqlClient } from "@effect/sql"
import { Errors, type Identifier, Quote } from "@opencode-ai/schema"
import { Clock, Context, Effect, Either, Layer, Schema } from "effect"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { KnownSessions } from "../session/known-sessions.js"
import { PreparedSql } from "../storage/prepared-sql.js"
import { InstructionEntry } from "./instruction-entry.js"
import { Instructions } from "./instructions.js"

export interface Interface {
  /** The session's entries in key order (the order their sources are declared in). */
  readonly list: (
    sessionID: Identifier.SessionID
  ) => Effect.Effect<ReadonlyArray<InstructionEntry.Entry>, Errors.SessionNotFoundError>
  /**
   * Creates or replaces the entry `key` with `value` and resolves with the stored entry. Idempotent:
   * putting the same value again changes nothing the model sees. `key` must match
   * `^[a-z0-9][a-z0-9._-]*$` and `value` must be plain JSON (checked at run time too: finite numbers,
   * no `undefined`, no class instances): otherwise InvalidRequestError (kind "validation", field "key" or
   * "value"). Both are checked before the session exists check.
   */
  readonly put: (
    sessionID: Identifier.SessionID,
    key: string,
    value: Instructions.Json
  ) => Effect.Effect<InstructionEntry.Entry, Errors.SessionNotFoundError | Errors.InvalidRequestError>
  /** Deletes the entry `key`; idempotent (removing a missing entry succeeds). Same key validation as put. */
  readonly remove: (
    sessionID: Identifier.SessionID,
    key: string
  ) => Effect.Effect<void, Errors.SessionNotFoundError | Errors.InvalidRequestError>
}

/** The InstructionEntry store; `yield* InstructionEntries.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/InstructionEntries")<Service, Interface>() {}

const decodeName = Schema.decodeUnknownEither(InstructionEntry.Name)
const EntryRow = Schema.Struct({ key: InstructionEntry.Name, value: Schema.parseJson(Instructions.Json) })
const invalid = (field: "key" | "value", message: string) =>
  new Errors.InvalidRequestError({ kind: "validation", field, message })

const validateKey = (key: string) =>
  Either.match(decodeName(key), {
    onLeft: () =>
      Effect.fail(invalid("key", `Invalid instruction entry key ${Quote.input(key)}: expected ^[a-z0-9][a-z0-9._-]*$`)),
    onRight: Effect.succeed
  })

/** Plain JSON only: a Date or class instance would otherwise pass a structural check as an object. */
const isPlainJson = (u: unknown): u is Instructions.Json => {
  if (u === null || typeof u === "boolean" || typeof u === "string") return true
  if (typeof u === "number") return Number.isFinite(u)
  if (Array.isArray(u)) return u.every(isPlainJson)
  if (typeof u !== "object") return false
  const prototype = Object.getPrototypeOf(u)
  return (prototype === Object.prototype || prototype === null) && Object.values(u).every(isPlainJson)
}

const validateValue = (value: unknown) =>
  isPlainJson(value)
    ? Effect.succeed(value)
    : Effect.fail(
        invalid(
          "value",
          value === undefined
            ? "An instruction entry value is required"
            : "An instruction entry value must be plain JSON: null, a boolean, a finite number, a string, or an array or object of those"
        )
      )

export const layer: Layer.Layer<Service, never, SqlClient.SqlClient | KnownSessions.Service> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const ensureSession = (yield* KnownSessions.Service).ensure
    const findEntries = PreparedSql.findAll(
      PreparedSql.make(sql, "SELECT key, value FROM instruction_entry WHERE session_id = ? ORDER BY key"),
      EntryRow
    )

    const list = Traced.fn("InstructionEntries.list")(
      function* (sessionID: Identifier.SessionID) {
        yield* ensureSession(sessionID)
        const rows = yield* findEntries([sessionID]).pipe(Effect.orDie)
        return rows.map((row): InstructionEntry.Entry => ({ name: row.key, value: row.value }))
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const put = Traced.fn("InstructionEntries.put")(
      function* (sessionID: Identifier.SessionID, key: string, value: Instructions.Json) {
        const name = yield* validateKey(key)
        const json = yield* validateValue(value)
        yield* ensureSession(sessionID)
        const now = yield* Clock.currentTimeMillis
        yield* sql`
          INSERT INTO instruction_entry (session_id, key, value, time_updated)
          VALUES (${sessionID}, ${name}, ${JSON.stringify(json)}, ${now})
          ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, time_updated = excluded.time_updated`.pipe(
          Effect.orDie
        )
        return { name, value: json } satisfies InstructionEntry.Entry
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const remove = Traced.fn("InstructionEntries.remove")(
      function* (sessionID: Identifier.SessionID, key: string) {
        const name = yield* validateKey(key)
        yield* ensureSession(sessionID)
        yield* sql`DELETE FROM instruction_entry WHERE session_id = ${sessionID} AND key = ${name}`.pipe(Effect.orDie)
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    return Service.of({ list, put, remove })
  })
)
