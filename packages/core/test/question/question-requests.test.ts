import { describe, expect, it } from "@effect/vitest"
import { type Core, EventLog, QuestionRequests, QuestionTool, type ToolRegistry } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { Context, Effect, Layer } from "effect"
import { world } from "../runner/world.js"

const { reply, text, toolCall, finish } = LLMScript

/** A tool that never waits. */
const echo: ToolRegistry.Tool = {
  name: "echo",
  description: "Echo",
  inputSchema: { type: "object", properties: { say: { type: "string" } } },
  execute: (input) => Effect.succeed({ content: [{ type: "text" as const, text: `echo: ${String(input.say)}` }] })
}

const questions = [
  {
    question: "Which color?",
    header: "Color",
    options: [
      { label: "Red", description: "Warm" },
      { label: "Blue", description: "Cool" }
    ]
  },
  {
    question: "Which sizes?",
    header: "Sizes",
    options: [
      { label: "S", description: "Small" },
      { label: "L", description: "Large" }
    ],
    multiple: true
  }
]

const setup = Effect.gen(function* () {
  const w = yield* world()
  const service = yield* w.run(QuestionRequests.Service)
  const sessionID = w.session.id
  const pendingCount = (count: number) =>
    Effect.gen(function* () {
      for (;;) {
        const pending = yield* service.list(sessionID)
        if (pending.length >= count) return pending
        yield* Effect.sleep("5 millis")
      }
    })
  const settled = (callID: string) =>
    Effect.map(w.events, (all) =>
      all.find(
        (e) =>
          (e.type === "session.next.tool.success" || e.type === "session.next.tool.failed") &&
          (e.data as any).callID === callID
      )
    )
  const requestLog = (requestID: string) => w.run(Effect.flatMap(EventLog.Service, (log) => log.read(requestID)))
  return { ...w, service, sessionID, pendingCount, settled, requestLog }
})

