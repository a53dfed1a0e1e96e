export * as SqliteCommitWatch from "./sqlite-commit-watch.js"

/**
 * When another connection has committed to this process's SQLite database file: what EventLog's
 * relay waits for before it reads the rows other processes appended.
 *
 * SQLite tells a connection whether any other connection committed since it last asked
 * (`PRAGMA data_version`: the value changes only for commits made through other connections, in any
 * process). It is asked every `pollMs`, and, while another connection is committing, also as soon as
 * the file system reports a write to the database file or its write-ahead log (`fs.watch` on their
 * directory: a commit appends to the log at once), so those commits are seen within milliseconds.
 * Reports that arrive within {@link coalesceMs} of each other are answered by one question.
 *
 * This process's own commits write the log too, and a process alone on its file (the usual case)
 * should not pay for reports of them: the directory is watched from the start, and again from the
 * moment the poll finds another connection's commit, until {@link followMs} pass without one. So
 * the first commit of a process that appears after a quiet spell is seen at the next poll, and the
 * following ones at once. A file system that reports nothing (some network mounts) still gets the
 * poll, and an in-memory database (no file) is only polled.
 */

import * as fs from "node:fs"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { WakeSignal } from "../clock/wake-signal.js"
import { Traced } from "../observability/traced.js"
import { PreparedSql } from "../storage/prepared-sql.js"

/** How long after a file system report the question is asked, so that a burst of writes asks once (ms). */
export const coalesceMs = 2

/** How long after another connection's last commit the file system's reports are still followed (ms). */
export const followMs = 10_000

export interface Watch {
  /**
   * Resolves after `pollMs`, or sooner at a file system report of a write while reports are followed
   * (a burst of them counts once).
   */
  readonly woken: Effect.Effect<void>
  /**
   * Whether another connection has committed since the previous call (or since the watch began); an
   * SQL error is a defect. Calls must not overlap.
   */
  readonly changed: Effect.Effect<boolean>
}

/** Watches the database behind the SqlClient (an SQLite one) until the scope closes. */
export const make = Traced.fn("SqliteCommitWatch.make")(function* (options: {
  readonly pollMs: number
  /** Whether file system reports wake the watch too (false: it only polls). */
  readonly watchFiles: boolean
  /** How long reports are followed after another connection's last commit; default {@link followMs}. */
  readonly followMs?: number | undefined
}) {
  const sql = yield* SqlClient.SqlClient
  const dataVersion = PreparedSql.make(sql, "PRAGMA data_version")
  const version = dataVersion.all([]).pipe(
    Effect.map((rows) => (typeof rows[0]?.data_version === "number" ? rows[0].data_version : 0)),
    Effect.orDie
  )
  let seen = yield* version
  const [main] = yield* sql<{ readonly file: string }>`SELECT file FROM pragma_database_list WHERE name = 'main'`.pipe(
    Effect.orDie
  )
  const reports = WakeSignal.make({ coalesceMs })
  const file = options.watchFiles && main !== undefined && main.file !== "" ? main.file : undefined
  let watcher: fs.FSWatcher | undefined
  const follow = () => {
    if (watcher === undefined && file !== undefined) watcher = watchFile(file, reports.notify)
  }
  const unfollow = () => {
    watcher?.close()
    watcher = undefined
  }
  yield* Effect.addFinalizer(() => Effect.sync(unfollow))
  let lastForeign = yield* Clock.currentTimeMillis
  follow()

  return {
    woken: reports.sleep(options.pollMs),
    changed: Effect.map(Effect.zip(version, Clock.currentTimeMillis), ([now, at]) => {
      const changed = now !== seen
      seen = now
      if (changed) {
        lastForeign = at
        follow()
      } else if (at - lastForeign > (options.followMs ?? followMs)) {
        unfollow()
      }
      return changed
    })
  } satisfies Watch
})

/**
 * A watch that calls `changed` whenever the file system reports a write to `file` or to its
 * write-ahead log; undefined where the directory cannot be watched (no watch support, the watch limit
 * reached). A watch that fails later closes itself. Either way the poll still runs.
 */
const watchFile = (file: string, changed: () => void): fs.FSWatcher | undefined => {
  const names = new Set([path.basename(file), `${path.basename(file)}-wal`])
  try {
    const watcher = fs.watch(path.dirname(file), { persistent: false }, (_event, name) => {
      if (name === null || names.has(String(name))) changed()
    })
    watcher.on("error", () => watcher.close())
    return watcher
  } catch {
    return undefined
  }
}
