export * as KeysetPage from "./keyset-page.js"

/**
 * KeysetPage: reading one page of stored records by keyset, for the owners of paged tables (sessions,
 * messages). The owner writes the SQL (its table, filters and key order); this module runs it and
 * works out the neighbouring pages' anchors the same way for every table:
 *
 * - a first page (no anchor) is one query for `limit + 1` rows: the extra row says a next page exists;
 * - a continuation reads `limit + 1` rows beyond its anchor together with a `behind` field (whether
 *   any row lies on the anchor's side, the anchor's own row included), in one statement; only an
 *   empty continuation is read again, in one read transaction with the question of what lies
 *   strictly past its anchor the other way.
 *
 * Every row comes back as one text (see {@link entry}): the key fields, then the record JSON.
 *
 * A `previous` page is read against the query order and handed back in query order.
 */

import type { SqlClient, SqlError, Statement } from "@effect/sql"
import { Effect, ParseResult, Schema } from "effect"
import { PreparedSql } from "./prepared-sql.js"

/** A page as stored: the records' JSON in query order and the anchors of the neighbouring pages. */
export interface Stored<Key> {
  readonly infos: ReadonlyArray<string>
  readonly previous: Key | undefined
  readonly next: Key | undefined
}

/**
 * One page to read: the owner's statements for it. Each selects a single column per row, its
 * {@link entry}: the key columns, then the record JSON (`info`), as one text.
 */
export interface Request<Key> {
  readonly limit: number
  /** `next` reads in query order, `previous` against it. */
  readonly direction: "next" | "previous"
  readonly anchor: Key | undefined
  /** The first page (used when there is no anchor): at most `limit + 1` entries in query order. */
  readonly first: Statement.Statement<unknown>
  /**
   * The entries strictly past `anchor` in the reading direction, at most `limit + 1`, nearest first,
   * each preceded by whether some row lies on the anchor's side of it (`1` or `0`, then a space).
   */
  readonly continuation: (anchor: Key) => Statement.Statement<unknown>
  /** Whether any row lies strictly past `anchor` against the reading direction (any row at all). */
  readonly beyond: (anchor: Key) => Statement.Statement<unknown>
}

/**
 * The SQL expression a page statement selects for each row: the `keyColumns`' values and the row's
 * `info`, joined by single spaces (a key column's text must hold no space: numbers and prefixed ids).
 * One text column per row is read without a row object (PreparedSql.firstColumn), and only the rows
 * that bound the page have their key split out and decoded.
 */
export const entry = (keyColumns: ReadonlyArray<string>): string => [...keyColumns, "info"].join(" || ' ' || ")

const malformed = (row: unknown) =>
  new ParseResult.ParseError({
    issue: new ParseResult.Type(Schema.String.ast, row, "a page row: its key fields, then the record JSON")
  })

/** Where the record JSON of `row` starts: past its first `fields` space-separated fields (-1 if it has fewer). */
const infoStart = (row: string, fields: number): number => {
  let at = 0
  for (let field = 0; field < fields; field++) {
    const space = row.indexOf(" ", at)
    if (space === -1) return -1
    at = space + 1
  }
  return at
}

/**
 * A page reader over rows of {@link entry}`(keyColumns)`: `KeyRow` decodes the key columns' texts
 * (by column name) and `key` makes the anchor they stand for. The keys are decoded only for the rows
 * that bound the page (its first and last), the only ones whose key becomes an anchor. A row of
 * another shape is a ParseError. The decoders are built once, here; the statements are built per
 * page by the owner.
 */
export const reader = <KeyRow, I, Key>(
  keyColumns: ReadonlyArray<string>,
  KeyRow: Schema.Schema<KeyRow, I>,
  key: (row: KeyRow) => Key
) => {
  const decodeKey = Schema.decodeUnknown(KeyRow)
  /** The records' JSON of `rows`, each past its `skip` leading fields. */
  const infosOf = (
    rows: ReadonlyArray<unknown>,
    skip: number
  ): Effect.Effect<Array<string>, ParseResult.ParseError> => {
    const infos: Array<string> = []
    for (const row of rows) {
      const start = typeof row === "string" ? infoStart(row, skip) : -1
      if (start === -1) return Effect.fail(malformed(row))
      infos.push((row as string).slice(start))
    }
    return Effect.succeed(infos)
  }
  /** The anchor of `row`, whose key fields follow its `skip` leading ones. */
  const keyOf = (row: unknown, skip: number): Effect.Effect<Key, ParseResult.ParseError> => {
    const fields = (row as string).split(" ", skip + keyColumns.length).slice(skip)
    const encoded: Record<string, string | undefined> = {}
    keyColumns.forEach((column, index) => {
      encoded[column] = fields[index]
    })
    return Effect.map(decodeKey(encoded), key)
  }
  return (
    sql: SqlClient.SqlClient,
    request: Request<Key>
  ): Effect.Effect<Stored<Key>, SqlError.SqlError | ParseResult.ParseError> =>
    Effect.gen(function* () {
      const { anchor, limit } = request
      const read = (statement: Statement.Statement<unknown>) => PreparedSql.firstColumn(sql, statement)
      if (anchor === undefined) {
        const rows = yield* read(request.first)
        const items = rows.slice(0, limit)
        const last = items[items.length - 1]
        return {
          infos: yield* infosOf(items, keyColumns.length),
          previous: undefined,
          next: rows.length > limit && last !== undefined ? yield* keyOf(last, 0) : undefined
        }
      }
      const forward = request.direction === "next"
      // Continuation rows lead with their `behind` field.
      const skip = keyColumns.length + 1
      /** The page of `rows` (as the continuation read them), `far` telling whether rows lie behind it. */
      const pageOf = (rows: ReadonlyArray<unknown>, far: boolean) =>
        Effect.gen(function* () {
          const more = rows.length > limit
          const taken = rows.slice(0, limit)
          const items = forward ? taken : taken.reverse()
          const infos = yield* infosOf(items, skip)
          const first = items[0]
          const last = items[items.length - 1]
          const head = first === undefined ? anchor : yield* keyOf(first, 1)
          const tail = last === undefined ? anchor : last === first ? head : yield* keyOf(last, 1)
          return {
            infos,
            previous: (forward ? far : more) ? head : undefined,
            next: (forward ? more : far) ? tail : undefined
          }
        })
      /** Whether rows lie behind the page: the leading field of its first row. */
      const behind = (row: string) => row.startsWith("1 ")
      // The extra row answers for the side the page was read towards, and the anchor's side is asked
      // in the same statement: one statement, needing no transaction of its own.
      const rows = yield* read(request.continuation(anchor))
      const head = rows[0]
      if (head !== undefined) return yield* pageOf(rows, typeof head === "string" && behind(head))
      // An empty page asks what lies strictly past its anchor instead: it is read again with that
      // question, in one read transaction.
      return yield* Effect.gen(function* () {
        const again = yield* read(request.continuation(anchor))
        const first = again[0]
        const far =
          first === undefined ? (yield* request.beyond(anchor)).length > 0 : typeof first === "string" && behind(first)
        return yield* pageOf(again, far)
      }).pipe(sql.withTransaction)
    })
}
