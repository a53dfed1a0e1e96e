/**
 * Pages as history grows: the cost of one session list page and one message page, first and deep,
 * with and without a `directory` filter. A page is one keyset statement, so its cost should not grow
 * with how many rows lie before it or how many rows the filter matches. In process, on a real Core
 * over a temporary SQLite file (no HTTP: `pages.ts` measures that).
 *
 *   node --import tsx bench/page-depth.ts [--sessions 10000] [--messages 5000] [--reads 200]
 *
 * `--sessions` sessions (half of them in the directory the filtered pages ask for, three to a
 * millisecond) are written through Sessions.insert; one more session gets `--messages` prompts
 * through its event log, so its messages are projected as in use. Each figure is the median time of
 * `--reads` calls of `Sessions.page` or `MessageProjection.page` (50 records, newest first), the
 * continuations anchored at the given depth. Printed, never asserted (DESIGN §7.10).
 */

import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { Effect, Logger, LogLevel } from "effect"
import { MessageProjection, SessionEvents, Sessions } from "../packages/core/src/index.js"
import { Identifier, type Location, Session } from "../packages/schema/src/index.js"
import { CoreHost } from "./core-host.js"
import { emit, type Figure, isMain } from "./figures.js"

const option = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? fallback : Number(process.argv[at + 1] ?? fallback)
}
const sessionCount = option("sessions", 10_000)
const messageCount = option("messages", 5_000)
const reads = option("reads", 200)
const limit = 50

const median = (samples: ReadonlyArray<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

/** The median µs of `reads` runs of `effect` (after a few unmeasured ones). */
const time = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 5; i++) yield* effect
    const samples: Array<number> = []
    for (let i = 0; i < reads; i++) {
      const start = performance.now()
      yield* effect
      samples.push((performance.now() - start) * 1000)
    }
    return median(samples)
  })

const measure = (root: string) =>
  Effect.gen(function* () {
    const directory = path.join(root, "project")
    const elsewhere = path.join(root, "elsewhere")
    const context = yield* CoreHost.build({
      databaseFile: path.join(root, "opencode.db"),
      directory,
      configDir: path.join(root, "config")
    })
    return yield* Effect.gen(function* () {
      const start = Date.now() - sessionCount
      for (let n = 0; n < sessionCount; n++) {
        const created = start + Math.floor(n / 3)
        yield* Sessions.insert(
          {
            id: Identifier.newSessionID(created),
            projectID: "prj_bench" as Session.SessionV2Info["projectID"],
            cost: 0,
            tokens: Session.emptyTokens,
            time: { created, updated: created },
            title: `session ${n}`,
            location: { directory: n % 2 === 0 ? directory : elsewhere }
          },
          "given"
        )
      }
      const events = yield* SessionEvents.Service
      const location: Location.LocationInfo = { directory, project: { id: "prj_bench", directory } }
      const session = yield* Effect.flatMap(Sessions.Service, (sessions) => sessions.create({ location }))
      for (let i = 0; i < messageCount; i += 100) {
        yield* events.append(
          session.id,
          Array.from({ length: Math.min(100, messageCount - i) }, (_, j) =>
            SessionEvents.draft("session.next.prompted", {
              timestamp: Date.now(),
              sessionID: session.id,
              messageID: Identifier.newMessageID(),
              prompt: { text: `prompt ${i + j}` },
              delivery: "queue"
            })
          )
        )
      }

      const rows: Array<{ readonly label: string; readonly name: string; readonly us: number }> = []
      for (const filter of [{}, { directory }] as const) {
        const query = { order: "desc", limit, ...filter } as const
        const tag = "directory" in filter ? "directory" : "all"
        // The filtered pages match the even sessions and the one with the messages.
        const matching = "directory" in filter ? Math.ceil(sessionCount / 2) + 1 : sessionCount + 1
        rows.push({
          label: `sessions (${tag}, ${matching} match), first page`,
          name: `page-depth-sessions-${tag}-first`,
          us: yield* time(Sessions.page({ query, direction: "next" }))
        })
        // The anchors halfway and nine tenths down, found by walking the pages from the first.
        const anchors = new Map<number, Sessions.StoredPage["next"]>()
        let page = yield* Sessions.page({ query, direction: "next" })
        for (let read = limit; page.next !== undefined; read += limit) {
          anchors.set(read, page.next)
          page = yield* Sessions.page({ query, anchor: page.next, direction: "next" })
        }
        for (const share of [0.5, 0.9]) {
          const depth = Math.floor((matching * share) / limit) * limit
          rows.push({
            label: `sessions (${tag}), ${depth} deep`,
            name: `page-depth-sessions-${tag}-${share * 100}`,
            us: yield* time(Sessions.page({ query, anchor: anchors.get(depth), direction: "next" }))
          })
        }
      }
      const pageOf = (anchor?: MessageProjection.PageKey) =>
        MessageProjection.page({ sessionID: session.id, order: "desc", limit, anchor, direction: "next" })
      rows.push({
        label: `messages (${messageCount}), first page`,
        name: "page-depth-messages-first",
        us: yield* time(pageOf())
      })
      const anchors = new Map<number, MessageProjection.PageKey | undefined>()
      let page = yield* pageOf()
      for (let read = limit; page.next !== undefined; read += limit) {
        anchors.set(read, page.next)
        page = yield* pageOf(page.next)
      }
      for (const share of [0.5, 0.9]) {
        const depth = Math.floor((messageCount * share) / limit) * limit
        rows.push({
          label: `messages, ${depth} deep`,
          name: `page-depth-messages-${share * 100}`,
          us: yield* time(pageOf(anchors.get(depth)))
        })
      }
      return rows
    }).pipe(Effect.provide(context))
  }).pipe(Effect.scoped)

export const run = (): Promise<ReadonlyArray<Figure>> =>
  Effect.runPromise(
    Effect.gen(function* () {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-page-depth-"))
      try {
        const rows = yield* measure(root)
        console.log(`pages of ${limit}, newest first, in process (median µs of ${reads} reads)`)
        for (const row of rows) console.log(`  ${row.label.padEnd(48)} ${row.us.toFixed(0).padStart(7)} µs`)
        return rows.map((row): Figure => ({ name: row.name, value: row.us, unit: "us" }))
      } finally {
        fs.rmSync(root, { recursive: true, force: true })
      }
    }).pipe(Logger.withMinimumLogLevel(LogLevel.Warning))
  )

if (isMain(import.meta.url)) {
  run().then((figures) => emit(figures))
}
