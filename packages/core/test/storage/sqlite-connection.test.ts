import * as path from "node:path"
import { SqlClient, SqlError, Statement } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Ref } from "effect"
import { PreparedSql } from "../../src/storage/prepared-sql.js"
import { SqliteConnection } from "../../src/storage/sqlite-connection.js"
import { PostgresServer } from "../../src/testing/postgres-server.js"
import { tempDir } from "../fixture.js"
import { dialects, freshDatabase } from "./dialects.js"

/**
 * The SQLite connection (`SqliteConnection`) keeps `@effect/sql`'s transaction discipline while
 * running statements and transactions synchronously, and a Prepared Statement (`PreparedSql`)
 * behaves the same over it and over PostgreSQL.
 */

const connection = Effect.flatMap(tempDir, (dir) =>
  Layer.build(SqliteConnection.layer({ filename: path.join(dir, "test.db") }))
).pipe(Effect.map((context) => Context.get(context, SqlClient.SqlClient)))

/** A fresh connection with an empty `item` table, and a Prepared Statement that inserts into it. */
const items = Effect.gen(function* () {
  const sql = yield* connection
  yield* sql`CREATE TABLE item (id TEXT PRIMARY KEY, n INTEGER NOT NULL)`
  return { sql, insert: PreparedSql.make(sql, "INSERT INTO item (id, n) VALUES (?, ?)") }
})

const ids = (sql: SqlClient.SqlClient) =>
  Effect.map(sql<{ id: string }>`SELECT id FROM item ORDER BY id`, (rows) => rows.map((row) => row.id))

