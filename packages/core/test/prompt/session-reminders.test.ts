import { describe, expect, it } from "@effect/vitest"
import { SessionReminders } from "@opencode-ai/core"
import { Identifier, SessionMessages } from "@opencode-ai/schema"
import { Schema } from "effect"

/**
 * Where the plan and build reminders go (seed 003 "Plan and build reminder routing"), over decoded
 * Session Histories: the cases the runner tests (test/runner/session-reminders.test.ts) do not reach
 * cheaply.
 */

const decode = Schema.decodeUnknownSync(SessionMessages.SessionMessage)
const time = { created: 1 }
const user = (id: string, text = id) => decode({ type: "user", id: `msg_${id}`, time, text })
const synthetic = (id: string) =>
  decode({ type: "synthetic", id: `msg_${id}`, time, sessionID: "ses_1", text: "Continue." })
const assistant = (id: string, agent: string) =>
  decode({ type: "assistant", id: `msg_${id}`, time, agent, model: { id: "m", providerID: "p" }, content: [] })
const compaction = (id: string) =>
  decode({ type: "compaction", id: `msg_${id}`, time, reason: "auto", summary: "S", recent: "" })

describe("SessionReminders.placements", () => {
  it("seed 003 plan-mode: a compaction summary counts as an assistant of its own agent, so a compacted plan session is told about plan mode again, on the synthetic continuation", () => {
    const history = [user("u1"), assistant("a1", "plan"), compaction("c1"), synthetic("s1")]
    expect(SessionReminders.placements({ history, agent: "plan", experimentalPlanMode: true })).toEqual([
      { messageID: "msg_u1", kind: "plan-mode" },
      { messageID: "msg_s1", kind: "plan-mode" }
    ])
    // Without the compaction, the plan Step after a plan Step adds nothing.
    expect(
      SessionReminders.placements({
        history: [user("u1"), assistant("a1", "plan"), synthetic("s1")],
        agent: "plan",
        experimentalPlanMode: true
      })
    ).toEqual([{ messageID: "msg_u1", kind: "plan-mode" }])
  })

  it("seed 003 build-switch: with the flag on, the switch is where the latest assistant was plan's and the agent is not, whatever agent that is", () => {
    const history = [user("u1"), assistant("a1", "plan"), user("u2"), assistant("a2", "review"), user("u3")]
    expect(SessionReminders.placements({ history, agent: "build", experimentalPlanMode: true })).toEqual([
      { messageID: "msg_u1", kind: "plan-mode" },
      { messageID: "msg_u2", kind: "build-switch" }
    ])
    // Flag off: only build is told, on the latest turn, because some assistant was plan's.
    expect(SessionReminders.placements({ history, agent: "build", experimentalPlanMode: false })).toEqual([
      { messageID: "msg_u3", kind: "build-switch" }
    ])
    expect(SessionReminders.placements({ history, agent: "review", experimentalPlanMode: false })).toEqual([])
  })

  it("seed 003 plan: a synthetic turn is a user turn; without any user turn nothing is added", () => {
    expect(
      SessionReminders.placements({
        history: [user("u1"), assistant("a1", "build"), synthetic("s1")],
        agent: "plan",
        experimentalPlanMode: false
      })
    ).toEqual([{ messageID: "msg_s1", kind: "plan" }])
    expect(
      SessionReminders.placements({ history: [assistant("a1", "plan")], agent: "plan", experimentalPlanMode: false })
    ).toEqual([])
    expect(
      SessionReminders.placements({ history: [assistant("a1", "build")], agent: "plan", experimentalPlanMode: true })
    ).toEqual([])
  })

  it("seed 003 plan-mode: appendTo adds each text after a blank line to its turn and leaves the rest as it was", () => {
    const history = [user("u1", "hello"), assistant("a1", "plan"), synthetic("s1")]
    const appended = SessionReminders.appendTo(history, [
      { messageID: Identifier.SessionMessageID.make("msg_u1"), text: "R1" },
      { messageID: Identifier.SessionMessageID.make("msg_u1"), text: "R2" }
    ])
    expect(appended[0]).toEqual({ ...history[0], text: "hello\n\nR1\n\nR2" })
    expect(appended[1]).toBe(history[1])
    expect(appended[2]).toBe(history[2])
    expect(history[0]).toMatchObject({ text: "hello" })
  })
})
