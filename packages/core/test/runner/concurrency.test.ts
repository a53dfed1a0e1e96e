import { describe, expect, it } from "@effect/vitest"
import { EventLog, Locations, SessionInput, SessionRunner, Sessions } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { world } from "./world.js"

const { reply, text, toolCall, finish, hold, gate } = LLMScript

const SESSIONS = 20
/** First-round turns (1-based) that call a tool; the others answer with text. */
const isTool = (turn: number) => turn % 3 === 0
const TOOLS = Array.from({ length: SESSIONS }, (_, i) => i + 1).filter(isTool).length

const textBlock = ["step.started", "text.started", "text.ended", "step.ended"]
const toolBlock = [
  "step.started",
  "tool.input.started",
  "tool.input.ended",
  "tool.called",
  "tool.success",
  "step.ended"
]

describe("20 concurrent sessions", () => {
  it.scopedLive(
    "all complete with exactly their own sequences, gapless seqs and no cross-talk",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        // The tool answers with the session it ran for, so a result carried into another session shows.
        yield* w.register({
          name: "whoami",
          description: "Names the session the call runs in",
          inputSchema: { type: "object", properties: { n: { type: "number" } } },
          execute: (input, context) =>
            Effect.succeed({
              content: [{ type: "text" as const, text: `session ${context.sessionID} turn ${String(input.n)}` }]
            })
        })

        // Round one: every session's first step holds on one shared gate, so all 20 provider streams
        // are open at once (text already started, or before the tool call) before any completes.
        // Round two: the sessions that called a tool take the trailing text turns.
        const held = gate()
        const first = Array.from({ length: SESSIONS }, (_, i) => {
          const turn = i + 1
          return isTool(turn)
            ? reply(hold(held), toolCall(`call_${turn}`, "whoami", { n: turn }), finish("tool-calls"))
            : reply(text("Hello", " from"), hold(held), text(` turn ${turn}`), finish("stop"))
        })
        const second = Array.from({ length: TOOLS }, (_, i) =>
          reply(text("Done", ` turn ${SESSIONS + i + 1}`), finish("stop"))
        )
        yield* w.server.enqueue(...first, ...second)

        const ids = yield* w
          .run(
            Effect.gen(function* () {
              const location = yield* (yield* Locations.Service).resolve({ directory: w.directory })
              const sessions = yield* Sessions.Service
              return yield* Effect.forEach(Array.from({ length: SESSIONS }), () =>
                Effect.map(sessions.create({ location }), (s) => s.id)
              )
            })
          )
          .pipe(Effect.orDie)
        const runner = yield* w.run(SessionRunner.Service)
        const input = yield* w.run(SessionInput.Service)
        const log = yield* w.run(EventLog.Service)

        // All prompted at once.
        yield* Effect.forEach(
          ids,
          (id) => Effect.zipRight(input.admit(id, { prompt: { text: `hello from ${id}` } }), runner.wake(id)),
          { concurrency: "unbounded", discard: true }
        ).pipe(Effect.orDie)
        yield* w.server.awaitRequest(SESSIONS)
        expect(Object.keys(yield* runner.active).sort()).toEqual([...ids].sort())
        yield* held.release
        yield* Effect.forEach(ids, (id) => runner.wait(id), { concurrency: "unbounded", discard: true }).pipe(
          Effect.orDie
        )

        expect(yield* runner.active).toEqual({})
        const requests = yield* w.server.requests
        expect(requests).toHaveLength(SESSIONS + TOOLS)
        expect(yield* w.server.remaining).toBe(0)
        // Request i took turn i (the queue is FIFO and each request takes one).
        const turnsOf = new Map<string, Array<number>>(ids.map((id) => [id, []]))
        for (const request of requests) turnsOf.get(request.headers["x-session-id"]!)!.push(request.index)

        for (const id of ids) {
          const turns = turnsOf.get(id)!
          const toolTurn = turns.length === 2 ? turns[0]! : undefined
          // One step per turn: a tool turn in the first round is followed by a text turn in the second.
          expect(turns.length).toBe(toolTurn === undefined ? 1 : 2)
          if (toolTurn !== undefined)
            expect(isTool(toolTurn) && toolTurn <= SESSIONS && turns[1]! > SESSIONS).toBe(true)
          else expect(isTool(turns[0]!)).toBe(false)

          const events = yield* log.read(id)
          expect(events.map((e) => e.type.replace("session.next.", ""))).toEqual([
            "prompt.admitted",
            "prompted",
            ...(toolTurn === undefined ? textBlock : [...toolBlock, ...textBlock])
          ])
          expect(events.map((e) => e.durable.seq)).toEqual(events.map((_, i) => i + 1))
          for (const event of events) {
            expect(event.durable.aggregateID).toBe(id)
            expect((event.data as any).sessionID).toBe(id)
          }
          const texts = events.filter((e) => e.type === "session.next.text.ended").map((e) => (e.data as any).text)
          const last = turns.at(-1)!
          expect(texts).toEqual([last > SESSIONS ? `Done turn ${last}` : `Hello from turn ${last}`])
          if (toolTurn !== undefined) {
            const called: any = events.find((e) => e.type === "session.next.tool.called")!.data
            expect(called).toMatchObject({ callID: `call_${toolTurn}`, tool: "whoami", input: { n: toolTurn } })
            const success: any = events.find((e) => e.type === "session.next.tool.success")!.data
            expect(success.content).toEqual([{ type: "text", text: `session ${id} turn ${toolTurn}` }])
          }
        }

        // No cross-talk: each request carries the history of the session its headers name, and only that.
        for (const request of requests) {
          const id = request.headers["x-session-id"]!
          expect(request.headers["x-session-affinity"]).toBe(id)
          const messages = request.body.messages as Array<any>
          expect(messages[1]).toEqual({ role: "user", content: `hello from ${id}` })
          const foreign = ids.filter((other) => other !== id)
          for (const other of foreign) expect(request.text).not.toContain(other)
          if (request.index > SESSIONS) {
            const toolTurn = turnsOf.get(id)![0]!
            expect(messages).toHaveLength(4)
            expect(messages.slice(2)).toMatchObject([
              {
                role: "assistant",
                tool_calls: [
                  {
                    id: `call_${toolTurn}`,
                    type: "function",
                    function: { name: "whoami", arguments: JSON.stringify({ n: toolTurn }) }
                  }
                ]
              },
              { role: "tool", tool_call_id: `call_${toolTurn}`, content: `session ${id} turn ${toolTurn}` }
            ])
          } else {
            expect(messages).toHaveLength(2)
          }
        }
      }),
    60_000
  )
})
