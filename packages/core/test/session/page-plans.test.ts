import * as path from "node:path"
import { SqlClient, Statement } from "@effect/sql"
import { it } from "@effect/vitest"
import { type Identifier, Session } from "@opencode-ai/schema"
import { Effect, Schema } from "effect"
import { expect } from "vitest"
import { RequestTable } from "../../src/request/request-table.js"
import { MessageProjection } from "../../src/session/message-projection.js"
import type { SessionCursor } from "../../src/session/session-cursor.js"
import { Sessions } from "../../src/session/sessions.js"
import { Database } from "../../src/storage/database.js"
import { tempDir } from "../fixture.js"

/**
 * Pages read their rows in index order and stop at the limit. Session list pages: SQLite's plan for every
 * statement a page runs (first pages, continuations both ways, the empty-page probe), in both orders
 * and under each filter, uses an index and sorts nothing. Before `0016_session_list_order` the index
 * held `(time_created, id)` while pages order by `(time_created, id DESC)`, and the `directory` and
 * `project_id` indexes held the filter alone, so a directory's page sorted every session of the
 * directory on each request. Message pages walk `(seq, id)` on the unique `(session_id, seq)` index.
 * The Location-wide listings of pending permission and question requests start from the pending
 * requests and look each one's session up by its key, rather than walking the Location's sessions.
 */

const info = (id: string, created: number, directory: string): Session.SessionV2Info => ({
  id: id as Identifier.SessionID,
  projectID: "prj_root" as Session.SessionV2Info["projectID"],
  cost: 0,
  tokens: Session.emptyTokens,
  time: { created, updated: created },
  title: `${Sessions.defaultTitlePrefix}${id}`,
  location: { directory }
})

/** The SQL and parameters of every statement `effect` runs. */
const statementsOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const seen: Array<readonly [string, ReadonlyArray<unknown>]> = []
    const result = yield* effect.pipe(
      Statement.withTransformer((statement) => {
        seen.push(statement.compile())
        return Effect.succeed(statement)
      })
    )
    return { result, seen }
  })

it.scoped("every session list statement reads an index in page order: no sort, in either order, under any filter", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    return yield* Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // Three sessions per millisecond in two directories: ties on time_created are ordered by id.
      for (let i = 0; i < 30; i++) {
        const id = `ses_${String(1000 - i).padStart(4, "0")}`
        yield* Sessions.insert(info(id, 1_000 + Math.floor(i / 3), i % 2 === 0 ? "/repo" : "/repo/app"), "default")
      }
      const filters: ReadonlyArray<Partial<SessionCursor.Query>> = [
        {},
        { directory: "/repo" },
        { project: "prj_root" as SessionCursor.Query["project"] },
        { directory: "/repo", project: "prj_root" as SessionCursor.Query["project"] },
        { search: "ses_09" },
        { directory: "/repo", workspace: "wrk_1" as SessionCursor.Query["workspace"] }
      ]
      const plans: Array<{ readonly anchored: boolean; readonly plan: string }> = []
      for (const filter of filters) {
        for (const order of ["asc", "desc"] as const) {
          const query = { order, limit: 4, ...filter } as SessionCursor.Query
          const first = yield* statementsOf(Sessions.page({ query, direction: "next" }))
          const anchor = first.result.next ?? { time: 1_005, id: "ses_0985" as Identifier.SessionID }
          const next = yield* statementsOf(Sessions.page({ query, anchor, direction: "next" }))
          const previous = yield* statementsOf(Sessions.page({ query, anchor, direction: "previous" }))
          // Past the last row: an empty continuation, which asks what lies beyond its anchor.
          const empty = yield* statementsOf(
            Sessions.page({
              query,
              anchor: { time: order === "asc" ? 9_999 : 0, id: "ses_0000" as Identifier.SessionID },
              direction: "next"
            })
          )
          const statements = [
            ...first.seen.map((statement) => ({ statement, anchored: false })),
            ...[...next.seen, ...previous.seen, ...empty.seen].map((statement) => ({ statement, anchored: true }))
          ]
          for (const { statement, anchored } of statements) {
            const [text, params] = statement
            if (!text.includes("FROM session")) continue
            const rows = yield* sql.unsafe<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)
            plans.push({
              anchored,
              plan: `${order} ${JSON.stringify(filter)}: ${rows.map((row) => row.detail).join(" | ")}`
            })
          }
        }
      }
      expect(plans.filter((plan) => plan.anchored).length).toBeGreaterThanOrEqual(filters.length * 2 * 3)
      for (const { anchored, plan } of plans) {
        expect(plan).not.toMatch(/TEMP B-TREE/)
        expect(plan).toMatch(/USING (COVERING )?INDEX session_(directory_|project_)?list_idx/)
        // A continuation enters the index at its anchor (a range on time_created), in the page's
        // statement and in the check behind it: a deep page reads no row before its own.
        if (anchored) {
          expect(plan).not.toMatch(/SCAN session/)
          for (const access of plan.split(" | ").filter((step) => step.startsWith("SEARCH session"))) {
            expect(access).toMatch(/time_created[<>]\?/)
          }
        }
      }
    }).pipe(Effect.provide(Database.layer({ filename: path.join(dir, "opencode.db") })))
  })
)

