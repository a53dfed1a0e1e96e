import * as path from "node:path"
import { it } from "@effect/vitest"
import type { Identifier, Location } from "@opencode-ai/schema"
import { Arbitrary, Clock, Effect, FastCheck as fc, Schema } from "effect"
import { expect } from "vitest"
import { SessionCursor } from "../../src/session/session-cursor.js"
import { Sessions } from "../../src/session/sessions.js"
import { TestDatabase } from "../../src/testing/test-database.js"
import { tempDir } from "../fixture.js"

/** mulberry32: a small seeded generator, so every run walks the same interleaving. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** A clock stopped at `millis`: cheaper than moving the TestClock before each of 1,000 creates. */
const clockAt = (millis: number): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => millis,
  currentTimeMillis: Effect.succeed(millis),
  unsafeCurrentTimeNanos: () => BigInt(millis) * 1_000_000n,
  currentTimeNanos: Effect.succeed(BigInt(millis) * 1_000_000n),
  sleep: () => Effect.void
})

const location: Location.LocationInfo = { directory: "/repo", project: { id: "prj", directory: "/repo" } }
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

it("the payload round-trips through the opaque token", () => {
  const payload: SessionCursor.Payload = {
    query: { order: "asc", limit: 7, search: "a%b", directory: "/d", workspace: "wrk_1", project: "p", subpath: "s" },
    anchor: { time: 12, id: "ses_x" },
    direction: "previous"
  }
  const token = SessionCursor.encode(payload)
  expect(token).toMatch(/^[A-Za-z0-9_-]+$/)
  expect(Effect.runSync(SessionCursor.decode(token))).toEqual(payload)
})

it("a token is byte for byte the one the Schema codec encodes, for any payload (absent filters included)", () => {
  const encodeToken = Schema.encodeSync(SessionCursor.Token)
  fc.assert(
    fc.property(Arbitrary.make(SessionCursor.Payload), (payload) => {
      expect(SessionCursor.encode(payload)).toBe(encodeToken(payload))
    }),
    { numRuns: 500 }
  )
})

it.scoped(
  "walking next then previous over 1,000 sessions, while new ones land on both sides of the cursor, visits every earlier session exactly once in order",
  () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const next = random(20250101)
      const base = Date.UTC(2025, 0, 1)
      const sessionID = () =>
        `ses_${Math.floor(next() * 0xffff_ffff_ffff)
          .toString(16)
          .padStart(
            12,
            "0"
          )}${Array.from({ length: 14 }, () => BASE62[Math.floor(next() * 62)]).join("")}` as Identifier.SessionID

      yield* Effect.gen(function* () {
        const sessions = yield* Sessions.Service
        // Few distinct times, so most neighbours tie on time and the id breaks the tie; half the ids
        // are explicit random ones, so they do not follow creation order.
        const createSomewhere = Effect.suspend(() =>
          sessions
            .create({ ...(next() < 0.5 ? { id: sessionID() } : {}), location })
            .pipe(Effect.withClock(clockAt(base + Math.floor(next() * 40))))
        )
        const insertSome = Effect.suspend(() => Effect.replicateEffect(createSomewhere, Math.floor(next() * 4)))
        yield* Effect.replicateEffect(createSomewhere, 1000)

        for (const [order, limit] of [
          ["desc", 37],
          ["asc", 64]
        ] as const) {
          const before: Array<Identifier.SessionID> = []
          for (let page = yield* sessions.list({ order, limit: 200 }); ; ) {
            before.push(...page.data.map((session) => session.id))
            if (page.cursor.next === undefined) break
            page = yield* sessions.list({ cursor: page.cursor.next })
          }
          const earlier = new Set(before)
          expect(earlier.size).toBeGreaterThanOrEqual(1000)
          // The expected order, computed independently: creation order is time ascending, then id
          // descending (session ids count down), with byte-wise id comparison.
          const infos = yield* Effect.forEach(before, (id) => sessions.get(id))
          const expected = infos
            .map((info) => ({ time: info.time.created, id: info.id }))
            .sort((a, b) => a.time - b.time || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
            .map((key) => key.id)
          if (order === "desc") expected.reverse()
          expect(before).toEqual(expected)

          const walk = (first: Sessions.Page, direction: "next" | "previous") =>
            Effect.gen(function* () {
              const pages = [first]
              let page = first
              while (page.cursor[direction] !== undefined) {
                yield* insertSome
                page = yield* sessions.list({ cursor: page.cursor[direction] })
                expect(page.data.length).toBeGreaterThan(0)
                expect(page.data.length).toBeLessThanOrEqual(limit)
                pages.push(page)
              }
              return pages
            })

          const forward = yield* walk(yield* sessions.list({ order, limit }), "next")
          const forwardIDs = forward.flatMap((page) => page.data.map((session) => session.id))
          expect(new Set(forwardIDs).size).toBe(forwardIDs.length)
          expect(forwardIDs.filter((id) => earlier.has(id))).toEqual(expected)
          expect(forward[0]?.cursor.previous).toBeUndefined()

          const backward = yield* walk(forward.at(-1)!, "previous")
          const backwardIDs = [...backward].reverse().flatMap((page) => page.data.map((session) => session.id))
          expect(new Set(backwardIDs).size).toBe(backwardIDs.length)
          expect(backwardIDs.filter((id) => earlier.has(id))).toEqual(expected)
          expect(backward.at(-1)?.cursor.previous).toBeUndefined()
          // New sessions were inserted on both sides while walking, so the walks saw some of them.
          expect(forwardIDs.length + backwardIDs.length).toBeGreaterThan(2 * expected.length)
        }
      }).pipe(Effect.provide(TestDatabase.coreLayer({ databaseFile: path.join(dir, "opencode.db"), directory: dir })))
    }),
  120_000
)
