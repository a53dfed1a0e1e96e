import { SqlClient } from "@effect/sql"
import { it } from "@effect/vitest"
import { Errors, type Event, Identifier, type Session, type SessionMessages } from "@opencode-ai/schema"
import { Cause, Context, Effect, Exit, Layer, Option, Schema } from "effect"
import { describe, expect } from "vitest"
import { EventLog } from "../../src/event/event-log.js"
import { InstructionCheckpoint } from "../../src/instructions/instruction-checkpoint.js"
import { Instructions } from "../../src/instructions/instructions.js"
import { MessageProjection } from "../../src/session/message-projection.js"
import { RevertedMessages } from "../../src/session/reverted-messages.js"
import { SessionEvents } from "../../src/session/session-events.js"
import { SessionHistory } from "../../src/session/session-history.js"
import { Sessions } from "../../src/session/sessions.js"
import { createSession, withCore, world } from "./world.js"

type Message = SessionMessages.SessionMessage
type Type = SessionEvents.Type

const sessionID = "ses_projection" as Identifier.SessionID
const assistantMessageID = "msg_assistant" as Identifier.MessageID
const model = { id: "qwen", providerID: "local" }
const tokens = { input: 10, output: 5, reasoning: 2, cache: { read: 3, write: 1 } }

let clock = 1000
/** A decoded durable event of `type` with `data` (timestamp and sessionID filled in). */
const event = <T extends Type>(
  type: T,
  data: Omit<SessionEvents.DataOf<T>, "timestamp" | "sessionID">
): Event.SessionDurableEvent =>
  ({
    id: "evt_test" as Identifier.EventID,
    type,
    durable: { aggregateID: sessionID, seq: 1, version: 1 },
    data: { timestamp: ++clock, sessionID, ...data }
  }) as Event.SessionDurableEvent

/** Folds `events` from nothing into the message they target. */
const fold = (events: ReadonlyArray<Event.SessionDurableEvent>, start?: Message): Message | undefined =>
  events.reduce<Message | undefined>((message, next) => MessageProjection.reduce(message, next), start)

const started = (at: number) => {
  clock = at - 1
  return event("session.next.step.started", { assistantMessageID, agent: "build", model })
}

