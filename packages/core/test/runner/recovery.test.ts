import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Recovery, SessionEvents, SessionInput, SessionRunner } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { Identifier } from "@opencode-ai/schema"
import { Effect } from "effect"
import { world } from "./world.js"

/**
 * Recovery on its own, over a real database: the durable state a crashed host leaves (a Step begun,
 * a text block open, a tool call running, no settlement) is written directly into the log, then
 * Recovery settles it and reports what to resume.
 */

const { reply, text, finish } = LLMScript

/** Appends what a host that died mid-Step leaves: step.started, an open text block, a running tool call. */
const strandStep = (w: Effect.Effect.Success<ReturnType<typeof world>>) =>
  w.run(
    Effect.gen(function* () {
      const events = yield* SessionEvents.Service
      const assistantMessageID = Identifier.newMessageID() as typeof Identifier.SessionMessageID.Type
      const at = { timestamp: Date.now(), sessionID: w.session.id as Identifier.SessionID, assistantMessageID }
      yield* events.append(w.session.id, [
        SessionEvents.draft("session.next.step.started", {
          ...at,
          agent: "build",
          model: { id: "m", providerID: "scripted" }
        }),
        SessionEvents.draft("session.next.text.started", { ...at, textID: "txt_1" }),
        SessionEvents.draft("session.next.tool.called", {
          ...at,
          callID: "call_1",
          tool: "echo",
          input: { say: "x" },
          provider: { executed: false }
        })
      ])
      return assistantMessageID
    })
  )

const recovery = <A>(f: (recovery: Recovery.Interface) => Effect.Effect<A>) => Effect.flatMap(Recovery.Service, f)

describe("Recovery", () => {
  it.scopedLive("settles a crashed Step: open blocks ended, running calls and the Step failed, in one transition", () =>
    Effect.gen(function* () {
      const w = yield* world()
      yield* w.prompt("hi", { resume: false })
      yield* strandStep(w)
      const before = (yield* w.events).length
      expect(yield* w.run(recovery((r) => r.session(w.session.id)))).toEqual({ stranded: 1, tools: 1, requests: 0 })
      const settled = (yield* w.events).slice(before)
      expect(settled.map((e) => e.type)).toEqual([
        "session.next.text.ended",
        "session.next.tool.failed",
        "session.next.step.failed"
      ])
      expect((settled[1]!.data as any).error.message).toBe(Recovery.strandedToolMessage)
      expect((settled[2]!.data as any).error.message).toBe(Recovery.strandedMessage)
      // One transition: consecutive seqs, one stamp.
      expect(settled.map((e) => e.durable.seq)).toEqual([0, 1, 2].map((n) => settled[0]!.durable.seq + n))
      expect(new Set(settled.map((e) => (e.data as any).timestamp)).size).toBe(1)
      // Idempotent, and the admitted prompt is still pending.
      expect(yield* w.run(recovery((r) => r.session(w.session.id)))).toEqual({ stranded: 0, tools: 0, requests: 0 })
      expect(yield* w.run(Effect.flatMap(SessionInput.Service, (input) => input.pending(w.session.id)))).toHaveLength(1)
    })
  )

  it.scopedLive("run settles every session it can claim and names those to resume; a drain then answers them", () =>
    Effect.gen(function* () {
      const w = yield* world()
      yield* w.prompt("are you there?", { resume: false })
      yield* strandStep(w)
      const report = yield* w.run(recovery((r) => r.run))
      expect(report).toEqual({ stranded: 1, tools: 1, requests: 0, pending: [w.session.id] })
      // Each session is released after it is settled.
      const leases = yield* w.run(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT session_id FROM session_lease`.pipe(Effect.orDie))
      )
      expect(leases).toEqual([])
      expect(yield* w.run(recovery((r) => r.run))).toEqual({
        stranded: 0,
        tools: 0,
        requests: 0,
        pending: [w.session.id]
      })

      yield* w.server.enqueue(reply(text("yes"), finish("stop")))
      yield* w.run(Effect.flatMap(SessionRunner.Service, (runner) => runner.wake(w.session.id)))
      yield* w.wait
      const types = yield* w.types
      expect(types.slice(types.indexOf("step.failed"))).toEqual([
        "step.failed",
        "prompted",
        "step.started",
        "text.started",
        "text.ended",
        "step.ended"
      ])
      // The model is told how the stranded call ended.
      const [request] = yield* w.server.requests
      expect(JSON.stringify(request!.body.messages)).toContain(Recovery.strandedToolMessage)
    })
  )

  it.scopedLive("continues: promoted input no Step answered continues, until the session is interrupted", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const continues = w.run(recovery((r) => r.continues(w.session.id)))
      expect(yield* continues).toBe(false)
      yield* w.prompt("unanswered", { resume: false, delivery: "steer" })
      // Admitted only: not part of the conversation yet.
      expect(yield* continues).toBe(false)
      expect(yield* w.run(Effect.flatMap(SessionInput.Service, (input) => input.promoteSteers(w.session.id)))).toBe(1)
      expect(yield* continues).toBe(true)
      yield* Effect.sleep(2)
      yield* w.run(recovery((r) => r.interrupted(w.session.id)))
      expect(yield* continues).toBe(false)
      expect((yield* w.run(recovery((r) => r.run))).pending).toEqual([])
    })
  )
})
