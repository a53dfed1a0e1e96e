export * as PreparedSql from "./prepared-sql.js"

import { type SqlClient, type SqlError, Statement as SqlStatement } from "@effect/sql"
import { Effect, Option, type ParseResult, Schema } from "effect"
import { SqliteConnection } from "./sqlite-connection.js"

/**
 * A Prepared Statement: SQL written once, with `?` placeholders, for the statements a turn runs many
 * times (the log's appends, the session and message reads of every Step). Over a connection of
 * `SqliteConnection` it runs the compiled statement synchronously, in one step of the fiber: no
 * statement compilation, span, scope or row decoding effect per call, which is most of what an
 * `sql` template statement costs there. Over any other client (PostgreSQL) it is the same SQL
 * through `sql.unsafe`, placeholders renumbered `$1…`.
 *
 * The transaction discipline is the client's: inside `sql.withTransaction` a statement runs in that
 * transaction; outside one it runs alone, never inside another fiber's transaction. Rows come back
 * as the driver gives them; the owner module checks them (a shape it does not expect is a defect).
 * The text must be valid in both dialects, with no `?` other than the placeholders.
 */
export interface Statement {
  /** Every row the statement returns (none for a write without `RETURNING`). */
  readonly all: (params: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<Row>, SqlError.SqlError>
  /** Every row a query returns, each as its values in column order (no row object per row). */
  readonly values: (
    params: ReadonlyArray<unknown>
  ) => Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError.SqlError>
  /** Runs the statement for its effect. */
  readonly run: (params: ReadonlyArray<unknown>) => Effect.Effect<void, SqlError.SqlError>
}

export type Row = Readonly<Record<string, unknown>>

/** `?` → `$1`, `$2`, … in order (PostgreSQL's placeholders). */
export const numbered = (text: string): string => {
  let n = 0
  return text.replace(/\?/g, () => `$${++n}`)
}

/** The statement `text` over `sql` (see the module doc); nothing is compiled until it first runs. */
export const make = (sql: SqlClient.SqlClient, text: string): Statement => {
  const handle = SqliteConnection.handleOf(sql)
  if (handle === undefined) {
    const dialectText = sql.onDialectOrElse({ pg: () => numbered(text), orElse: () => text })
    const all = (params: ReadonlyArray<unknown>) =>
      sql.unsafe<Row>(dialectText, params) as Effect.Effect<ReadonlyArray<Row>, SqlError.SqlError>
    return {
      all,
      values: (params) => sql.unsafe(dialectText, params).values,
      run: (params) => Effect.asVoid(all(params))
    }
  }
  return {
    all: (params) =>
      handle.use(() => {
        const statement = handle.prepare(text)
        if (statement.reader) return statement.all(...params) as ReadonlyArray<Row>
        statement.run(...params)
        return []
      }),
    values: (params) => handle.use(() => SqliteConnection.valuesOf(handle.prepare(text), params)),
    run: (params) =>
      handle.use(() => {
        // A statement that returns rows (`RETURNING`) cannot be `run` by the driver: its rows are dropped.
        const statement = handle.prepare(text)
        if (statement.reader) statement.all(...params)
        else statement.run(...params)
      })
  }
}

/**
 * The statement `text` over whichever client it is given, made once per client: for an owner
 * function that takes its `SqlClient` from the context (a projection inside the log's transaction).
 */
export const perClient = (text: string): ((sql: SqlClient.SqlClient) => Statement) => {
  const made = new WeakMap<SqlClient.SqlClient, Statement>()
  return (sql) => {
    let statement = made.get(sql)
    if (statement === undefined) {
      statement = make(sql, text)
      made.set(sql, statement)
    }
    return statement
  }
}

/**
 * A template `statement` run the way a Prepared Statement runs: over a connection of
 * `SqliteConnection` it is compiled and its text run synchronously through the connection's cache of
 * compiled statements (`direct`), in one step of the fiber, with no span or scope per call. Over any
 * other client, or where a statement transformer is installed (`Statement.withTransformer`, which
 * then sees the statement), it is `generic`. Same transaction discipline as {@link make}. For the
 * statements a turn runs whose SQL is made of other modules' fragments.
 */
const compiled = <A>(
  sql: SqlClient.SqlClient,
  statement: SqlStatement.Statement<unknown>,
  generic: Effect.Effect<A, SqlError.SqlError>,
  direct: (prepared: ReturnType<SqliteConnection.Handle["prepare"]>, params: ReadonlyArray<unknown>) => A
): Effect.Effect<A, SqlError.SqlError> => {
  const handle = SqliteConnection.handleOf(sql)
  if (handle === undefined) return generic
  return Effect.withFiberRuntime((fiber) => {
    if (Option.isSome(fiber.getFiberRef(SqlStatement.currentTransformer))) return generic
    const [text, params] = statement.compile()
    return handle.use(() => direct(handle.prepare(text), params))
  })
}

/** Every row a template `statement` returns, each as its values in column order (see {@link compiled}). */
export const valuesOf = (
  sql: SqlClient.SqlClient,
  statement: SqlStatement.Statement<unknown>
): Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError.SqlError> =>
  compiled(sql, statement, statement.values, SqliteConnection.valuesOf)

/**
 * The first column of every row `statement` returns, as the driver gives it. Over a connection of
 * `SqliteConnection` the compiled statement runs in the driver's pluck mode: no row object is built
 * per row, which is most of what reading a page of stored records costs there (a row object costs
 * about half a microsecond more than its values). Otherwise it is the first value of each of
 * `statement.values` (see {@link compiled}).
 */
export const firstColumn = (
  sql: SqlClient.SqlClient,
  statement: SqlStatement.Statement<unknown>
): Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError> =>
  compiled(
    sql,
    statement,
    Effect.map(statement.values, (rows) => rows.map((row) => row[0])),
    (prepared, params) => {
      prepared.pluck(true)
      try {
        return prepared.all(...params) as ReadonlyArray<unknown>
      } finally {
        prepared.pluck(false)
      }
    }
  )

/**
 * The rows `statement` returns, each decoded with `Row`: what `SqlSchema.findAll` is for a template
 * statement. A row that does not decode fails with its `ParseError` (a defect for the owner module).
 */
export const findAll = <A, I>(statement: Statement, Row: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknown(Schema.Array(Row))
  return (
    params: ReadonlyArray<unknown>
  ): Effect.Effect<ReadonlyArray<A>, SqlError.SqlError | ParseResult.ParseError> =>
    Effect.flatMap(statement.all(params), decode)
}

/** The first row `statement` returns, decoded with `Row`, if any (`SqlSchema.findOne`; see {@link findAll}). */
export const findOne = <A, I>(statement: Statement, Row: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknown(Row)
  return (
    params: ReadonlyArray<unknown>
  ): Effect.Effect<Option.Option<A>, SqlError.SqlError | ParseResult.ParseError> =>
    Effect.flatMap(statement.all(params), ([row]) =>
      row === undefined ? Effect.succeedNone : Effect.asSome(decode(row))
    )
}