describe("MessageProjection.reduce", () => {
  it("prompted → a user message with the prompt's text and attachments", () => {
    clock = 0
    const prompt = { text: "hi", files: [{ uri: "file:///a.ts", mime: "text/plain" }], agents: [{ name: "plan" }] }
    expect(
      fold([
        event("session.next.prompted", { messageID: "msg_user" as Identifier.MessageID, prompt, delivery: "steer" })
      ])
    ).toEqual({
      id: "msg_user",
      time: { created: 1 },
      type: "user",
      text: "hi",
      files: prompt.files,
      agents: prompt.agents
    })
  })

  it("context.updated, synthetic, agent.switched, model.switched and compaction.ended make their messages", () => {
    clock = 0
    const messageID = "msg_x" as Identifier.MessageID
    expect(fold([event("session.next.context.updated", { messageID, text: "AGENTS.md changed" })])).toEqual({
      id: messageID,
      time: { created: 1 },
      type: "system",
      text: "AGENTS.md changed"
    })
    expect(fold([event("session.next.synthetic", { messageID, text: "continue" })])).toEqual({
      id: messageID,
      time: { created: 2 },
      type: "synthetic",
      sessionID,
      text: "continue"
    })
    expect(fold([event("session.next.agent.switched", { messageID, agent: "plan" })])).toEqual({
      id: messageID,
      time: { created: 3 },
      type: "agent-switched",
      agent: "plan"
    })
    expect(fold([event("session.next.model.switched", { messageID, model })])).toEqual({
      id: messageID,
      time: { created: 4 },
      type: "model-switched",
      model
    })
    expect(
      fold([event("session.next.compaction.ended", { messageID, reason: "auto", text: "summary", recent: "tail" })])
    ).toEqual({
      id: messageID,
      time: { created: 5 },
      type: "compaction",
      reason: "auto",
      summary: "summary",
      recent: "tail"
    })
  })

  it("a text step: step.started → assistant; text.ended carries the full text; step.ended settles finish, cost, tokens, time", () => {
    expect(
      fold([
        started(100),
        event("session.next.text.started", { assistantMessageID, textID: "t1" }),
        event("session.next.text.ended", { assistantMessageID, textID: "t1", text: "Hello, world" }),
        event("session.next.step.ended", {
          assistantMessageID,
          finish: "stop",
          cost: 0.25,
          tokens,
          snapshot: "snap2",
          files: ["a.ts"]
        })
      ])
    ).toEqual({
      id: assistantMessageID,
      time: { created: 100, completed: 103 },
      type: "assistant",
      agent: "build",
      model,
      content: [{ type: "text", id: "t1", text: "Hello, world" }],
      finish: "stop",
      cost: 0.25,
      tokens,
      snapshot: { end: "snap2", files: ["a.ts"] }
    })
  })

  it("text.started alone leaves an empty block; a text.ended without its start still records the whole text", () => {
    const open = fold([started(0), event("session.next.text.started", { assistantMessageID, textID: "t1" })])
    expect((open as SessionMessages.SessionMessageAssistant).content).toEqual([{ type: "text", id: "t1", text: "" }])
    const whole = fold([
      started(0),
      event("session.next.text.ended", { assistantMessageID, textID: "t9", text: "all of it" })
    ])
    expect((whole as SessionMessages.SessionMessageAssistant).content).toEqual([
      { type: "text", id: "t9", text: "all of it" }
    ])
  })

  it("reasoning keeps its Native Continuation Metadata and times; the ended metadata wins", () => {
    const message = fold([
      started(0),
      event("session.next.reasoning.started", {
        assistantMessageID,
        reasoningID: "r1",
        providerMetadata: { anthropic: { a: 1 } }
      }),
      event("session.next.reasoning.ended", {
        assistantMessageID,
        reasoningID: "r1",
        text: "thinking",
        providerMetadata: { anthropic: { signature: "sig" } }
      }),
      event("session.next.reasoning.started", { assistantMessageID, reasoningID: "r2" }),
      event("session.next.reasoning.ended", { assistantMessageID, reasoningID: "r2", text: "more" })
    ]) as SessionMessages.SessionMessageAssistant
    expect(message.content).toEqual([
      {
        type: "reasoning",
        id: "r1",
        text: "thinking",
        providerMetadata: { anthropic: { signature: "sig" } },
        time: { created: 1, completed: 2 }
      },
      { type: "reasoning", id: "r2", text: "more", time: { created: 3, completed: 4 } }
    ])
  })

  it("the tool state machine: pending → running → completed, progress replaces, input parsed from tool.called", () => {
    const steps = [
      started(0),
      event("session.next.tool.input.started", { assistantMessageID, callID: "c1", name: "read" }),
      event("session.next.tool.input.ended", { assistantMessageID, callID: "c1", text: '{"path":"a.ts"}' }),
      event("session.next.tool.called", {
        assistantMessageID,
        callID: "c1",
        tool: "read",
        input: { path: "a.ts" },
        provider: { executed: false }
      }),
      event("session.next.tool.progress", {
        assistantMessageID,
        callID: "c1",
        structured: { lines: 1 },
        content: [{ type: "text", text: "1 line" }]
      }),
      event("session.next.tool.success", {
        assistantMessageID,
        callID: "c1",
        structured: { lines: 2 },
        content: [{ type: "text", text: "line 1\nline 2" }],
        outputPaths: ["/tmp/out"],
        result: { ok: true },
        provider: { executed: false, metadata: { openai: { id: "x" } } }
      })
    ]
    const states = steps.map((_, index) => {
      const message = fold(steps.slice(0, index + 1)) as SessionMessages.SessionMessageAssistant
      return (message.content[0] as SessionMessages.SessionMessageAssistantTool | undefined)?.state
    })
    expect(states).toEqual([
      undefined,
      { status: "pending", input: "" },
      { status: "pending", input: '{"path":"a.ts"}' },
      { status: "running", input: { path: "a.ts" }, structured: {}, content: [] },
      {
        status: "running",
        input: { path: "a.ts" },
        structured: { lines: 1 },
        content: [{ type: "text", text: "1 line" }]
      },
      {
        status: "completed",
        input: { path: "a.ts" },
        content: [{ type: "text", text: "line 1\nline 2" }],
        structured: { lines: 2 },
        outputPaths: ["/tmp/out"],
        result: { ok: true }
      }
    ])
    const done = (fold(steps) as SessionMessages.SessionMessageAssistant).content[0]
    expect(done).toMatchObject({
      type: "tool",
      id: "c1",
      name: "read",
      provider: { executed: false, resultMetadata: { openai: { id: "x" } } },
      time: { created: 1, ran: 3, completed: 5 }
    })
  })

  it("tool.failed settles a running call as an error keeping its progress, and a pending one with its parsed input", () => {
    const error = { type: "unknown" as const, message: "interrupted" }
    const message = fold([
      started(0),
      event("session.next.tool.called", {
        assistantMessageID,
        callID: "c1",
        tool: "bash",
        input: { command: "ls" },
        provider: { executed: false }
      }),
      event("session.next.tool.progress", {
        assistantMessageID,
        callID: "c1",
        structured: { n: 1 },
        content: [{ type: "text", text: "a" }]
      }),
      event("session.next.tool.failed", { assistantMessageID, callID: "c1", error, provider: { executed: false } }),
      event("session.next.tool.input.started", { assistantMessageID, callID: "c2", name: "edit" }),
      event("session.next.tool.input.ended", { assistantMessageID, callID: "c2", text: '{"file":"x"}' }),
      event("session.next.tool.failed", {
        assistantMessageID,
        callID: "c2",
        error,
        result: "partial",
        provider: { executed: false }
      })
    ]) as SessionMessages.SessionMessageAssistant
    expect(message.content.map((item) => (item as SessionMessages.SessionMessageAssistantTool).state)).toEqual([
      {
        status: "error",
        input: { command: "ls" },
        content: [{ type: "text", text: "a" }],
        structured: { n: 1 },
        error
      },
      { status: "error", input: { file: "x" }, content: [], structured: {}, error, result: "partial" }
    ])
    expect(message.content[0]).toMatchObject({ name: "bash", time: { created: 1, ran: 1, completed: 3 } })
  })

  it("step.failed records the error and completion, keeping the partial content", () => {
    const error = { type: "unknown" as const, message: "provider failed" }
    const message = fold([
      started(0),
      event("session.next.text.ended", { assistantMessageID, textID: "t1", text: "partial" }),
      event("session.next.step.failed", { assistantMessageID, error })
    ])
    expect(message).toMatchObject({
      time: { created: 0, completed: 2 },
      error,
      content: [{ type: "text", text: "partial" }]
    })
  })

  it("a transition the log should never contain throws InvalidTransition", () => {
    const invalid = (events: ReadonlyArray<Event.SessionDurableEvent>) =>
      expect(() => fold(events)).toThrow(MessageProjection.InvalidTransition)
    invalid([event("session.next.text.started", { assistantMessageID, textID: "t1" })])
    invalid([started(0), started(1)])
    invalid([
      event("session.next.synthetic", { messageID: assistantMessageID, text: "x" }),
      event("session.next.text.started", { assistantMessageID, textID: "t" })
    ])
    invalid([
      started(0),
      event("session.next.tool.success", {
        assistantMessageID,
        callID: "nope",
        structured: {},
        content: [],
        provider: { executed: false }
      })
    ])
    const called = event("session.next.tool.called", {
      assistantMessageID,
      callID: "c",
      tool: "t",
      input: {},
      provider: { executed: false }
    })
    const success = event("session.next.tool.success", {
      assistantMessageID,
      callID: "c",
      structured: {},
      content: [],
      provider: { executed: false }
    })
    invalid([started(0), called, success, success])
    invalid([started(0), called, called])
    invalid([
      started(0),
      event("session.next.tool.input.started", { assistantMessageID, callID: "c", name: "t" }),
      success
    ])
  })

  it("a second prompted for an existing user message leaves it unchanged (the inbox claim rejects it)", () => {
    const prompted = event("session.next.prompted", {
      messageID: "msg_u" as Identifier.MessageID,
      prompt: { text: "a" },
      delivery: "steer"
    })
    const once = fold([prompted])
    expect(MessageProjection.reduce(once, prompted)).toBe(once)
  })
})

