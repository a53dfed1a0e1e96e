import { it } from "@effect/vitest"
import { Errors, Identifier, type SessionMessages } from "@opencode-ai/schema"
import { Effect, Exit, Schema } from "effect"
import { describe, expect } from "vitest"
import { SessionInput } from "../../src/input/session-input.js"
import { InstructionCheckpoint } from "../../src/instructions/instruction-checkpoint.js"
import { Instructions } from "../../src/instructions/instructions.js"
import { MessageCursor } from "../../src/session/message-cursor.js"
import { SessionCursor } from "../../src/session/session-cursor.js"
import { SessionEvents } from "../../src/session/session-events.js"
import { SessionHistory } from "../../src/session/session-history.js"
import { createSession, withCore } from "./world.js"

const model = { id: "qwen", providerID: "local" }

/** Admits and promotes one prompt; resolves with its message id. */
const say = (sessionID: Identifier.SessionID, text: string) =>
  Effect.gen(function* () {
    const input = yield* SessionInput.Service
    const admitted = yield* input.admit(sessionID, { prompt: { text } })
    yield* input.promoteSteers(sessionID)
    return admitted.id
  })

/** One whole text step; resolves with the assistant message id. */
const answer = (sessionID: Identifier.SessionID, text: string) =>
  Effect.gen(function* () {
    const events = yield* SessionEvents.Service
    const assistantMessageID = Identifier.newMessageID()
    const at = { timestamp: Date.now(), sessionID: sessionID as Identifier.SessionID, assistantMessageID }
    yield* events.append(sessionID, [
      SessionEvents.draft("session.next.step.started", { ...at, agent: "build", model }),
      SessionEvents.draft("session.next.text.started", { ...at, textID: "t" }),
      SessionEvents.draft("session.next.text.ended", { ...at, textID: "t", text }),
      SessionEvents.draft("session.next.step.ended", {
        ...at,
        finish: "stop",
        cost: 0,
        tokens: { input: 1, output: 1, reasoning: 0, cache: { read: 0, write: 0 } }
      })
    ])
    return assistantMessageID
  })

const texts = (messages: ReadonlyArray<SessionMessages.SessionMessage>) =>
  messages.map((message) =>
    message.type === "assistant"
      ? `assistant:${message.content.map((item) => (item.type === "text" ? item.text : item.type)).join("")}`
      : `${message.type}:${"text" in message ? message.text : "summary" in message ? message.summary : ""}`
  )

describe("SessionHistory.messages", () => {
  it.scoped(
    "walks every message once in both orders with cursors; newest first by default; messages added meanwhile never shift a page",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const history = yield* SessionHistory.Service
          const session = yield* createSession(w)
          const ids: Array<string> = []
          for (let i = 0; i < 12; i++)
            ids.push(i % 2 === 0 ? yield* say(session.id, `q${i}`) : yield* answer(session.id, `a${i}`))

          const first = yield* history.messages(session.id, { limit: 5 })
          expect(first.data.map((m) => m.id)).toEqual(ids.slice(-5).reverse())
          expect(first.cursor.previous).toBeUndefined()

          const walk = function* (order: "asc" | "desc", limit: number) {
            const seen: Array<string> = []
            let page = yield* history.messages(session.id, { order, limit })
            for (;;) {
              seen.push(...page.data.map((m) => m.id))
              if (page.cursor.next === undefined) break
              page = yield* history.messages(session.id, { cursor: page.cursor.next })
            }
            // And back again from the last page.
            const back: Array<string> = []
            for (;;) {
              back.unshift(...page.data.map((m) => m.id))
              if (page.cursor.previous === undefined) break
              page = yield* history.messages(session.id, { cursor: page.cursor.previous })
            }
            return { seen, back }
          }
          for (const [order, limit] of [
            ["asc", 5],
            ["desc", 4],
            ["asc", 12],
            ["desc", 200]
          ] as const) {
            const expected = order === "asc" ? ids : [...ids].reverse()
            const { seen, back } = yield* walk(order, limit)
            expect(seen).toEqual(expected)
            expect(back).toEqual(expected)
          }

          // A page read from a cursor after new messages landed starts exactly after its anchor.
          const page = yield* history.messages(session.id, { order: "asc", limit: 3 })
          const late = yield* say(session.id, "late")
          const rest = yield* history.messages(session.id, { cursor: page.cursor.next! })
          expect(rest.data.map((m) => m.id)).toEqual(ids.slice(3, 6))
          const newest = yield* history.messages(session.id, { limit: 1 })
          expect(newest.data.map((m) => m.id)).toEqual([late])
        })
      )
  )

  it.scoped("cursor discipline: a continuation may repeat or change limit, not order; bound to its session", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const history = yield* SessionHistory.Service
        const session = yield* createSession(w)
        const other = yield* createSession(w)
        for (const text of ["a", "b", "c"]) yield* say(session.id, text)
        yield* say(other.id, "x")
        const cursor = (yield* history.messages(session.id, { limit: 1 })).cursor.next!

        const tag = <A, E extends { _tag: string }>(effect: Effect.Effect<A, E>) =>
          Effect.map(Effect.flip(effect), (error) => ({ tag: error._tag, field: (error as { field?: string }).field }))
        expect(yield* tag(history.messages(session.id, { cursor, order: "asc" }))).toEqual({
          tag: "InvalidCursorError",
          field: undefined
        })
        // Upstream clients repeat `limit` on every page: it is the continuation's page size.
        expect((yield* history.messages(session.id, { cursor, limit: 1 })).data).toHaveLength(1)
        expect((yield* history.messages(session.id, { cursor, limit: 2 })).data).toHaveLength(2)
        expect(yield* tag(history.messages(session.id, { cursor, limit: 0 }))).toEqual({
          tag: "InvalidRequestError",
          field: "limit"
        })
        expect(yield* tag(history.messages(other.id, { cursor }))).toEqual({
          tag: "InvalidCursorError",
          field: undefined
        })
        expect(yield* tag(history.messages(session.id, { cursor: "!!garbage" }))).toEqual({
          tag: "InvalidCursorError",
          field: undefined
        })
        const sessionCursor = SessionCursor.encode({
          query: { order: "desc", limit: 1 },
          anchor: { time: 1, id: "ses_x" },
          direction: "next"
        })
        expect(yield* tag(history.messages(session.id, { cursor: sessionCursor }))).toEqual({
          tag: "InvalidCursorError",
          field: undefined
        })
        for (const limit of [0, 201, 1.5]) {
          expect(yield* tag(history.messages(session.id, { limit }))).toEqual({
            tag: "InvalidRequestError",
            field: "limit"
          })
        }
        expect(yield* Effect.exit(history.messages(Identifier.SessionID.make("ses_missing")))).toEqual(
          Exit.fail(Errors.SessionNotFoundError.of("ses_missing"))
        )
        // The payload carries the session, order, limit, anchor and direction.
        const payload = yield* MessageCursor.decode(cursor)
        expect(payload).toMatchObject({
          query: { sessionID: session.id, order: "desc", limit: 1 },
          direction: "next",
          anchor: { id: expect.stringMatching(/^msg_/) }
        })
      })
    )
  )
})

