/**
 * The Model Context read a Step makes at every Safe Step Boundary, as a session's history grows: the
 * whole context (what every read cost before the per-session cache; still the first read of a
 * process, here on a connection opened for it) against the read of what changed since the previous
 * one (a Step's usual read). In process, on a real Core over a temporary SQLite file, messages of
 * `--kb` KiB each.
 *
 *   node --import tsx bench/context-read.ts [--messages 100,1000] [--kb 2] [--reads 100]
 *
 * Each measured read follows the append of one small message, as between two Steps.
 */

import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { Database, MessageProjection, SessionEvents, Sessions } from "../packages/core/src/index.js"
import { Identifier, type Location } from "../packages/schema/src/index.js"
import { CoreHost } from "./core-host.js"
import { emit, type Figure, isMain } from "./figures.js"

const option = (name: string, fallback: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? fallback : (process.argv[at + 1] ?? fallback)
}
const sizes = option("messages", "100,1000").split(",").map(Number)
const kb = Number(option("kb", "2"))
const reads = Number(option("reads", "100"))

const median = (samples: ReadonlyArray<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

/** One session grown to `count` messages, then `reads` rounds of (append one, read whole, read changed). */
const measure = (root: string, count: number) =>
  Effect.gen(function* () {
    const directory = path.join(root, `history-${count}`)
    const databaseFile = path.join(root, `history-${count}.db`)
    const context = yield* CoreHost.build({ databaseFile, directory, configDir: path.join(root, "config") })
    return yield* Effect.gen(function* () {
      const events = yield* SessionEvents.Service
      const location: Location.LocationInfo = { directory, project: { id: "prj_bench", directory } }
      const session = yield* Effect.flatMap(Sessions.Service, (sessions) => sessions.create({ location }))
      const prompt = (text: string) =>
        SessionEvents.draft("session.next.prompted", {
          timestamp: Date.now(),
          sessionID: session.id,
          messageID: Identifier.newMessageID(),
          prompt: { text },
          delivery: "queue"
        })
      const body = "x".repeat(kb * 1024)
      for (let i = 0; i < count; i += 50) {
        yield* events.append(
          session.id,
          Array.from({ length: Math.min(50, count - i) }, (_, j) => prompt(`${i + j} ${body}`))
        )
      }
      const whole: Array<number> = []
      const changed: Array<number> = []
      yield* MessageProjection.context(session.id, 0)
      for (let i = 0; i < reads; i++) {
        yield* events.append(session.id, [prompt(`step ${i}`)])
        // Another connection to the file: its first read is whole.
        yield* Effect.scoped(
          Effect.gen(function* () {
            const fresh = yield* Layer.build(Database.layer({ filename: databaseFile }))
            const start = performance.now()
            yield* Effect.provide(MessageProjection.context(session.id, 0), fresh)
            whole.push(performance.now() - start)
          })
        )
        const start = performance.now()
        yield* MessageProjection.context(session.id, 0)
        changed.push(performance.now() - start)
      }
      return { whole: median(whole), changed: median(changed) }
    }).pipe(Effect.provide(context), Effect.scoped)
  }).pipe(Effect.scoped)

export const run = (): Promise<ReadonlyArray<Figure>> =>
  Effect.runPromise(
    Effect.gen(function* () {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-context-read-"))
      const figures: Array<Figure> = []
      try {
        for (const count of sizes) {
          const { whole, changed } = yield* measure(root, count)
          console.log(
            `context read, ${count} messages of ${kb} KiB (median of ${reads}): whole ${whole.toFixed(3)} ms, ` +
              `what changed since the previous read ${changed.toFixed(3)} ms`
          )
          figures.push(
            { name: `context-read-whole-${count}`, value: whole, unit: "ms" },
            { name: `context-read-changed-${count}`, value: changed, unit: "ms" }
          )
        }
      } finally {
        fs.rmSync(root, { recursive: true, force: true })
      }
      return figures
    }).pipe(Logger.withMinimumLogLevel(LogLevel.Warning))
  )

if (isMain(import.meta.url)) {
  run().then((figures) => emit(figures))
}
