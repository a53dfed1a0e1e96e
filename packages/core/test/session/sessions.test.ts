import * as path from "node:path"
import { it } from "@effect/vitest"
import { Errors, Event, Identifier, type Location, Session } from "@opencode-ai/schema"
import { Effect, Exit, Schema, TestClock } from "effect"
import { expect } from "vitest"
import type { Core } from "../../src/core.js"
import { EventLog } from "../../src/event/event-log.js"
import { SessionCursor } from "../../src/session/session-cursor.js"
import { Sessions } from "../../src/session/sessions.js"
import { TestDatabase } from "../../src/testing/test-database.js"
import { tempDir } from "../fixture.js"

/** Runs `body` against a Core over a fresh database file. */
const withCore = <A, E>(body: Effect.Effect<A, E, Core.Services>) =>
  Effect.flatMap(tempDir, (dir) =>
    Effect.provide(body, TestDatabase.coreLayer({ databaseFile: path.join(dir, "opencode.db"), directory: dir }))
  )

const project = { id: "prj_root", directory: "/repo" }
const at = (directory: string, workspaceID?: string): Location.LocationInfo => ({
  directory,
  ...(workspaceID === undefined ? {} : { workspaceID: workspaceID as Identifier.WorkspaceID }),
  project
})

const ids = (page: Sessions.Page) => page.data.map((session) => session.id)

it.scoped("create fills the defaults, appends session.created as the log origin (seq 0) and get returns it", () =>
  withCore(
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const log = yield* EventLog.Service
      yield* TestClock.setTime(Date.UTC(2025, 0, 2, 3, 4, 5, 6))
      const model = { id: "qwen", providerID: "local" }
      const created = yield* sessions.create({ agent: "build", model, location: at("/repo/packages/app", "wrk_1") })

      expect(created.id).toMatch(/^ses_/)
      expect(Identifier.timestamp(created.id, "descending")).toBeGreaterThanOrEqual(Date.UTC(2025, 0, 2, 3, 4, 5, 6))
      expect(created).toEqual({
        id: created.id,
        projectID: "prj_root",
        agent: "build",
        model,
        cost: 0,
        tokens: Session.emptyTokens,
        time: { created: Date.UTC(2025, 0, 2, 3, 4, 5, 6), updated: Date.UTC(2025, 0, 2, 3, 4, 5, 6) },
        title: "New session - 2025-01-02T03:04:05.006Z",
        location: { directory: "/repo/packages/app", workspaceID: "wrk_1" },
        subpath: path.join("packages", "app")
      })
      expect(yield* sessions.get(created.id)).toEqual(created)

      // The origin is not one of the session's events (they start at seq 1): only a read from -1 sees it.
      expect(yield* log.read(created.id)).toEqual([])
      const events = yield* log.read(created.id, { after: -1 })
      expect(events).toHaveLength(1)
      const decoded = yield* Schema.decodeUnknown(Event.SessionOrigin)(events[0])
      expect(decoded.durable).toEqual({ aggregateID: created.id, seq: 0, version: 1 })
      expect(decoded.data).toEqual({ sessionID: created.id, info: created })
    })
  )
)

it.scoped("subpath is omitted at the project root and outside it", () =>
  withCore(
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const root = yield* sessions.create({ location: at("/repo") })
      const outside = yield* sessions.create({ location: at("/elsewhere") })
      const sibling = yield* sessions.create({ location: at("/repository") })
      expect("subpath" in root).toBe(false)
      expect("subpath" in outside).toBe(false)
      expect("subpath" in sibling).toBe(false)
      expect("workspaceID" in root.location).toBe(false)
    })
  )
)

it.scoped("get of an unknown session fails with SessionNotFoundError", () =>
  withCore(
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const exit = yield* Effect.exit(sessions.get(Identifier.SessionID.make("ses_missing")))
      expect(exit).toEqual(Exit.fail(Errors.SessionNotFoundError.of("ses_missing")))
    })
  )
)

it.scoped("ensureExists answers as get does, without the record: the same SessionNotFoundError for an unknown id", () =>
  withCore(
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const created = yield* sessions.create({ location: at("/repo") })
      expect(yield* Effect.exit(sessions.ensureExists(created.id))).toEqual(Exit.void)
      const missing = Identifier.SessionID.make("ses_missing")
      expect(yield* Effect.exit(sessions.ensureExists(missing))).toEqual(yield* Effect.exit(sessions.get(missing)))
    })
  )
)

it.scoped("create with an existing explicit id returns the stored session and appends nothing, even when racing", () =>
  withCore(
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const log = yield* EventLog.Service
      const id = Identifier.newSessionID()
      const first = yield* sessions.create({ id, agent: "build", location: at("/repo") })
      yield* TestClock.adjust(1000)
      const again = yield* sessions.create({ id, agent: "plan", location: at("/repo/other") })
      expect(again).toEqual(first)
      expect(yield* log.read(id, { after: -1 })).toHaveLength(1)

      const raced = Identifier.newSessionID()
      const results = yield* Effect.forEach(
        ["a", "b", "c", "d", "e"],
        (agent) => sessions.create({ id: raced, agent, location: at("/repo") }),
        { concurrency: "unbounded" }
      )
      expect(new Set(results.map((session) => JSON.stringify(session))).size).toBe(1)
      expect(yield* log.read(raced, { after: -1 })).toHaveLength(1)
    })
  )
)