describe("MessageProjection.reduceSession", () => {
  it("step.ended adds cost and tokens; switches select agent and model; time.updated never goes back", () => {
    const session: Session.SessionV2Info = {
      id: sessionID,
      projectID: "p",
      cost: 1,
      tokens: { input: 1, output: 1, reasoning: 1, cache: { read: 1, write: 1 } },
      time: { created: 0, updated: 5000 },
      title: "t",
      location: { directory: "/" }
    }
    clock = 6000
    const ended = MessageProjection.reduceSession(
      session,
      event("session.next.step.ended", { assistantMessageID, finish: "stop", cost: 0.5, tokens })
    )
    expect(ended).toEqual({
      ...session,
      cost: 1.5,
      tokens: { input: 11, output: 6, reasoning: 3, cache: { read: 4, write: 2 } },
      time: { created: 0, updated: 6001 }
    })
    clock = 10
    const switched = MessageProjection.reduceSession(
      ended,
      event("session.next.agent.switched", { messageID: "msg_a" as Identifier.MessageID, agent: "plan" })
    )
    expect(switched).toEqual({ ...ended, agent: "plan" })
    expect(
      MessageProjection.reduceSession(
        switched,
        event("session.next.model.switched", { messageID: "msg_m" as Identifier.MessageID, model })
      ).model
    ).toEqual(model)
    const untouched = event("session.next.text.started", { assistantMessageID, textID: "t" })
    expect(MessageProjection.reduceSession(session, untouched)).toBe(session)
  })
})