describe("SessionHistory.message", () => {
  it.scoped(
    "a message of another session, or none at all, is MessageNotFoundError; an unknown session is SessionNotFoundError",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const history = yield* SessionHistory.Service
          const mine = yield* createSession(w)
          const theirs = yield* createSession(w)
          const id = yield* say(mine.id, "hello")
          expect(yield* history.message(mine.id, id)).toMatchObject({ id, type: "user", text: "hello" })
          const notFound = (sessionID: Identifier.SessionID, messageID: Identifier.MessageID) =>
            new Errors.MessageNotFoundError({ sessionID, messageID, message: `Message not found: ${messageID}` })
          expect(yield* Effect.exit(history.message(theirs.id, id))).toEqual(Exit.fail(notFound(theirs.id, id)))
          expect(yield* Effect.exit(history.message(mine.id, Identifier.MessageID.make("msg_nothing")))).toEqual(
            Exit.fail(notFound(mine.id, Identifier.MessageID.make("msg_nothing")))
          )
          expect(yield* Effect.exit(history.message(Identifier.SessionID.make("ses_missing"), id))).toEqual(
            Exit.fail(Errors.SessionNotFoundError.of("ses_missing"))
          )
          // Pending input is not history yet.
          const pending = yield* (yield* SessionInput.Service).admit(mine.id, { prompt: { text: "later" } })
          expect(yield* Effect.exit(history.message(mine.id, pending.id))).toEqual(
            Exit.fail(notFound(mine.id, pending.id))
          )
        })
      )
  )
})