it.scoped("list orders newest first by default, asc on request, and applies the exact filters", () =>
  withCore(
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const a = yield* sessions.create({ location: at("/repo") })
      yield* TestClock.adjust(10)
      const b = yield* sessions.create({ location: at("/repo/pkg", "wrk_x") })
      yield* TestClock.adjust(10)
      const c = yield* sessions.create({
        location: { directory: "/other", project: { id: "prj_other", directory: "/other" } }
      })
      yield* TestClock.adjust(10)
      const d = yield* sessions.create({ location: at("/repo/pkg") })

      expect(ids(yield* sessions.list())).toEqual([d.id, c.id, b.id, a.id])
      expect(ids(yield* sessions.list({ order: "desc" }))).toEqual([d.id, c.id, b.id, a.id])
      expect(ids(yield* sessions.list({ order: "asc" }))).toEqual([a.id, b.id, c.id, d.id])
      expect(ids(yield* sessions.list({ directory: "/repo/pkg" }))).toEqual([d.id, b.id])
      expect(ids(yield* sessions.list({ workspace: "wrk_x" }))).toEqual([b.id])
      expect(ids(yield* sessions.list({ project: "prj_other" }))).toEqual([c.id])
      expect(ids(yield* sessions.list({ project: "prj_root", order: "asc" }))).toEqual([a.id, b.id, d.id])
      expect(ids(yield* sessions.list({ subpath: "pkg" }))).toEqual([d.id, b.id])
      expect(ids(yield* sessions.list({ subpath: "pkg", workspace: "wrk_x" }))).toEqual([b.id])
      expect(ids(yield* sessions.list({ directory: "/nowhere" }))).toEqual([])
      expect((yield* sessions.list()).cursor).toEqual({})
    })
  )
)

it.scoped("limit defaults to 50, and values outside 1..200 are an InvalidRequestError on limit", () =>
  withCore(
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      yield* Effect.forEach(Array.from({ length: 51 }), () => sessions.create({ location: at("/repo") }), {
        discard: true
      })
      const page = yield* sessions.list()
      expect(page.data).toHaveLength(50)
      expect(page.cursor.next).toBeDefined()
      expect((yield* sessions.list({ limit: 200 })).data).toHaveLength(51)
      expect((yield* sessions.list({ limit: 1 })).data).toHaveLength(1)
      for (const limit of [0, 201, 1.5, -1]) {
        const exit = yield* Effect.exit(sessions.list({ limit }))
        expect(exit).toEqual(
          Exit.fail(expect.objectContaining({ _tag: "InvalidRequestError", kind: "query", field: "limit" }))
        )
      }
    })
  )
)

it.scoped("search is a case-insensitive title substring with LIKE wildcards matched literally", () =>
  withCore(
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      // Titled at creation through the owner (a given title is kept as is).
      const [percent, underscore, plain, backslash] = yield* Effect.forEach(
        ["Fix 100% of Bugs", "rename snake_case", "Fix 1000 bugs in snakeXcase", "path C:\\temp"],
        (title) => Effect.zipLeft(sessions.create({ location: at("/repo"), title }), TestClock.adjust(1))
      )

      const search = (text: string) => Effect.map(sessions.list({ search: text, order: "asc" }), ids)
      expect(yield* search("fix 100")).toEqual([percent!.id, plain!.id])
      expect(yield* search("100%")).toEqual([percent!.id])
      expect(yield* search("%")).toEqual([percent!.id])
      expect(yield* search("BUGS")).toEqual([percent!.id, plain!.id])
      expect(yield* search("snake_case")).toEqual([underscore!.id])
      expect(yield* search("_")).toEqual([underscore!.id])
      expect(yield* search("\\")).toEqual([backslash!.id])
      expect(yield* search("nothing like it")).toEqual([])
    })
  )
)

