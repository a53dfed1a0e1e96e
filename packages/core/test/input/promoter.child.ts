/**
 * A second host for the cross-process promotion race in `session-input.test.ts`: opens its own Core
 * over the given database file, prints "ready", waits for a line on stdin, then promotes the
 * session's pending input until none is left and prints how many prompts it promoted.
 *
 *   node --import tsx test/input/promoter.child.ts <databaseFile> <directory> <sessionID>
 */

import * as path from "node:path"
import * as readline from "node:readline"
import { Identifier } from "@opencode-ai/schema"
import { Effect } from "effect"
import { Config } from "../../src/config/config.js"
import { SessionInput } from "../../src/input/session-input.js"
import { TestDatabase } from "../../src/testing/test-database.js"

const [databaseFile = "", directory = "", given = ""] = process.argv.slice(2)
const sessionID = Identifier.SessionID.make(given)

const go = new Promise<void>((resolve) =>
  readline.createInterface({ input: process.stdin }).once("line", () => resolve())
)

const program = Effect.gen(function* () {
  const inbox = yield* SessionInput.Service
  process.stdout.write("ready\n")
  yield* Effect.promise(() => go)
  let promoted = 0
  for (;;) {
    const steers = yield* inbox.promoteSteers(sessionID)
    const queued = yield* inbox.promoteNextQueued(sessionID)
    promoted += steers + Number(queued)
    if (steers === 0 && !queued && (yield* inbox.pending(sessionID)).length === 0) return promoted
  }
})

Effect.runPromise(
  program.pipe(
    Effect.provide(
      TestDatabase.coreLayer({
        databaseFile,
        directory,
        configDir: path.join(directory, "config"),
        env: {},
        config: Config.layerTest({}),
        // This host only races promotions; it must not drive the session's drains.
        recover: false
      })
    )
  )
).then(
  (promoted) => {
    process.stdout.write(`promoted ${promoted}\n`)
    process.exit(0)
  },
  (error) => {
    process.stderr.write(`${String(error)}\n`)
    process.exit(1)
  }
)