describe("SessionHistory.context", () => {
  it.scoped(
    "chronological; Instruction Updates at or before the baseline seq are left out; the latest compaction cuts what came before",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const history = yield* SessionHistory.Service
          const checkpoint = yield* InstructionCheckpoint.Service
          const events = yield* SessionEvents.Service
          const session = yield* createSession(w)
          let rule = "tabs"
          const source = Instructions.make({
            key: "test/rule",
            codec: Schema.String,
            load: Effect.sync(() => rule),
            baseline: (value) => `Rule: ${value}`,
            update: (value) => `Rule now: ${value}`
          })
          const prepare = checkpoint.prepare(session.id, source) as Effect.Effect<InstructionCheckpoint.Preparation>

          yield* prepare
          yield* say(session.id, "q1")
          yield* answer(session.id, "a1")
          rule = "spaces"
          yield* prepare
          yield* say(session.id, "q2")
          yield* events.append(session.id, [
            SessionEvents.draft("session.next.synthetic", {
              timestamp: Date.now(),
              sessionID: session.id,
              messageID: Identifier.newMessageID(),
              text: "note"
            })
          ])
          expect(texts(yield* history.context(session.id))).toEqual([
            "user:q1",
            "assistant:a1",
            "system:Rule now: spaces",
            "user:q2",
            "synthetic:note"
          ])

          // After a compaction the rebaseline folds the update in: it leaves the context, stays in the transcript.
          const [compaction] = yield* events.append(session.id, [
            SessionEvents.draft("session.next.compaction.ended", {
              timestamp: Date.now(),
              sessionID: session.id,
              messageID: Identifier.newMessageID(),
              reason: "auto",
              text: "summary of q1..q2",
              recent: "q2"
            })
          ])
          yield* say(session.id, "q3")
          // Before the rebaseline, the stored baseline seq still admits the update but the compaction cuts it.
          expect(texts(yield* history.context(session.id))).toEqual(["compaction:summary of q1..q2", "user:q3"])
          yield* checkpoint.recordCompaction(session.id, compaction!.durable.seq)
          const rebased = (yield* prepare) as InstructionCheckpoint.Prepared
          expect(rebased.baseline).toBe("Rule: spaces")
          rule = "both"
          yield* prepare
          expect(texts(yield* history.context(session.id))).toEqual([
            "compaction:summary of q1..q2",
            "user:q3",
            "system:Rule now: both"
          ])
          // An explicit baseline seq (the runner's Prepared.baselineSeq) is honoured as given.
          const everything = yield* history.context(session.id, { baselineSeq: 0 })
          expect(texts(everything)).toEqual(["compaction:summary of q1..q2", "user:q3", "system:Rule now: both"])
          expect(texts(yield* history.context(session.id, { baselineSeq: Number.MAX_SAFE_INTEGER }))).toEqual([
            "compaction:summary of q1..q2",
            "user:q3"
          ])

          const transcript = yield* history.messages(session.id, { order: "asc", limit: 200 })
          expect(texts(transcript.data).filter((text) => text.startsWith("system:"))).toEqual([
            "system:Rule now: spaces",
            "system:Rule now: both"
          ])
        })
      )
  )

  it.scoped(
    "without a checkpoint every Instruction Update is left out (the next Step renders a complete baseline)",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const history = yield* SessionHistory.Service
          const checkpoint = yield* InstructionCheckpoint.Service
          const session = yield* createSession(w)
          let rule = "a"
          const source = Instructions.make({
            key: "test/rule",
            codec: Schema.String,
            load: Effect.sync(() => rule),
            baseline: (value) => `Rule: ${value}`,
            update: (value) => `Rule now: ${value}`
          })
          yield* checkpoint.prepare(session.id, source)
          rule = "b"
          yield* checkpoint.prepare(session.id, source)
          yield* say(session.id, "q")
          expect(texts(yield* history.context(session.id))).toEqual(["system:Rule now: b", "user:q"])
          yield* checkpoint.reset(session.id)
          expect(texts(yield* history.context(session.id))).toEqual(["user:q"])
          expect(yield* Effect.exit(history.context(Identifier.SessionID.make("ses_missing")))).toEqual(
            Exit.fail(Errors.SessionNotFoundError.of("ses_missing"))
          )
        })
      )
  )
})

describe("SessionHistory.history", () => {
  it.scoped(
    "slices the durable session.next log after a seq, without session.created; hasMore says whether it continues",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const history = yield* SessionHistory.Service
          const session = yield* createSession(w)
          yield* say(session.id, "q1")
          yield* answer(session.id, "a1")
          const all = yield* history.history(session.id)
          expect(all.hasMore).toBe(false)
          expect(all.data.map((event) => [event.durable?.seq, event.type])).toEqual([
            [1, "session.next.prompt.admitted"],
            [2, "session.next.prompted"],
            [3, "session.next.step.started"],
            [4, "session.next.text.started"],
            [5, "session.next.text.ended"],
            [6, "session.next.step.ended"]
          ])
          expect(all.data[4]).toMatchObject({
            type: "session.next.text.ended",
            data: { sessionID: session.id, textID: "t", text: "a1" }
          })
          const slice = yield* history.history(session.id, { after: 2, limit: 2 })
          expect({ seqs: slice.data.map((event) => event.durable?.seq), hasMore: slice.hasMore }).toEqual({
            seqs: [3, 4],
            hasMore: true
          })
          const tail = yield* history.history(session.id, { after: 4, limit: 2 })
          expect({ seqs: tail.data.map((event) => event.durable?.seq), hasMore: tail.hasMore }).toEqual({
            seqs: [5, 6],
            hasMore: false
          })
          expect(yield* history.history(session.id, { after: 6 })).toEqual({ data: [], hasMore: false })

          const field = (input: SessionHistory.HistoryInput) =>
            Effect.map(Effect.flip(history.history(session.id, input)), (e) => (e as Errors.InvalidRequestError).field)
          expect(yield* field({ after: -1 })).toBe("after")
          expect(yield* field({ limit: 0 })).toBe("limit")
          expect(yield* field({ limit: 1001 })).toBe("limit")
          expect(yield* Effect.exit(history.history(Identifier.SessionID.make("ses_missing")))).toEqual(
            Exit.fail(Errors.SessionNotFoundError.of("ses_missing"))
          )
        })
      )
  )
})
