import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { QuestionRequests, SessionReminders, SessionSelection, Sessions } from "@opencode-ai/core"
import { ChatRequest, GitFixture, LLMScript } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { world } from "./world.js"

/**
 * The plan and build reminders (seed 003 "plan", "plan-mode", "build-switch", "Plan and build
 * reminder routing") and the plan_exit tool, through the real runner against the loopback scripted
 * provider: what each Step's provider request carries, and that nothing of it is stored.
 */

const { reply, text, toolCall, finish } = LLMScript
const { userTurns, toolNames, toolResult, system } = ChatRequest

const echo = {
  name: "echo",
  description: "Echo the input back",
  inputSchema: { type: "object", properties: { say: { type: "string" } }, required: ["say"] },
  execute: (input: Readonly<Record<string, unknown>>) =>
    Effect.succeed({ content: [{ type: "text" as const, text: `echo: ${String(input.say)}` }] })
}

const experimental = { OPENCODE_EXPERIMENTAL_PLAN_MODE: "1" }

/** A world with agent switching, the session's expected Plan File, and nothing of a reminder stored. */
const setup = (options: Parameters<typeof world>[0] = {}) =>
  Effect.gen(function* () {
    const w = yield* world(options)
    const switchAgent = (agent: string) =>
      w.run(Effect.flatMap(SessionSelection.Service, (selection) => selection.switchAgent(w.session.id, agent)))
    const agentNow = w.run(
      Effect.map(
        Effect.flatMap(Sessions.Service, (sessions) => sessions.get(w.session.id)),
        (session) => session.agent
      )
    )
    const fileName = `${w.session.time.created}-${w.session.id}.md`
    /** No reminder was ever written to the session's log (they live in requests only). */
    const nothingStored = Effect.map(w.events, (events) =>
      expect(JSON.stringify(events)).not.toContain("system-reminder")
    )
    return { ...w, switchAgent, agentNow, fileName, nothingStored }
  })

/** Waits for the session's one pending question. */
const pendingQuestion = (w: Effect.Effect.Success<ReturnType<typeof setup>>) =>
  Effect.gen(function* () {
    const questions = yield* w.run(QuestionRequests.Service)
    for (;;) {
      const [pending] = yield* questions.list(w.session.id)
      if (pending !== undefined) return { questions, pending }
      yield* Effect.sleep("5 millis")
    }
  })

describe("plan and build reminders, experimental plan mode off", () => {
  it.scopedLive(
    "seed 003 plan + build-switch: every plan Step carries the plan reminder on the latest user turn, then build carries the build-switch reminder; the system text and history stay byte-stable",
    () =>
      Effect.gen(function* () {
        const w = yield* setup()
        yield* w.register(echo)
        yield* w.switchAgent("plan")
        yield* w.server.enqueue(
          reply(toolCall("call_1", "echo", { say: "look" }), finish("tool-calls")),
          reply(text("Here is the plan."), finish("stop")),
          reply(text("Built."), finish("stop"))
        )
        yield* w.prompt("make a plan")
        yield* w.wait
        yield* w.switchAgent("build")
        yield* w.prompt("now build it")
        yield* w.wait

        const [first, second, third] = yield* w.server.requests
        const planned = `make a plan\n\n${SessionReminders.plan}`
        // Both Steps of the plan run: the reminder on the (same) latest user turn, so the prefix holds.
        expect(userTurns(first!)).toEqual([planned])
        expect(userTurns(second!)).toEqual([planned])
        // The build run: the latest user turn has the build-switch reminder; the earlier turn is plain
        // again (flag off, upstream keeps these reminders in memory only).
        expect(userTurns(third!)).toEqual(["make a plan", `now build it\n\n${SessionReminders.buildSwitch}`])
        expect(ChatRequest.conversation(third!)).not.toContain("Plan Mode - Reminder")
        // The system text (agent prompt, identity, Instruction Baseline) never changed.
        expect(system(second!)).toBe(system(first!))
        expect(system(third!)).toBe(system(first!))
        expect(system(first!)).not.toContain("system-reminder")
        // Flag off: no plan_exit / plan_enter tools.
        expect(toolNames(first!)).not.toContain("plan_exit")
        expect(toolNames(third!)).not.toContain("plan_enter")
        yield* w.nothingStored
      })
  )

  it.scopedLive(
    "seed 003 plan + build-switch: no reminder for build without a plan turn, none for another agent after plan, and build-switch once any assistant was plan",
    () =>
      Effect.gen(function* () {
        const w = yield* setup({ agent: { review: { mode: "primary", description: "Reviews" } } })
        yield* w.server.enqueue(
          reply(text("hello"), finish("stop")),
          reply(text("planned"), finish("stop")),
          reply(text("reviewed"), finish("stop")),
          reply(text("built"), finish("stop"))
        )
        yield* w.prompt("hi")
        yield* w.wait
        yield* w.switchAgent("plan")
        yield* w.prompt("plan")
        yield* w.wait
        yield* w.switchAgent("review")
        yield* w.prompt("review")
        yield* w.wait
        yield* w.switchAgent("build")
        yield* w.prompt("build")
        yield* w.wait

        const [build, plan, review, after] = yield* w.server.requests
        expect(userTurns(build!)).toEqual(["hi"])
        expect(userTurns(plan!).at(-1)).toBe(`plan\n\n${SessionReminders.plan}`)
        // The seed's condition names the build agent: another agent after plan gets no reminder.
        expect(userTurns(review!)).toEqual(["hi", "plan", "review"])
        // Some assistant message (not the latest) was plan's: build is told its mode changed.
        expect(userTurns(after!)).toEqual(["hi", "plan", "review", `build\n\n${SessionReminders.buildSwitch}`])
        yield* w.nothingStored
      })
  )
})

