import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { describe, expect } from "vitest"
import { SqliteCommitWatch } from "../../src/event/sqlite-commit-watch.js"
import { Database } from "../../src/storage/database.js"
import { tempDir } from "../fixture.js"

/** Whether `woken` resolves within `ms` (a report; the poll is an hour away). */
const wokenWithin = (watch: SqliteCommitWatch.Watch, ms: number) =>
  Effect.raceFirst(Effect.as(watch.woken, true), Effect.as(Effect.sleep(`${ms} millis`), false))

describe("SqliteCommitWatch", () => {
  it.scopedLive(
    "follows the file system's reports while another connection commits, stops after a quiet spell, and follows again once the poll sees a commit",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const connect = Effect.map(Layer.build(Database.layer({ filename: path.join(dir, "shared.db") })), (context) =>
          Context.get(context, SqlClient.SqlClient)
        )
        const here = yield* connect
        const other = yield* connect
        yield* other`CREATE TABLE IF NOT EXISTS note (n INTEGER)`
        const watch = yield* SqliteCommitWatch.make({ pollMs: 3_600_000, watchFiles: true, followMs: 300 }).pipe(
          Effect.provideService(SqlClient.SqlClient, here)
        )
        const commit = (n: number) => other`INSERT INTO note (n) VALUES (${n})`

        // Followed from the start: the other connection's commit wakes the watch, and it was a commit.
        const first = yield* Effect.fork(watch.woken)
        yield* commit(1)
        yield* first.await
        expect(yield* watch.changed).toBe(true)
        // Asked again with nothing new: no commit.
        expect(yield* watch.changed).toBe(false)

        // A quiet spell longer than followMs: the next question stops following the reports, so a
        // commit now wakes nothing (only the hour-long poll would).
        yield* Effect.sleep("400 millis")
        expect(yield* watch.changed).toBe(false)
        const unheard = yield* Effect.fork(wokenWithin(watch, 500))
        yield* commit(2)
        expect(yield* unheard.await.pipe(Effect.flatten)).toBe(false)

        // The poll's question finds that commit and follows the reports again.
        expect(yield* watch.changed).toBe(true)
        const heard = yield* Effect.fork(wokenWithin(watch, 10_000))
        yield* commit(3)
        expect(yield* heard.await.pipe(Effect.flatten)).toBe(true)
        expect(yield* watch.changed).toBe(true)
      }),
    30_000
  )
})