describe("SqliteConnection", () => {
  it.scoped(
    "a Prepared Statement, a read's values and a transaction complete in one step when the connection is free",
    () =>
      Effect.gen(function* () {
        const { sql, insert } = yield* items
        const values = PreparedSql.make(sql, "SELECT id, n FROM item ORDER BY id")
        // runSync fails on any asynchronous step (a permit taken through Effect's Semaphore was one).
        Effect.runSync(insert.run(["a", 1]))
        Effect.runSync(sql.withTransaction(Effect.zipRight(insert.run(["b", 2]), insert.run(["c", 3]))))
        expect(Effect.runSync(values.values([]))).toEqual([
          ["a", 1],
          ["b", 2],
          ["c", 3]
        ])
      })
  )

  it.scoped("a statement outside a transaction waits for another fiber's transaction to end", () =>
    Effect.gen(function* () {
      const { sql, insert } = yield* items
      const inside = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const order = yield* Ref.make<ReadonlyArray<string>>([])
      // A transaction that writes, then waits, then fails: everything it wrote is rolled back.
      const transaction = yield* Effect.fork(
        sql
          .withTransaction(
            Effect.gen(function* () {
              yield* insert.run(["a", 1])
              yield* Deferred.succeed(inside, undefined)
              yield* Deferred.await(release)
              yield* Ref.update(order, (log) => [...log, "transaction ends"])
              return yield* Effect.fail("give up" as const)
            })
          )
          .pipe(Effect.exit)
      )
      yield* Deferred.await(inside)
      const outside = yield* Effect.fork(
        Effect.zipRight(
          insert.run(["b", 2]),
          Ref.update(order, (log) => [...log, "outside statement ran"])
        )
      )
      // The outside statement cannot run while the transaction holds the connection.
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
      expect(yield* Ref.get(order)).toEqual([])
      yield* Deferred.succeed(release, undefined)
      expect(Exit.isFailure(yield* Fiber.join(transaction))).toBe(true)
      yield* Fiber.join(outside)
      expect(yield* Ref.get(order)).toEqual(["transaction ends", "outside statement ran"])
      expect(yield* ids(sql)).toEqual(["b"])
    })
  )

  it.scoped("prepared and template statements inside a transaction commit or roll back with it", () =>
    Effect.gen(function* () {
      const { sql, insert } = yield* items
      yield* sql.withTransaction(Effect.zipRight(insert.run(["a", 1]), sql`INSERT INTO item VALUES ('b', 2)`))
      const failed = yield* sql
        .withTransaction(
          Effect.zipRight(
            Effect.zipRight(insert.run(["c", 3]), sql`INSERT INTO item VALUES ('d', 4)`),
            Effect.fail("no" as const)
          )
        )
        .pipe(Effect.flip)
      expect(failed).toBe("no")
      expect(yield* ids(sql)).toEqual(["a", "b"])
    })
  )

  it.scoped("a nested transaction is a savepoint: its failure undoes only its own writes", () =>
    Effect.gen(function* () {
      const { sql, insert } = yield* items
      yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* insert.run(["outer", 1])
          const inner = yield* sql
            .withTransaction(Effect.zipRight(insert.run(["inner", 2]), Effect.fail("inner fails" as const)))
            .pipe(Effect.flip)
          expect(inner).toBe("inner fails")
          yield* sql.withTransaction(insert.run(["second", 3]))
        })
      )
      expect(yield* ids(sql)).toEqual(["outer", "second"])
    })
  )

  it.scoped("an interrupted transaction rolls back and gives the connection back", () =>
    Effect.gen(function* () {
      const { sql, insert } = yield* items
      const inside = yield* Deferred.make<void>()
      const fiber = yield* Effect.fork(
        sql.withTransaction(
          Effect.zipRight(Effect.zipRight(insert.run(["a", 1]), Deferred.succeed(inside, undefined)), Effect.never)
        )
      )
      yield* Deferred.await(inside)
      yield* Fiber.interrupt(fiber)
      yield* insert.run(["b", 2])
      yield* sql.withTransaction(insert.run(["c", 3]))
      expect(yield* ids(sql)).toEqual(["b", "c"])
    })
  )

  it.scoped("bad SQL fails with an SqlError and leaves the connection usable", () =>
    Effect.gen(function* () {
      const { sql, insert } = yield* items
      const broken = PreparedSql.make(sql, "SELECT nothing FROM nowhere WHERE id = ?")
      const outside = yield* Effect.flip(broken.all(["a"]))
      expect(outside).toBeInstanceOf(SqlError.SqlError)
      const inside = yield* Effect.flip(sql.withTransaction(broken.all(["a"])))
      expect(inside).toBeInstanceOf(SqlError.SqlError)
      yield* insert.run(["a", 1])
      expect(yield* ids(sql)).toEqual(["a"])
    })
  )

  it.scoped("compiled statements beyond the cache's capacity are dropped and compiled again when used", () =>
    Effect.gen(function* () {
      const { sql, insert } = yield* items
      yield* insert.run(["a", 41])
      const distinct = (i: number) => PreparedSql.make(sql, `SELECT n + ${i} AS n FROM item WHERE id = ?`)
      for (let i = 0; i < SqliteConnection.cacheCapacity + 20; i++) {
        expect(yield* distinct(i).all(["a"])).toEqual([{ n: 41 + i }])
      }
      // The first ones were dropped: they compile again and still answer.
      expect(yield* distinct(1).all(["a"])).toEqual([{ n: 42 }])
    })
  )

  it.scoped("rows as arrays (`values`) do not change how the same statement answers afterwards", () =>
    Effect.gen(function* () {
      const { sql } = yield* items
      yield* sql`INSERT INTO item VALUES ('a', 1)`
      const query = () => sql`SELECT id, n FROM item WHERE n = ${1}`
      expect(yield* query().values).toEqual([["a", 1]])
      expect(yield* query()).toEqual([{ id: "a", n: 1 }])
    })
  )
})

describe("PreparedSql.numbered", () => {
  it("numbers placeholders in order for PostgreSQL", () => {
    expect(PreparedSql.numbered("UPDATE t SET a = ? WHERE b = ? AND c = ?")).toBe(
      "UPDATE t SET a = $1 WHERE b = $2 AND c = $3"
    )
  })
})