it.scoped("pages link through next and previous cursors in query order", () =>
  withCore(
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const created = yield* Effect.forEach(Array.from({ length: 5 }), () =>
        Effect.zipLeft(sessions.create({ location: at("/repo") }), TestClock.adjust(1))
      )
      const newestFirst = created.map((session) => session.id).reverse()

      const first = yield* sessions.list({ limit: 2 })
      expect(ids(first)).toEqual(newestFirst.slice(0, 2))
      expect(first.cursor.previous).toBeUndefined()
      const second = yield* sessions.list({ cursor: first.cursor.next! })
      expect(ids(second)).toEqual(newestFirst.slice(2, 4))
      expect(second.cursor.previous).toBeDefined()
      const third = yield* sessions.list({ cursor: second.cursor.next! })
      expect(ids(third)).toEqual(newestFirst.slice(4))
      expect(third.cursor.next).toBeUndefined()

      const back = yield* sessions.list({ cursor: third.cursor.previous! })
      expect(ids(back)).toEqual(newestFirst.slice(2, 4))
      const start = yield* sessions.list({ cursor: back.cursor.previous! })
      expect(ids(start)).toEqual(newestFirst.slice(0, 2))
      expect(start.cursor.previous).toBeUndefined()
      expect(start.cursor.next).toBeDefined()

      // A session created after the first page was read is "before" it in newest-first order.
      const newer = yield* sessions.create({ location: at("/repo") })
      const refreshed = yield* sessions.list({ cursor: back.cursor.previous! })
      expect(ids(refreshed)).toEqual(newestFirst.slice(0, 2))
      expect(refreshed.cursor.previous).toBeDefined()
      expect(ids(yield* sessions.list({ cursor: refreshed.cursor.previous! }))).toEqual([newer.id])

      const payload = yield* SessionCursor.decode(first.cursor.next!)
      expect(payload).toEqual({
        query: { order: "desc", limit: 2 },
        anchor: { time: created[3]!.time.created, id: newestFirst[1] },
        direction: "next"
      })
    })
  )
)

it.scoped("a continuation may repeat limit and its filters (as upstream clients do), not order or another filter", () =>
  withCore(
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      yield* Effect.forEach(Array.from({ length: 3 }), () => sessions.create({ location: at("/repo") }), {
        discard: true
      })
      const cursor = (yield* sessions.list({ limit: 1, search: "session", directory: "/repo" })).cursor.next!

      // Upstream clients send the first page's parameters again with each cursor.
      expect((yield* sessions.list({ cursor, limit: 1, search: "session", directory: "/repo" })).data).toHaveLength(1)
      // A new limit is the continuation's page size.
      expect((yield* sessions.list({ cursor, limit: 5 })).data).toHaveLength(2)
      const bad = yield* Effect.exit(sessions.list({ cursor, limit: 500 }))
      expect(bad).toEqual(Exit.fail(expect.objectContaining({ _tag: "InvalidRequestError", field: "limit" })))

      const fields = { order: "asc", search: "x", directory: "/other", workspace: "wrk_1", project: "p", subpath: "s" }
      for (const [field, value] of Object.entries(fields)) {
        const exit = yield* Effect.exit(sessions.list({ cursor, [field]: value }))
        expect(exit).toEqual(Exit.fail(expect.objectContaining({ _tag: "InvalidCursorError" })))
      }
      // Absent fields do not count, even when spelled out as undefined.
      expect((yield* sessions.list({ cursor, order: undefined })).data).toHaveLength(1)

      const tampered = Buffer.from(
        JSON.stringify({ query: { order: "desc", limit: 9999 }, anchor: { time: 0, id: "x" }, direction: "next" })
      ).toString("base64url")
      for (const garbage of ["garbage!", "", Buffer.from("{}").toString("base64url"), tampered]) {
        const exit = yield* Effect.exit(sessions.list({ cursor: garbage }))
        expect(exit).toEqual(Exit.fail(expect.objectContaining({ _tag: "InvalidCursorError" })))
        expect(
          Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error instanceof Errors.InvalidCursorError
        ).toBe(true)
      }
    })
  )
)

it.scoped("sessions created in the same millisecond still list newest first, and oldest first with asc", () =>
  withCore(
    Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      // The TestClock does not move: all three share one time_created.
      const created: Array<Session.SessionV2Info> = []
      for (let i = 0; i < 3; i++) created.push(yield* sessions.create({ location: at("/repo") }))
      expect(new Set(created.map((s) => s.time.created)).size).toBe(1)
      const newestFirst = created.map((s) => s.id).reverse()
      expect(ids(yield* sessions.list())).toEqual(newestFirst)
      expect(ids(yield* sessions.list({ order: "asc" }))).toEqual([...newestFirst].reverse())
      // And the same across pages of one.
      const walked: Array<string> = []
      let page = yield* sessions.list({ limit: 1 })
      walked.push(...ids(page))
      while (page.cursor.next !== undefined) {
        page = yield* sessions.list({ cursor: page.cursor.next })
        walked.push(...ids(page))
      }
      expect(walked).toEqual(newestFirst)
    })
  )
)

it("titleFromPrompt takes the first non-empty line, collapsed, cut near 60 characters on a word", () => {
  expect(Sessions.titleFromPrompt("\n\n  Fix   the login bug  \nmore")).toBe("Fix the login bug")
  expect(Sessions.titleFromPrompt("   \n ")).toBeUndefined()
  const long = "Refactor the session runner so that every durable transition commits in one transaction"
  const title = Sessions.titleFromPrompt(long)!
  expect(title.endsWith("…")).toBe(true)
  expect(title.length).toBeLessThanOrEqual(61)
  expect(long.startsWith(title.slice(0, -1))).toBe(true)
})
