export * as SqliteCommitWatch from "./sqlite-commit-watch.js"

/**
 * When another connection has committed to this process's SQLite database file: what EventLog's
 * relay waits for before it reads the rows other processes appended.
 *
 * SQLite tells a connection whether any other connection committed since it last asked
 * (`PRAGMA data_version`: the value changes only for commits made through other connections, in any
 * process). Asking is one cheap statement, so it is asked when the database may have changed: when
 * the file system reports a write to the database file or its write-ahead log (`fs.watch` on their
 * directory: a commit appends to the log at once), and in any case every `pollMs` (a file system that
 * reports nothing, such as some network mounts, still gets the poll). A process's own commits also
 * write the log, so reports that arrive within {@link coalesceMs} of each other are answered by one
 * question.
 *
 * An in-memory database (no file) is only polled.
 */

import * as fs from "node:fs"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect, Queue, type Scope } from "effect"
import { WallClock } from "../clock/wall-clock.js"

/** How long after a file system report the question is asked, so that a burst of writes asks once (ms). */
export const coalesceMs = 2

export interface Watch {
  /** Resolves at the next file system report of a write (a burst of them counts once), or after `pollMs`. */
  readonly woken: Effect.Effect<void>
  /**
   * Whether another connection has committed since the previous call (or since the watch began); an
   * SQL error is a defect. Calls must not overlap.
   */
  readonly changed: Effect.Effect<boolean>
}

/** Watches the database behind the SqlClient (an SQLite one) until the scope closes. */
export const make = Effect.fn("SqliteCommitWatch.make")(function* (options: {
  readonly pollMs: number
  /** Whether file system reports wake the watch too (false: it only polls). */
  readonly watchFiles: boolean
}) {
  const sql = yield* SqlClient.SqlClient
  const version = sql<{ readonly data_version: number }>`PRAGMA data_version`.pipe(
    Effect.map((rows) => rows[0]?.data_version ?? 0),
    Effect.orDie
  )
  let seen = yield* version
  const [main] = yield* sql<{ readonly file: string }>`SELECT file FROM pragma_database_list WHERE name = 'main'`.pipe(
    Effect.orDie
  )
  const reports = yield* Queue.sliding<void>(1)
  if (options.watchFiles && main !== undefined && main.file !== "")
    yield* watchFile(main.file, () => Queue.unsafeOffer(reports, undefined))

  return {
    woken: Effect.raceFirst(
      Queue.take(reports).pipe(Effect.zipRight(WallClock.sleep(coalesceMs)), Effect.zipRight(Queue.takeAll(reports))),
      WallClock.sleep(options.pollMs)
    ).pipe(Effect.asVoid),
    changed: Effect.map(version, (now) => {
      const changed = now !== seen
      seen = now
      return changed
    })
  } satisfies Watch
})

/**
 * Calls `changed` whenever the file system reports a write to `file` or to its write-ahead log, until
 * the scope closes. Where the directory cannot be watched (no watch support, the watch limit reached),
 * or the watch fails later, nothing is reported: the poll still runs.
 */
const watchFile = (file: string, changed: () => void): Effect.Effect<void, never, Scope.Scope> => {
  const names = new Set([path.basename(file), `${path.basename(file)}-wal`])
  return Effect.asVoid(
    Effect.acquireRelease(
      Effect.sync(() => {
        try {
          const watcher = fs.watch(path.dirname(file), { persistent: false }, (_event, name) => {
            if (name === null || names.has(String(name))) changed()
          })
          watcher.on("error", () => watcher.close())
          return watcher
        } catch {
          return undefined
        }
      }),
      (watcher) => Effect.sync(() => watcher?.close())
    )
  )
}