// ── Persisted through SessionEvents over a real database ────────────────────────────────────────

const draft = SessionEvents.draft

describe("SessionEvents.append projects in the append's transaction", () => {
  it.scoped(
    "context decodes a message again only when its row changed or the caches were released: an unchanged row gives the same message",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const events = yield* SessionEvents.Service
          const session = yield* createSession(w)
          const id = session.id
          const assistant = Identifier.newMessageID()
          const at = { timestamp: 42, sessionID: id }
          yield* events.append(id, [
            draft("session.next.step.started", { ...at, assistantMessageID: assistant, agent: "build", model }),
            draft("session.next.text.started", { ...at, assistantMessageID: assistant, textID: "t" })
          ])
          const first = yield* MessageProjection.context(id, 0)
          const again = yield* MessageProjection.context(id, 0)
          expect(again).toHaveLength(first.length)
          for (let i = 0; i < first.length; i++) expect(again[i]).toBe(first[i])

          // A change to the row, written by this process or any other, is read afresh.
          yield* events.append(id, [
            draft("session.next.text.ended", { ...at, assistantMessageID: assistant, textID: "t", text: "done" })
          ])
          const changed = yield* MessageProjection.context(id, 0)
          const before = first.find((message) => message.id === assistant) as SessionMessages.SessionMessageAssistant
          const after = changed.find((message) => message.id === assistant) as SessionMessages.SessionMessageAssistant
          expect(before.content).toEqual([{ type: "text", id: "t", text: "" }])
          expect(after.content).toEqual([{ type: "text", id: "t", text: "done" }])
          // What any commit does to a row: a new `info` with the commit's seq, one above the log's last.
          const sql = yield* SqlClient.SqlClient
          yield* sql`UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ${id}`
          yield* sql`UPDATE message SET info = ${JSON.stringify({ ...after, content: [{ type: "text", id: "t", text: "edited" }] })},
          changed_seq = (SELECT seq FROM event_sequence WHERE aggregate_id = ${id}) WHERE id = ${assistant}`
          const held = yield* MessageProjection.context(id, 0)
          const edited = held.find((message) => message.id === assistant)
          expect((edited as SessionMessages.SessionMessageAssistant).content).toEqual([
            { type: "text", id: "t", text: "edited" }
          ])

          // Released caches are filled again by the next read: equal messages, decoded afresh.
          expect(MessageProjection.releaseCaches()).toBeGreaterThan(0)
          expect(MessageProjection.releaseCaches()).toBe(0)
          const reread = yield* MessageProjection.context(id, 0)
          expect(reread).toEqual(held)
          expect(reread.find((message) => message.id === assistant)).not.toBe(edited)
        })
      )
  )

  it.scoped(
    "context merges the rows changed since its previous read into the cached ones: an older row edited in place and new rows after it read as a whole read would",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const events = yield* SessionEvents.Service
          const sql = yield* SqlClient.SqlClient
          const session = yield* createSession(w)
          const id = session.id
          const at = { timestamp: 42, sessionID: id }
          const step = () => {
            const assistant = Identifier.newMessageID()
            return events.append(id, [
              draft("session.next.step.started", { ...at, assistantMessageID: assistant, agent: "build", model }),
              draft("session.next.text.started", { ...at, assistantMessageID: assistant, textID: "t" }),
              draft("session.next.text.ended", { ...at, assistantMessageID: assistant, textID: "t", text: "done" })
            ])
          }
          for (let i = 0; i < 6; i++) yield* step()
          const first = yield* MessageProjection.context(id, 0)
          expect(first).toHaveLength(6)

          // The third message edited in place (a new `info` at a new seq, as any commit writes it),
          // then two more Steps.
          const third = first[2] as SessionMessages.SessionMessageAssistant
          yield* sql`UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ${id}`
          yield* sql`UPDATE message SET info = ${JSON.stringify({ ...third, content: [{ type: "text", id: "t", text: "edited" }] })},
          changed_seq = (SELECT seq FROM event_sequence WHERE aggregate_id = ${id}) WHERE id = ${third.id}`
          yield* step()
          yield* step()
          const merged = yield* MessageProjection.context(id, 0)
          expect(merged).toHaveLength(8)
          for (const i of [0, 1, 3, 4, 5]) expect(merged[i]).toBe(first[i])
          expect((merged[2] as SessionMessages.SessionMessageAssistant).content).toEqual([
            { type: "text", id: "t", text: "edited" }
          ])

          // What a whole read (caches released) gives.
          MessageProjection.releaseCaches()
          expect(yield* MessageProjection.context(id, 0)).toEqual(merged)
        })
      )
  )

  it.scoped(
    "context reads what changed since its previous read, whichever host wrote it: a compaction moves its start, and what a revert took out stays out",
    () =>
      Effect.gen(function* () {
        const w = yield* world
        // Two Cores over one database: two hosts, each with its own SqlClient and so its own cache.
        const other = yield* Layer.build(w.core())
        const theirs = Context.get(other, SessionEvents.Service)
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const events = yield* SessionEvents.Service
          const session = yield* createSession(w)
          const id = session.id
          const at = { timestamp: 42, sessionID: id }
          const prompt = (text: string) =>
            draft("session.next.prompted", {
              ...at,
              messageID: Identifier.newMessageID(),
              prompt: { text },
              delivery: "queue"
            })
          /** The other host's append to the session. */
          const appendOnOther = (drafts: Parameters<typeof theirs.append>[1]) => theirs.append(id, drafts)
          /** A Step's first two events: its assistant message, with an empty text block `t`. */
          const openStep = (assistantMessageID: Identifier.MessageID) => [
            draft("session.next.step.started", { ...at, assistantMessageID, agent: "build", model }),
            draft("session.next.text.started", { ...at, assistantMessageID, textID: "t" })
          ]
          /** The end of block `t` of an open Step, with its text. */
          const textEnded = (assistantMessageID: Identifier.MessageID, text: string) =>
            draft("session.next.text.ended", { ...at, assistantMessageID, textID: "t", text })
          /** This host's context, and the same read inside a transaction, which never uses the cache. */
          const both = (baselineSeq = 0) =>
            Effect.all([
              MessageProjection.context(id, baselineSeq),
              sql.withTransaction(MessageProjection.context(id, baselineSeq))
            ])
          const texts = (messages: ReadonlyArray<Message>) =>
            messages.map((message) =>
              message.type === "user"
                ? message.text
                : message.type === "assistant"
                  ? message.content.map((item) => (item.type === "text" ? item.text : item.type)).join()
                  : message.type
            )
          const expectSame = Effect.fn(function* (expected: ReadonlyArray<string>, baselineSeq = 0) {
            const [cached, fresh] = yield* both(baselineSeq)
            expect(texts(cached)).toEqual(expected)
            expect(cached).toEqual(fresh)
          })

          const assistant = Identifier.newMessageID()
          yield* events.append(id, [prompt("one"), ...openStep(assistant)])
          yield* expectSame(["one", ""])

          // The other host changes a row this one holds and adds one: both are read.
          yield* appendOnOther([textEnded(assistant, "done"), prompt("two")])
          yield* expectSame(["one", "done", "two"])

          // A system message at or before the baseline stays out; one after it is in.
          const notice = Identifier.newMessageID()
          yield* events.append(id, [
            draft("session.next.context.updated", { ...at, messageID: notice, text: "AGENTS.md" })
          ])
          const noticeSeq = yield* EventLog.lastSeq(id)
          yield* expectSame(["one", "done", "two", "system"])
          yield* expectSame(["one", "done", "two"], noticeSeq)

          // A compaction by the other host: the context starts at it.
          yield* appendOnOther([
            draft("session.next.compaction.ended", {
              ...at,
              messageID: Identifier.newMessageID(),
              reason: "auto",
              text: "summary",
              recent: "tail"
            }),
            prompt("three")
          ])
          yield* expectSame(["compaction", "three"])
          yield* events.append(id, [prompt("four")])
          yield* expectSame(["compaction", "three", "four"])
          // A change to a message before the compaction leaves the context as it was.
          yield* events.append(id, [
            draft("session.next.text.started", { ...at, assistantMessageID: assistant, textID: "t2" })
          ])
          yield* expectSame(["compaction", "three", "four"])

          // A revert takes "four" and a Step after it out: those stay out when they change.
          const later = Identifier.newMessageID()
          yield* events.append(id, openStep(later))
          yield* expectSame(["compaction", "three", "four", ""])
          const [, , four] = yield* MessageProjection.context(id, 0)
          const seqOf = (messageID: string) =>
            Effect.map(
              MessageProjection.find(id, messageID as Identifier.MessageID),
              (found) => Option.getOrThrow(found).seq
            )
          yield* sql.withTransaction(
            RevertedMessages.record({
              sessionID: id,
              fromSeq: yield* seqOf(four!.id),
              toSeq: yield* seqOf(later),
              messageID: four!.id as Identifier.MessageID
            })
          )
          yield* expectSame(["compaction", "three"])
          yield* appendOnOther([textEnded(later, "late"), prompt("five")])
          yield* expectSame(["compaction", "three", "five"])
          yield* events.append(id, [prompt("six")])
          yield* expectSame(["compaction", "three", "five", "six"])
        }).pipe(Effect.provide(w.core()))
      })
  )

  it.scoped("a text step and a tool step are projected as messages; the session's cost and tokens accumulate", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const events = yield* SessionEvents.Service
        const history = yield* SessionHistory.Service
        const session = yield* createSession(w)
        const id = session.id
        const assistant = Identifier.newMessageID()
        const second = Identifier.newMessageID()
        const at = { timestamp: 42, sessionID: id }
        yield* events.append(id, [
          draft("session.next.step.started", { ...at, assistantMessageID: assistant, agent: "build", model }),
          draft("session.next.text.started", { ...at, assistantMessageID: assistant, textID: "t" })
        ])
        yield* events.append(id, [
          draft("session.next.text.ended", { ...at, assistantMessageID: assistant, textID: "t", text: "done" }),
          draft("session.next.step.ended", { ...at, assistantMessageID: assistant, finish: "stop", cost: 0.5, tokens })
        ])
        yield* events.append(id, [
          draft("session.next.step.started", {
            ...at,
            timestamp: 50,
            assistantMessageID: second,
            agent: "build",
            model
          }),
          draft("session.next.tool.called", {
            ...at,
            assistantMessageID: second,
            callID: "c",
            tool: "read",
            input: { a: 1 },
            provider: { executed: false }
          }),
          draft("session.next.tool.success", {
            ...at,
            assistantMessageID: second,
            callID: "c",
            structured: {},
            content: [{ type: "text", text: "ok" }],
            provider: { executed: false }
          }),
          draft("session.next.step.ended", {
            ...at,
            timestamp: 60,
            assistantMessageID: second,
            finish: "tool-calls",
            cost: 0.25,
            tokens
          })
        ])

        expect(yield* history.message(id, assistant)).toEqual({
          id: assistant,
          time: { created: 42, completed: 42 },
          type: "assistant",
          agent: "build",
          model,
          content: [{ type: "text", id: "t", text: "done" }],
          finish: "stop",
          cost: 0.5,
          tokens
        })
        expect((yield* history.message(id, second)) as SessionMessages.SessionMessageAssistant).toMatchObject({
          finish: "tool-calls",
          content: [
            {
              type: "tool",
              id: "c",
              state: { status: "completed", input: { a: 1 }, content: [{ type: "text", text: "ok" }] }
            }
          ]
        })
        const after = yield* (yield* Sessions.Service).get(id)
        expect(after.cost).toBe(0.75)
        expect(after.tokens).toEqual({ input: 20, output: 10, reasoning: 4, cache: { read: 6, write: 2 } })
        expect(after.time.updated).toBe(Math.max(60, session.time.updated))
        // The row's column follows the info.
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ time_updated: number }>`SELECT time_updated FROM session WHERE id = ${id}`
        expect(row?.time_updated).toBe(after.time.updated)
      })
    )
  )

  it.scoped("agent and model switches update the session record and leave marker messages", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const events = yield* SessionEvents.Service
        const session = yield* createSession(w)
        const at = { timestamp: Date.now() + 10_000, sessionID: session.id }
        const agentMessage = Identifier.newMessageID()
        yield* events.append(session.id, [
          draft("session.next.agent.switched", { ...at, messageID: agentMessage, agent: "plan" }),
          draft("session.next.model.switched", {
            ...at,
            messageID: Identifier.newMessageID(),
            model: { id: "llama", providerID: "local" }
          })
        ])
        const after = yield* (yield* Sessions.Service).get(session.id)
        expect(after).toMatchObject({
          agent: "plan",
          model: { id: "llama", providerID: "local" },
          time: { updated: at.timestamp }
        })
        expect(yield* (yield* SessionHistory.Service).message(session.id, agentMessage)).toEqual({
          id: agentMessage,
          time: { created: at.timestamp },
          type: "agent-switched",
          agent: "plan"
        })
      })
    )
  )

  it.scoped("a failing extra projection, an invalid transition or an unknown session commits nothing", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const events = yield* SessionEvents.Service
        const log = yield* EventLog.Service
        const session = yield* createSession(w)
        const at = { timestamp: 1, sessionID: session.id }
        const assistant = Identifier.newMessageID()
        const started = draft("session.next.step.started", {
          ...at,
          assistantMessageID: assistant,
          agent: "build",
          model
        })

        const failed = yield* Effect.exit(events.append(session.id, [started], () => Effect.fail("refused" as const)))
        expect(failed).toEqual(Exit.fail("refused"))

        const broken = yield* Effect.exit(
          events.append(session.id, [
            draft("session.next.text.started", { ...at, assistantMessageID: assistant, textID: "t" })
          ])
        )
        expect(Exit.isFailure(broken) && Cause.isDie(broken.cause)).toBe(true)

        const unknown = yield* Effect.exit(events.append(Identifier.SessionID.make("ses_nope"), [started]))
        expect(unknown).toEqual(Exit.fail(Errors.SessionNotFoundError.of("ses_nope")))

        expect((yield* log.read(session.id, { after: -1 })).map((e) => e.type)).toEqual(["session.created"])
        expect(yield* log.read("ses_nope")).toEqual([])
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT id FROM message`).toEqual([])
      })
    )
  )

  it.scoped(
    "a committed draft is projected from the data it was encoded from, not decoded again; read back from the log, it decodes to an equal event",
    () =>
      withCore((w) =>
        Effect.gen(function* () {
          const events = yield* SessionEvents.Service
          const session = yield* createSession(w)
          const data = {
            timestamp: 42,
            sessionID: session.id,
            messageID: Identifier.newMessageID(),
            prompt: { text: "hi" },
            delivery: "queue" as const
          }
          const [committed] = yield* events.append(session.id, [draft("session.next.prompted", data)])
          const projected = yield* MessageProjection.decodeEvent(committed!)
          expect(projected.data).toBe(data)
          // The stored row is parsed from its JSON: decoded through the schema, to the same event.
          const [stored] = yield* (yield* EventLog.Service).read(session.id, { after: 0 })
          const decoded = yield* MessageProjection.decodeEvent(stored!)
          expect(decoded.data).not.toBe(data)
          expect(decoded).toEqual(projected)
          expect(yield* (yield* SessionHistory.Service).message(session.id, data.messageID)).toMatchObject({
            type: "user",
            text: "hi"
          })
        })
      )
  )

  it.scoped("a draft that is not a valid session.next event is a defect and writes nothing", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const events = yield* SessionEvents.Service
        const session = yield* createSession(w)
        const exit = yield* Effect.exit(
          events.append(session.id, [{ type: "session.next.text.started", version: 1, data: { nope: 1 } }])
        )
        expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
        const other = yield* Effect.exit(events.append(session.id, [{ type: "session.created", version: 1, data: {} }]))
        expect(Exit.isFailure(other) && Cause.isDie(other.cause)).toBe(true)
        expect(() =>
          draft("session.next.text.started", { timestamp: 1, sessionID: session.id, textID: "t" } as never)
        ).toThrow()
        expect((yield* (yield* EventLog.Service).read(session.id, { after: -1 })).length).toBe(1)
      })
    )
  )

  it.scoped("an Instruction Update admitted by InstructionCheckpoint.prepare becomes a system message", () =>
    withCore((w) =>
      Effect.gen(function* () {
        const session = yield* createSession(w)
        let rule = "Use tabs."
        const source = Instructions.make({
          key: "test/rule",
          codec: Schema.String,
          load: Effect.sync(() => rule),
          baseline: (value) => `Rule: ${value}`,
          update: (value) => `The rule is now: ${value}`
        })
        const checkpoint = yield* InstructionCheckpoint.Service
        yield* checkpoint.prepare(session.id, source)
        rule = "Use spaces."
        const prepared = (yield* checkpoint.prepare(session.id, source)) as InstructionCheckpoint.Prepared
        const update = prepared.update!
        expect(yield* (yield* SessionHistory.Service).message(session.id, update.messageID)).toEqual({
          id: update.messageID,
          time: { created: expect.any(Number) },
          type: "system",
          text: "The rule is now: Use spaces."
        })
        expect(Option.isSome(yield* checkpoint.get(session.id))).toBe(true)
      })
    )
  )
})