describe("plan and build reminders, experimental plan mode on", () => {
  it.scopedLive(
    "seed 003 plan-mode: without a plan file the plan agent is told to create it; the reminder stays on that turn, the plan file is the only file it may write",
    () =>
      Effect.gen(function* () {
        const w = yield* setup({ env: experimental, setup: GitFixture.repository({ "README.md": "hello\n" }) })
        const plan = path.join(w.directory, ".opencode", "plans", w.fileName)
        yield* w.switchAgent("plan")
        yield* w.server.enqueue(
          reply(
            toolCall("call_plan", "write", { path: plan, content: "# Plan\n1. Do it\n" }),
            toolCall("call_code", "write", { path: "src.ts", content: "export {}\n" }),
            finish("tool-calls")
          ),
          reply(text("The plan is written."), finish("stop")),
          reply(text("Refined."), finish("stop"))
        )
        yield* w.prompt("plan the feature")
        yield* w.wait
        yield* w.prompt("refine it")
        yield* w.wait

        const [first, second, third] = yield* w.server.requests
        const withInfo = (exists: boolean) =>
          SessionReminders.planMode.replace(SessionReminders.planInfoPlaceholder, () =>
            SessionReminders.planInfo(plan, exists)
          )
        expect(userTurns(first!)).toEqual([`plan the feature\n\n${withInfo(false)}`])
        expect(withInfo(false)).toContain(`There is no plan file yet. Create your plan at ${plan} with the write tool.`)
        // The plan agent may write its plan file, and nothing else.
        expect(fs.readFileSync(plan, "utf8")).toBe("# Plan\n1. Do it\n")
        expect(fs.existsSync(path.join(w.directory, "src.ts"))).toBe(false)
        expect(toolResult(second!, "call_code")).toMatch(/denied|not allowed/i)
        // The same turn keeps its reminder; the file's state is read when the request is built.
        expect(userTurns(second!)).toEqual([`plan the feature\n\n${withInfo(true)}`])
        // The latest assistant was plan's: the next turn gets no second reminder.
        expect(userTurns(third!)).toEqual([`plan the feature\n\n${withInfo(true)}`, "refine it"])
        // The plan agent is offered plan_exit (allowed for plan), not plan_enter (build's).
        expect(toolNames(first!)).toContain("plan_exit")
        expect(toolNames(first!)).not.toContain("plan_enter")
        yield* w.nothingStored
      })
  )

  it.scopedLive(
    "seed 003 plan-mode: with an existing plan file the plan agent is told to edit it (OPENCODE_EXPERIMENTAL is the umbrella flag)",
    () =>
      Effect.gen(function* () {
        const w = yield* setup({
          env: { OPENCODE_EXPERIMENTAL: "true" },
          setup: GitFixture.repository({ "README.md": "hello\n" })
        })
        const plan = path.join(w.directory, ".opencode", "plans", w.fileName)
        fs.mkdirSync(path.dirname(plan), { recursive: true })
        fs.writeFileSync(plan, "# Earlier plan\n")
        yield* w.switchAgent("plan")
        yield* w.server.enqueue(reply(text("I will refine it."), finish("stop")))
        yield* w.prompt("continue planning")
        yield* w.wait

        const [first] = yield* w.server.requests
        const [turn] = userTurns(first!)
        expect(turn).toContain(
          `A plan file already exists at ${plan}. Read it and refine it in place with the edit tool.`
        )
        expect(turn).toContain("## Plan Workflow")
        expect(turn).not.toContain(SessionReminders.planInfoPlaceholder)
        expect(turn).not.toContain("There is no plan file yet")
      })
  )

  it.scopedLive(
    "seed 003 build-switch: outside a git worktree the plan file is under <data>/plans/; build after plan gets the build-switch reminder without the plan-file sentence while no plan file exists",
    () =>
      Effect.gen(function* () {
        const w = yield* setup({ env: experimental })
        const plan = path.join(w.dataDir, "plans", w.fileName)
        yield* w.switchAgent("plan")
        yield* w.server.enqueue(reply(text("planned"), finish("stop")), reply(text("built"), finish("stop")))
        yield* w.prompt("plan")
        yield* w.wait
        yield* w.switchAgent("build")
        yield* w.prompt("build")
        yield* w.wait

        const [first, second] = yield* w.server.requests
        expect(userTurns(first!)[0]).toContain(`Create your plan at ${plan} with the write tool.`)
        const [planTurn, buildTurn] = userTurns(second!)
        // Replayed on its turn, unchanged.
        expect(planTurn).toBe(userTurns(first!)[0])
        expect(buildTurn).toBe(`build\n\n${SessionReminders.buildSwitch}`)
        expect(toolNames(second!)).toContain("plan_enter")
        expect(toolNames(second!)).not.toContain("plan_exit")
      })
  )

  it.scopedLive(
    "seed 003 build-switch: plan_exit asks the user, switches the session to build durably, and the build Step carries the build-switch reminder pointing at the plan file",
    () =>
      Effect.gen(function* () {
        const w = yield* setup({ env: experimental, setup: GitFixture.repository({ "README.md": "hello\n" }) })
        const plan = path.join(w.directory, ".opencode", "plans", w.fileName)
        fs.mkdirSync(path.dirname(plan), { recursive: true })
        fs.writeFileSync(plan, "# Plan\n")
        yield* w.switchAgent("plan")
        yield* w.server.enqueue(
          reply(toolCall("call_exit", "plan_exit", {}), finish("tool-calls")),
          reply(text("Implementing the plan."), finish("stop"))
        )
        yield* w.prompt("plan it")
        const { questions, pending } = yield* pendingQuestion(w)
        expect(pending.questions).toEqual([
          {
            question: `The plan in ${path.join(".opencode", "plans", w.fileName)} is ready. Switch to the build agent and start implementing it?`,
            header: "Build agent",
            custom: false,
            options: [
              { label: "Yes", description: "Switch to the build agent and implement the plan" },
              { label: "No", description: "Stay with the plan agent and keep refining the plan" }
            ]
          }
        ])
        expect(pending.tool).toMatchObject({ callID: "call_exit" })
        yield* questions.reply(w.session.id, pending.id, [["Yes"]])
        yield* w.wait

        expect(yield* w.agentNow).toBe("build")
        // The test's switch to plan, then plan_exit's to build.
        expect((yield* w.types).filter((type) => type === "agent.switched")).toHaveLength(2)
        const [planStep, buildStep] = yield* w.server.requests
        expect(toolNames(planStep!)).toContain("plan_exit")
        // The next Step of the same run is build's: its tools, and the reminders of the switch.
        expect(toolNames(buildStep!)).toContain("plan_enter")
        expect(toolNames(buildStep!)).not.toContain("plan_exit")
        expect(toolResult(buildStep!, "call_exit")).toContain("this session runs the build agent")
        const planMode = SessionReminders.planMode.replace(SessionReminders.planInfoPlaceholder, () =>
          SessionReminders.planInfo(plan, true)
        )
        expect(userTurns(buildStep!)).toEqual([
          `plan it\n\n${planMode}\n\n${SessionReminders.buildSwitch}\n\n${SessionReminders.planFileToExecute(plan)}`
        ])
        expect(system(buildStep!)).toBe(system(planStep!))
        yield* w.nothingStored
      })
  )

  it.scopedLive("seed 003 build-switch: plan_exit answered No keeps the plan agent and tells the model so", () =>
    Effect.gen(function* () {
      const w = yield* setup({ env: experimental, setup: GitFixture.repository({ "README.md": "hello\n" }) })
      yield* w.switchAgent("plan")
      yield* w.server.enqueue(
        reply(toolCall("call_exit", "plan_exit", {}), finish("tool-calls")),
        reply(text("I will keep planning."), finish("stop"))
      )
      yield* w.prompt("plan it")
      const { questions, pending } = yield* pendingQuestion(w)
      yield* questions.reply(w.session.id, pending.id, [["No"]])
      yield* w.wait

      expect(yield* w.agentNow).toBe("plan")
      // Only the test's own switch to plan.
      expect((yield* w.types).filter((type) => type === "agent.switched")).toHaveLength(1)
      const [, second] = yield* w.server.requests
      expect(toolResult(second!, "call_exit")).toContain("The user chose to stay in plan mode")
      expect(toolNames(second!)).toContain("plan_exit")
      expect(ChatRequest.conversation(second!)).not.toContain("Your mode has changed from plan to build")
    })
  )
})