it.scoped("pages walk creation order with ties on the millisecond newest (smallest id) first, both ways", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    return yield* Effect.gen(function* () {
      for (let i = 0; i < 12; i++) {
        const id = `ses_${String(1000 - i).padStart(4, "0")}`
        yield* Sessions.insert(info(id, 1_000 + Math.floor(i / 3), "/repo"), "default")
      }
      const records = (page: Sessions.StoredPage) =>
        page.infos.map((json) => (JSON.parse(json) as { readonly id: string }).id)
      for (const filter of [{}, { directory: "/repo" }] as const) {
        const query = { order: "desc", limit: 5, ...filter } as SessionCursor.Query
        const walked: Array<string> = []
        let page = yield* Sessions.page({ query, direction: "next" })
        walked.push(...records(page))
        while (page.next !== undefined) {
          page = yield* Sessions.page({ query, anchor: page.next, direction: "next" })
          walked.push(...records(page))
        }
        // Newest first: the last millisecond's sessions, smallest id first, then the one before.
        expect(walked).toEqual([
          ...["ses_0989", "ses_0990", "ses_0991"],
          ...["ses_0992", "ses_0993", "ses_0994"],
          ...["ses_0995", "ses_0996", "ses_0997"],
          ...["ses_0998", "ses_0999", "ses_1000"]
        ])
        // And back from the last page to the first.
        const back: Array<string> = [...records(page)]
        while (page.previous !== undefined) {
          page = yield* Sessions.page({ query, anchor: page.previous, direction: "previous" })
          back.unshift(...records(page))
        }
        expect(back).toEqual(walked)
      }
    }).pipe(Effect.provide(Database.layer({ filename: path.join(dir, "opencode.db") })))
  })
)

it.scoped("every message page statement reads the session's messages in page order: no sort, in either order", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    return yield* Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const sessionID = "ses_1000" as Identifier.SessionID
      const plans: Array<{ readonly anchored: boolean; readonly plan: string }> = []
      for (const order of ["asc", "desc"] as const) {
        const anchor = { seq: 5, id: "msg_5" }
        const pages = [
          { anchored: false, page: MessageProjection.page({ sessionID, order, limit: 4, direction: "next" }) },
          { anchored: true, page: MessageProjection.page({ sessionID, order, limit: 4, anchor, direction: "next" }) },
          {
            anchored: true,
            page: MessageProjection.page({ sessionID, order, limit: 4, anchor, direction: "previous" })
          }
        ]
        for (const { anchored, page } of pages) {
          for (const [text, params] of (yield* statementsOf(page)).seen) {
            if (!text.includes("FROM message")) continue
            const rows = yield* sql.unsafe<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)
            plans.push({ anchored, plan: `${order}: ${rows.map((row) => row.detail).join(" | ")}` })
          }
        }
      }
      // A first page and two continuations (each empty here, so each also asks what lies beyond), per order.
      expect(plans.filter((plan) => plan.anchored).length).toBeGreaterThanOrEqual(2 * 4)
      for (const { plan } of plans) {
        expect(plan).not.toMatch(/TEMP B-TREE/)
        expect(plan).not.toMatch(/SCAN message/)
        for (const access of plan.split(" | ").filter((step) => step.startsWith("SEARCH message"))) {
          expect(access).toMatch(/USING (COVERING )?INDEX message_session_seq_idx/)
        }
      }
      // A continuation enters the index at its anchor (a range on seq), in the page's statement and in
      // the check behind it: a deep page reads no row before its own.
      for (const { plan } of plans.filter((plan) => plan.anchored)) {
        for (const access of plan.split(" | ").filter((step) => step.startsWith("SEARCH message"))) {
          expect(access).toMatch(/seq[<>]\?/)
        }
      }
    }).pipe(Effect.provide(Database.layer({ filename: path.join(dir, "opencode.db") })))
  })
)

it.scoped(
  "the pending requests of a Location are read from the pending requests, each session looked up by its key",
  () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      return yield* Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const plans: Array<string> = []
        for (const table of ["permission_request", "question_request"] as const) {
          const reads = RequestTable.reads(sql, table, { Id: Schema.String, Info: Schema.String })
          for (const location of [{ directory: "/repo" }, { directory: "/repo", workspaceID: "wrk_1" }]) {
            for (const [text, params] of (yield* statementsOf(reads.pendingIn(location))).seen) {
              const rows = yield* sql.unsafe<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)
              plans.push(`${table}: ${rows.map((row) => row.detail).join(" | ")}`)
            }
          }
        }
        expect(plans).toHaveLength(4)
        for (const plan of plans) {
          expect(plan).toMatch(/SEARCH located .*\(id=\?\)/)
          expect(plan).not.toMatch(/session_directory_list_idx/)
        }
      }).pipe(Effect.provide(Database.layer({ filename: path.join(dir, "opencode.db") })))
    })
)