describe("the question tool with the runner", () => {
  it.scopedLive("ask suspends only that call; reply returns the answers to the model; the request is durable", () =>
    Effect.gen(function* () {
      const t = yield* setup
      yield* t.register(echo)
      yield* t.server.enqueue(
        reply(
          toolCall("call_q", "question", { questions }),
          toolCall("call_e", "echo", { say: "hi" }),
          finish("tool-calls")
        ),
        reply(text("thanks"), finish("stop"))
      )
      yield* t.prompt("ask me")
      const [request] = yield* t.pendingCount(1)
      expect(request).toMatchObject({
        sessionID: t.sessionID,
        questions: questions.map((q) => ({ ...q, custom: true })),
        tool: { callID: "call_q" }
      })
      expect(request!.id).toMatch(/^que_/)
      // The other call of the Step settled while the question waits.
      while ((yield* t.settled("call_e")) === undefined) yield* Effect.sleep("5 millis")
      expect(yield* t.settled("call_q")).toBeUndefined()
      // Listed by Location too.
      expect(yield* t.service.listIn({ directory: t.directory })).toEqual([request])

      yield* t.service.reply(t.sessionID, request!.id, [["Blue"], ["S", "L"]])
      yield* t.wait
      const success = (yield* t.settled("call_q"))!
      expect(success.type).toBe("session.next.tool.success")
      const rendered =
        'User has answered your questions: "Which color?"="Blue", "Which sizes?"="S, L". You can now continue with the user\'s answers in mind.'
      expect((success.data as any).content).toEqual([{ type: "text", text: rendered }])
      expect((success.data as any).structured).toEqual({ answers: [["Blue"], ["S", "L"]] })
      expect(yield* t.service.list(t.sessionID)).toEqual([])
      const log = yield* t.requestLog(request!.id)
      expect(log.map((e) => e.type)).toEqual(["question.v2.asked", "question.v2.replied"])
      expect(log[1]!.data).toEqual({ sessionID: t.sessionID, requestID: request!.id, answers: [["Blue"], ["S", "L"]] })
      // Answered: a second reply or a reject is QuestionNotFoundError.
      const again = yield* Effect.flip(t.service.reply(t.sessionID, request!.id, [["Red"]]))
      expect(again._tag).toBe("QuestionNotFoundError")
      expect((yield* Effect.flip(t.service.reject(t.sessionID, request!.id)))._tag).toBe("QuestionNotFoundError")
      expect(QuestionTool.render(questions, [["Red"]])).toContain('"Which sizes?"="Unanswered"')
    })
  )

  it.scopedLive("reject fails the call with a readable ToolFailure", () =>
    Effect.gen(function* () {
      const t = yield* setup
      yield* t.server.enqueue(
        reply(toolCall("call_q", "question", { questions }), finish("tool-calls")),
        reply(text("ok"), finish("stop"))
      )
      yield* t.prompt("ask me")
      const [request] = yield* t.pendingCount(1)
      yield* t.service.reject(t.sessionID, request!.id)
      yield* t.wait
      const failed = (yield* t.settled("call_q"))!
      expect(failed.type).toBe("session.next.tool.failed")
      expect((failed.data as any).error.message).toBe(QuestionRequests.rejectedMessage)
      const log = yield* t.requestLog(request!.id)
      expect(log.map((e) => e.type)).toEqual(["question.v2.asked", "question.v2.rejected"])
      expect(log[1]!.data).toEqual({ sessionID: t.sessionID, requestID: request!.id })
    })
  )

  it.scopedLive("invalid input is a readable tool error and creates nothing", () =>
    Effect.gen(function* () {
      const t = yield* setup
      yield* t.server.enqueue(
        reply(toolCall("call_q", "question", { questions: [{ question: "Q?" }] }), finish("tool-calls")),
        reply(text("ok"), finish("stop"))
      )
      yield* t.prompt("ask me")
      yield* t.wait
      const failed = (yield* t.settled("call_q"))!
      expect(failed.type).toBe("session.next.tool.failed")
      expect((failed.data as any).error.message).toContain("Invalid input for the question tool")
      expect(yield* t.service.list(t.sessionID)).toEqual([])
    })
  )

  it.scopedLive(
    "interrupt rejects the pending question durably; a restart rejects what a previous process waited on",
    () =>
      Effect.gen(function* () {
        const t = yield* setup
        yield* t.server.enqueue(reply(toolCall("call_q", "question", { questions }), finish("tool-calls")))
        yield* t.prompt("ask me")
        const [first] = yield* t.pendingCount(1)
        yield* t.interrupt
        expect(yield* t.service.list(t.sessionID)).toEqual([])
        expect(((yield* t.settled("call_q"))!.data as any).error.message).toBe("Tool execution interrupted")
        expect((yield* t.requestLog(first!.id)).map((e) => e.type)).toEqual([
          "question.v2.asked",
          "question.v2.rejected"
        ])

        // Recovery: a second instance over the same database plays the restarted process.
        yield* t.server.enqueue(reply(toolCall("call_r", "question", { questions }), finish("tool-calls")))
        yield* t.prompt("ask again")
        const [second] = yield* t.pendingCount(1)
        expect(yield* t.service.recover(t.sessionID)).toBe(0)
        const core = yield* t.run(Effect.context<Core.Services>())
        const restarted = yield* Layer.build(QuestionRequests.layer).pipe(
          Effect.provide(core),
          Effect.map((context) => Context.get(context, QuestionRequests.Service))
        )
        expect(yield* restarted.recover(t.sessionID)).toBe(1)
        expect(yield* t.service.list(t.sessionID)).toEqual([])
        const log = yield* t.requestLog(second!.id)
        expect(log.map((e) => e.type)).toEqual(["question.v2.asked", "question.v2.rejected"])
        // The old waiter's own cleanup finds nothing left to reject.
        yield* t.interrupt
        expect((yield* t.requestLog(second!.id)).map((e) => e.type)).toEqual([
          "question.v2.asked",
          "question.v2.rejected"
        ])
      })
  )
})
