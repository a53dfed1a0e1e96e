export * as SqliteConnection from "./sqlite-connection.js"

import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, type SqlConnection, SqlError, Statement } from "@effect/sql"
import Sqlite from "better-sqlite3"
import { Context, Effect, FiberRef, Layer, Scope, Tracer } from "effect"
import { Traced } from "../observability/traced.js"
import { ConnectionPermit } from "./connection-permit.js"

/**
 * A host's one SQLite connection (better-sqlite3, in WAL mode) as an `@effect/sql` `SqlClient`, and
 * the synchronous path to it that {@link PreparedSql} takes.
 *
 * Like `@effect/sql-sqlite-node`'s client, which it replaces: one connection, one statement at a
 * time (one permit, a ConnectionPermit), a transaction holding that permit from `BEGIN` to its end, and
 * compiled statements cached by their text. Unlike it, the cache is a plain map (least recently used
 * out beyond {@link cacheCapacity}, no time to live), looked up without an effect, and `BEGIN`,
 * `COMMIT` and `ROLLBACK` are cached like any statement. `SqlClient.SafeIntegers` is not supported:
 * integers come back as numbers. Streams of rows (`stream`) are not supported either, as before.
 */

/** How many compiled statements are kept (the least recently used one goes beyond that). */
export const cacheCapacity = 500

/** What {@link PreparedSql} needs of a connection made here. */
export interface Handle {
  /** The statement for `text`, compiled once and cached. Throws what SQLite throws for bad SQL. */
  readonly prepare: (text: string) => Sqlite.Statement
  /**
   * Runs `f` synchronously on the connection: at once inside one of its transactions (the fiber's
   * `TransactionConnection` is this connection) or while no transaction holds the connection's
   * permit, otherwise holding the permit once it is released, so that it never lands inside another
   * fiber's transaction. A throw is a `SqlError`.
   */
  readonly use: <A>(f: () => A) => Effect.Effect<A, SqlError.SqlError>
}

const handles = new WeakMap<SqlClient.SqlClient, Handle>()

/** The synchronous path of `client`, when it is a connection made by {@link layer}. */
export const handleOf = (client: SqlClient.SqlClient): Handle | undefined => handles.get(client)

/**
 * Every row `statement` returns, each as its values in column order (the driver's raw mode, set for
 * this call only); none for a statement that returns no rows, which is run.
 */
export const valuesOf = (
  statement: Sqlite.Statement,
  params: ReadonlyArray<unknown>
): ReadonlyArray<ReadonlyArray<unknown>> => {
  if (!statement.reader) {
    statement.run(...params)
    return []
  }
  statement.raw(true)
  try {
    return statement.all(...params) as ReadonlyArray<ReadonlyArray<unknown>>
  } finally {
    statement.raw(false)
  }
}

const failure = (cause: unknown) => new SqlError.SqlError({ cause, message: "Failed to execute statement" })

/**
 * The connection to `filename` (created if missing; its directory must exist), in WAL mode, closed
 * with the scope.
 */