layer(PostgresServer.layer(), { timeout: 120_000 })("PreparedSql over both dialects", (it) => {
  for (const dialect of dialects) {
    it.scoped(`${dialect}: rows, writes, and the enclosing transaction`, () =>
      Effect.gen(function* () {
        const sql = yield* Effect.flatMap(freshDatabase(dialect), (database) =>
          Effect.map(Layer.build(database), (context) => Context.get(context, SqlClient.SqlClient))
        )
        yield* sql`CREATE TABLE prepared_item (id TEXT PRIMARY KEY, n INTEGER NOT NULL)`
        const insert = PreparedSql.make(sql, "INSERT INTO prepared_item (id, n) VALUES (?, ?)")
        const bump = PreparedSql.make(sql, "UPDATE prepared_item SET n = n + ? WHERE id = ? RETURNING n")
        const select = PreparedSql.make(sql, "SELECT id, n FROM prepared_item WHERE n >= ? ORDER BY id")
        yield* insert.run(["a", 1])
        // `run` of a statement that returns rows drops them.
        yield* bump.run([5, "a"])
        expect(yield* bump.all([5, "a"])).toEqual([{ n: 11 }])
        const failed = yield* sql
          .withTransaction(Effect.zipRight(insert.run(["b", 2]), Effect.fail("no" as const)))
          .pipe(Effect.flip)
        expect(failed).toBe("no")
        yield* sql.withTransaction(insert.run(["c", 3]))
        expect(yield* select.all([0])).toEqual([
          { id: "a", n: 11 },
          { id: "c", n: 3 }
        ])
        expect(yield* select.all([100])).toEqual([])
      })
    )

    it.scoped(
      `${dialect}: firstColumn reads each row's first value, in and out of a transaction, seen by a transformer`,
      () =>
        Effect.gen(function* () {
          const sql = yield* Effect.flatMap(freshDatabase(dialect), (database) =>
            Effect.map(Layer.build(database), (context) => Context.get(context, SqlClient.SqlClient))
          )
          yield* sql`CREATE TABLE column_item (id TEXT PRIMARY KEY, n INTEGER NOT NULL)`
          yield* sql`INSERT INTO column_item (id, n) VALUES ('a', 1), ('b', 2)`
          const entries = () => sql`SELECT id || ' ' || n, n FROM column_item WHERE n >= ${1} ORDER BY id`
          expect(yield* PreparedSql.firstColumn(sql, entries())).toEqual(["a 1", "b 2"])
          // The same statement afterwards still answers with whole rows (the mode is the call's own).
          expect(yield* sql`SELECT id || ' ' || n, n FROM column_item WHERE n >= ${1} ORDER BY id`.values).toEqual([
            ["a 1", 1],
            ["b 2", 2]
          ])
          // Inside a transaction: its own uncommitted write is read, and gone after the rollback.
          const inside = yield* sql
            .withTransaction(
              Effect.zipRight(
                sql`INSERT INTO column_item (id, n) VALUES ('c', 3)`,
                Effect.flatMap(PreparedSql.firstColumn(sql, entries()), (read) => Effect.fail(read))
              )
            )
            .pipe(Effect.flip)
          expect(inside).toEqual(["a 1", "b 2", "c 3"])
          expect(yield* PreparedSql.firstColumn(sql, entries())).toEqual(["a 1", "b 2"])
          // A statement transformer sees the statement (and may change it).
          const seen: Array<string> = []
          const transformed = yield* PreparedSql.firstColumn(sql, entries()).pipe(
            Statement.withTransformer((statement, sql) => {
              seen.push(statement.compile()[0])
              return Effect.succeed(sql`SELECT 'transformed'`)
            })
          )
          expect(seen).toHaveLength(1)
          expect(seen[0]).toContain("column_item")
          expect(transformed).toEqual(["transformed"])
        })
    )
  }
})
