export * as KeysetPage from "./keyset-page.js"

/**
 * KeysetPage: reading one page of stored records by keyset, for the owners of paged tables (sessions,
 * messages). The owner writes the SQL (its table, filters and key order); this module runs it and
 * works out the neighbouring pages' anchors the same way for every table:
 *
 * - a first page (no anchor) is one query for `limit + 1` rows: the extra row says a next page exists;
 * - a continuation reads `limit + 1` rows beyond its anchor together with a `behind` column (whether
 *   any row lies on the anchor's side, the anchor's own row included), in one statement; only an
 *   empty continuation is read again, in one read transaction with the question of what lies
 *   strictly past its anchor the other way.
 *
 * A `previous` page is read against the query order and handed back in query order.
 */

import type { SqlClient, SqlError, Statement } from "@effect/sql"
import { Effect, type ParseResult, Schema } from "effect"

/** A page as stored: the records' JSON in query order and the anchors of the neighbouring pages. */
export interface Stored<Key> {
  readonly infos: ReadonlyArray<string>
  readonly previous: Key | undefined
  readonly next: Key | undefined
}

/** One page to read: the owner's statements for it. */
export interface Request<Key> {
  readonly limit: number
  /** `next` reads in query order, `previous` against it. */
  readonly direction: "next" | "previous"
  readonly anchor: Key | undefined
  /** The first page (used when there is no anchor): at most `limit + 1` rows in query order. */
  readonly first: Statement.Statement<unknown>
  /**
   * The rows strictly past `anchor` in the reading direction, at most `limit + 1`, nearest first, each
   * with a `behind` column: 1 (or true) when some row lies on the anchor's side of it.
   */
  readonly continuation: (anchor: Key) => Statement.Statement<unknown>
  /** Whether any row lies strictly past `anchor` against the reading direction. */
  readonly beyond: (anchor: Key) => Statement.Statement<unknown>
}

const Behind = Schema.Struct({ behind: Schema.Union(Schema.Number, Schema.Boolean) })
const decodeBehind = Schema.decodeUnknown(Behind)

/** A row's record JSON: the `info` column, a string. */
const Info = Schema.Struct({ info: Schema.String })
const decodeInfos = Schema.decodeUnknown(Schema.Array(Info))

/**
 * The `info` column of each of `rows`, in order. The check is a plain type test per row (a page is read
 * on every list request, and decoding each row through a Schema cost more than the query's SQL); when
 * a row fails it, the rows are decoded by {@link Info}, for its ParseError.
 */
const infosOf = (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<string>, ParseResult.ParseError> => {
  const infos: Array<string> = []
  for (const row of rows) {
    const info = typeof row === "object" && row !== null ? (row as { readonly info?: unknown }).info : undefined
    if (typeof info !== "string") return Effect.map(decodeInfos(rows), (decoded) => decoded.map((row) => row.info))
    infos.push(info)
  }
  return Effect.succeed(infos)
}

/**
 * A page reader for rows whose keyset columns decode by `KeyRow`: `key` is the anchor those columns
 * stand for. Every row the page returns must carry its record JSON as a string `info` column (checked
 * for each); the keyset columns are decoded only for the rows that bound the page (its first and last),
 * the only ones whose key becomes an anchor. A row that does not decode is a ParseError. The decoders
 * are built once, here; the statements are built per page by the owner.
 */
export const reader = <KeyRow, I, Key>(KeyRow: Schema.Schema<KeyRow, I>, key: (row: KeyRow) => Key) => {
  const decodeKey = Schema.decodeUnknown(KeyRow)
  const keyOf = (row: unknown) => Effect.map(decodeKey(row), key)
  return (
    sql: SqlClient.SqlClient,
    request: Request<Key>
  ): Effect.Effect<Stored<Key>, SqlError.SqlError | ParseResult.ParseError> =>
    Effect.gen(function* () {
      const { anchor, limit } = request
      if (anchor === undefined) {
        const rows = yield* request.first
        const items = rows.slice(0, limit)
        const last = items[items.length - 1]
        return {
          infos: yield* infosOf(items),
          previous: undefined,
          next: rows.length > limit && last !== undefined ? yield* keyOf(last) : undefined
        }
      }
      const forward = request.direction === "next"
      /** The page of `rows` (as the continuation read them), `far` telling whether rows lie behind it. */
      const pageOf = (rows: ReadonlyArray<unknown>, far: boolean) =>
        Effect.gen(function* () {
          const more = rows.length > limit
          const taken = rows.slice(0, limit)
          const items = forward ? taken : taken.reverse()
          const first = items[0]
          const last = items[items.length - 1]
          const head = first === undefined ? anchor : yield* keyOf(first)
          const tail = last === undefined ? anchor : last === first ? head : yield* keyOf(last)
          return {
            infos: yield* infosOf(items),
            previous: (forward ? far : more) ? head : undefined,
            next: (forward ? more : far) ? tail : undefined
          }
        })
      // The extra row answers for the side the page was read towards, and the anchor's side is asked
      // in the same statement: one statement, needing no transaction of its own.
      const rows = yield* request.continuation(anchor)
      if (rows[0] !== undefined) return yield* pageOf(rows, Number((yield* decodeBehind(rows[0])).behind) === 1)
      // An empty page asks what lies strictly past its anchor instead: it is read again with that
      // question, in one read transaction.
      return yield* Effect.gen(function* () {
        const again = yield* request.continuation(anchor)
        const far =
          again[0] === undefined
            ? (yield* request.beyond(anchor)).length > 0
            : Number((yield* decodeBehind(again[0])).behind) === 1
        return yield* pageOf(again, far)
      }).pipe(sql.withTransaction)
    })
}