export const make = (options: { readonly filename: string }): Effect.Effect<SqlClient.SqlClient, never, Scope.Scope> =>
  Effect.gen(function* () {
    const db = yield* Effect.acquireRelease(
      Effect.sync(() => new Sqlite(options.filename)),
      (db) => Effect.sync(() => db.close())
    )
    db.pragma("journal_mode = WAL")

    const cache = new Map<string, Sqlite.Statement>()
    const prepare = (text: string): Sqlite.Statement => {
      const cached = cache.get(text)
      if (cached !== undefined) {
        // Most recently used last: the map's first key is the one to drop.
        cache.delete(text)
        cache.set(text, cached)
        return cached
      }
      const statement = db.prepare(text)
      cache.set(text, statement)
      if (cache.size > cacheCapacity) cache.delete(cache.keys().next().value as string)
      return statement
    }
    const rows = (text: string, params: ReadonlyArray<unknown>): ReadonlyArray<any> => {
      const statement = prepare(text)
      if (statement.reader) return statement.all(...params)
      statement.run(...params)
      return []
    }
    const attempt = <A>(f: () => A): Effect.Effect<A, SqlError.SqlError> => {
      try {
        return Effect.succeed(f())
      } catch (cause) {
        return Effect.fail(failure(cause))
      }
    }
    const run = <A>(f: () => A) => Effect.suspend(() => attempt(f))

    const connection: SqlConnection.Connection = {
      execute: (text, params, transformRows) =>
        run(() => (transformRows === undefined ? rows(text, params) : transformRows(rows(text, params)))),
      executeRaw: (text, params) =>
        run(() => {
          const statement = prepare(text)
          return statement.reader ? statement.all(...params) : statement.run(...params)
        }),
      executeValues: (text, params) => run(() => valuesOf(prepare(text), params)),
      executeUnprepared: (text, params, transformRows) =>
        run(() => (transformRows === undefined ? rows(text, params) : transformRows(rows(text, params)))),
      executeStream: () => Effect.dieMessage("SqliteConnection: streaming rows is not supported") as never
    }

    const permit = ConnectionPermit.make()
    const client = yield* SqlClient.make({
      // The permit is free: no transaction of another fiber is open.
      acquirer: permit.withPermit(Effect.succeed(connection)),
      // A transaction holds the permit until its scope closes (after COMMIT or ROLLBACK).
      transactionAcquirer: Effect.uninterruptibleMask((restore) =>
        Effect.as(
          Effect.zipRight(
            restore(permit.take),
            Effect.flatMap(Effect.scope, (scope) => Scope.addFinalizer(scope, permit.release))
          ),
          connection
        )
      ),
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    }).pipe(Effect.provide(Reactivity.layer))

    /** How deep the fiber is in this connection's transactions: 0 outside, 1 in one, 2 in a nested one. */
    const depthIn = (fiberContext: Context.Context<never>) => {
      const open = Context.getOption(fiberContext, SqlClient.TransactionConnection)
      return open._tag === "Some" && open.value[0] === connection ? open.value[1] + 1 : 0
    }
    const inTransaction = (fiberContext: Context.Context<never>) => depthIn(fiberContext) > 0
    const statement = (text: string) => () => {
      prepare(text).run()
    }

    /** `effect` as one transaction (see {@link withTransaction}), its span (if any) the parent of what it runs. */
    const transaction = <A, E, R>(
      restore: <X, Y, Z>(effect: Effect.Effect<X, Y, Z>) => Effect.Effect<X, Y, Z>,
      effect: Effect.Effect<A, E, R>,
      span: Tracer.Span | undefined
    ) =>
      Effect.withFiberRuntime<A, E | SqlError.SqlError, R>((fiber) => {
        const context = fiber.currentContext
        const depth = depthIn(context)
        const opened = Context.add(context, SqlClient.TransactionConnection, [connection, depth])
        const inner = Effect.locally(
          restore(effect),
          FiberRef.currentContext,
          span === undefined ? opened : Context.add(opened, Tracer.ParentSpan, span)
        )
        const body = (begin: string, commit: string | undefined, rollback: string) =>
          Effect.flatMap(attempt(statement(begin)), () =>
            Effect.flatMap(Effect.exit(inner), (exit) => {
              const end = exit._tag === "Success" ? commit : rollback
              return end === undefined ? exit : Effect.zipRight(Effect.orDie(attempt(statement(end))), exit)
            })
          )
        if (depth > 0) {
          const name = `effect_sql_${depth}`
          return body(`SAVEPOINT ${name}`, undefined, `ROLLBACK TO SAVEPOINT ${name}`)
        }
        return Effect.zipRight(
          restore(permit.take),
          Effect.ensuring(body("BEGIN", "COMMIT", "ROLLBACK"), permit.release)
        )
      })

    /**
     * `withTransaction`, as `@effect/sql` has it (BEGIN, COMMIT on success, ROLLBACK on failure or
     * interruption; inside another transaction of this connection a savepoint, rolled back to on
     * failure; a failing COMMIT or ROLLBACK is a defect), in a few steps of the fiber rather than
     * about a hundred and fifty: the permit is taken and given back directly, and the statements
     * run synchronously. Its `sql.transaction` span is made only where spans are observed
     * (Traced.observed), as Core's own spans are.
     */
    const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError.SqlError, R> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.withFiberRuntime<A, E | SqlError.SqlError, R>((fiber) =>
          Traced.observed(fiber)
            ? Effect.useSpan("sql.transaction", { kind: "client", captureStackTrace: false }, (span) => {
                span.attribute("db.system.name", "sqlite")
                return transaction(restore, effect, span)
              })
            : transaction(restore, effect, undefined)
        )
      )
    Object.assign(client, { withTransaction })
    handles.set(client, {
      prepare,
      // `f` is synchronous: with the permit free it runs at once, and no transaction can open meanwhile.
      use: (f) =>
        Effect.withFiberRuntime((fiber) =>
          permit.isFree() || inTransaction(fiber.currentContext) ? attempt(f) : permit.withPermit(run(f))
        )
    })
    return client
  })

/** {@link make} as a layer: the connection is closed with the layer's scope. */
export const layer = (options: { readonly filename: string }): Layer.Layer<SqlClient.SqlClient> =>
  Layer.scoped(SqlClient.SqlClient, make(options))
