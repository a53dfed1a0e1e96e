export * as SessionReminders from "./session-reminders.js"

/**
 * Session Reminders: the plan and build reminders (seed 003 "plan", "plan-mode", "build-switch" and
 * "Plan and build reminder routing", upstream's `SessionReminders.apply`), each a `<system-reminder>`
 * block appended to a user turn of one Step's request. Our wording; the sections, placeholders and
 * conditions are upstream's.
 *
 * A user turn is a `user` or `synthetic` message (both reach the model as user messages). The
 * reminders are added to the request only: the Session History is never written, and the
 * Instruction Baseline (in the system text) never changes, so the provider-cache prefix stays put.
 *
 * Experimental plan mode off (the default), evaluated for the Step being built:
 * - the Step's agent is `plan` → the plan reminder ({@link plan}) on the LATEST user turn;
 * - the Step's agent is `build` and SOME assistant message of the projected history was produced by
 *   `plan` → the build-switch reminder ({@link buildSwitch}) on the latest user turn.
 * The latest user turn changes with each prompt, so an earlier turn loses its reminder (as upstream,
 * which keeps these reminders in memory only).
 *
 * Experimental plan mode on (`OPENCODE_EXPERIMENTAL_PLAN_MODE` or `OPENCODE_EXPERIMENTAL`): upstream
 * evaluates these at every Step and STORES what it adds on the then-latest user message, so later
 * Steps keep seeing it. We add them to the request only, by replaying the same evaluation over the
 * history: every assistant message is a past Step (its agent, and the agent of the assistant message
 * before it), and the Step being built is the last one. For each such Step:
 * - agent not `plan` and the previous assistant's agent `plan` → the build-switch reminder, plus the
 *   sentence pointing at the Plan File when it exists ({@link planFileToExecute});
 * - agent `plan` and the previous assistant's agent not `plan` (or none) → the plan-mode reminder
 *   ({@link planMode}) with `${planInfo}` replaced by the Plan File's state ({@link planInfo});
 * attached to the latest user turn before that Step. A compaction summary counts as an assistant of
 * its own agent (upstream's summary is an assistant message of the `compaction` agent), so a plan
 * session that was compacted is told about plan mode again. Replaying keeps each reminder on the turn
 * it was first added to, so the request prefix is stable from Step to Step; the one exception is the
 * Plan File's state, read when the request is built: the first Step after the plan file is created
 * shows the existing-file text where the earlier Steps showed the create-it text.
 */

import type { Errors, Identifier, SessionMessages } from "@opencode-ai/schema"
import { Context, Effect, Layer } from "effect"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { PlanFile } from "../session/plan-file.js"

/** Seed 003 "plan": experimental plan mode off and the agent is `plan`. */
export const plan = `<system-reminder>
# Plan Mode - Reminder

Plan mode is ON: this is a READ-ONLY phase. You must not change anything. No file edits, writes or
patches, no configuration changes, no commits, and no shell command that modifies a file or any state
(no sed -i, tee, echo or cat with redirection, mv, rm or the like). Shell commands may only read and
inspect. This rule outranks every other instruction, including a direct request from the user to
make an edit now. Observe, analyse and plan: nothing else. There are no exceptions.

---

## What you are doing now

Think, read, search and, where it helps, hand searches to explore subagents, so that you can put
together a sound plan for what the user wants to achieve. The plan should be complete enough to
carry out as written, yet short enough to take in at a glance.

Ask the user to clarify the goal, or to choose between trade-offs, whenever it matters.

**NOTE:** You may ask the user questions at any point. Do not build on large assumptions about what
they want: the aim is a well-researched plan with no loose ends before any implementation begins.

---

## Important

The user has said they do not want anything executed yet: make no edits, run no tool that is not
read-only (no configuration changes, no commits), and change nothing on the system. This overrides
every other instruction you have been given.
</system-reminder>`

/**
 * Seed 003 "plan-mode": experimental plan mode on, the agent is `plan` and the previous assistant's
 * was not. `${planInfo}` is replaced by {@link planInfo}.
 */
export const planMode = `<system-reminder>
Plan mode is ON. The user has said they do not want anything executed yet: you MUST NOT edit any
file (the plan file named below is the one exception), run any tool that is not read-only (that
includes changing configuration and making commits), or change the system in any other way. This
overrides every other instruction you have been given.

## Plan File Info:
\${planInfo}
Build up your plan in this file step by step, writing to it or editing it as your understanding
grows. It is the ONLY file you may change; everything else you do must be read-only.

## Plan Workflow

### Phase 1: Initial Understanding
Goal: understand the request fully, by reading the code involved and by asking the user questions.
In this phase use only the explore subagent type.

1. Concentrate on the user's request and on the code it touches.

2. **Run up to 3 explore agents IN PARALLEL** (one message with several tool calls) to explore the
   codebase quickly.
   - One agent is enough when the task is confined to known files, the user named the paths, or the
     change is small and targeted.
   - Use several when the scope is unclear, the work spans several areas of the codebase, or you
     first need to learn the existing patterns.
   - Fewer is better: 3 at most, and usually 1.
   - With several agents, give each its own search focus, e.g. one looks for existing
     implementations, one for related components, one for how things are tested.

3. Once you have explored, use the question tool to settle ambiguities in the request early.

### Phase 2: Design
Goal: work out how to implement it.

Run general agent(s) to design the implementation from the user's intent and what Phase 1 found.

You may run up to 1 agent(s) at a time.

**Guidelines:**
- **Default**: run at least 1 planning agent for most tasks; it checks your understanding and brings
  up alternatives.
- **Skip agents**: only for truly trivial tasks (a typo, a one-line change, a plain rename).

When several agents are worth it:
- The task touches several parts of the codebase
- It is a large refactor or an architectural change
- There are many edge cases
- Different approaches deserve a comparison

Useful perspectives by kind of task:
- New feature: simplicity vs performance vs maintainability
- Bug fix: root cause vs workaround vs prevention
- Refactoring: smallest change vs cleanest architecture

In the agent's prompt:
- Give the full background from Phase 1, including file names and the code paths you traced
- State the requirements and the constraints
- Ask for a detailed implementation plan

### Phase 3: Review
Goal: check the plan(s) from Phase 2 against what the user actually wants.
1. Read the key files the agents pointed to, to deepen your understanding
2. Make sure the plans match the user's original request
3. Use the question tool to clear up whatever is still open

### Phase 4: Final Plan
Goal: write your final plan into the plan file (the only file you may change).
- Keep only the approach you recommend, not every alternative you weighed
- Make it quick to scan, yet detailed enough to carry out
- List the paths of the key files to change
- Add a verification section: how to check the change end to end (run the code, use MCP tools, run
  the tests)

### Phase 5: Call plan_exit
At the very end of your turn, once your questions are answered and the plan file holds your final
plan, always call plan_exit to tell the user that planning is done.
This matters: end your turn ONLY by asking the user a question or by calling plan_exit. Do not stop
for any other reason.

**Important:** use the question tool to settle requirements or the approach, and plan_exit to ask for
approval of the plan. Do NOT use the question tool to ask "Is this plan okay?": that is what
plan_exit is for.

NOTE: you may ask the user questions at any point in this workflow. Do not build on large
assumptions about what they want: the aim is a well-researched plan with no loose ends before
implementation begins.
</system-reminder>`

/** Seed 003 "build-switch": the agent changed from `plan` to a building agent. */
export const buildSwitch = `<system-reminder>
Your mode has changed from plan to build.
The read-only restriction is lifted.
You may now change files, run shell commands and use all of your tools as the work requires.
</system-reminder>`

/** The placeholder in {@link planMode} that {@link planInfo} replaces. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: upstream's literal placeholder, not a template.
export const planInfoPlaceholder = "${planInfo}"

/** The `${planInfo}` of {@link planMode}: the Plan File at `path` exists, or must be created. */
export const planInfo = (path: string, exists: boolean): string =>
  exists
    ? `A plan file already exists at ${path}. Read it and refine it in place with the edit tool.`
    : `There is no plan file yet. Create your plan at ${path} with the write tool.`

/** Follows {@link buildSwitch} under experimental plan mode when the Plan File at `path` exists. */
export const planFileToExecute = (path: string): string =>
  `A plan file exists at ${path}. Carry out the plan it describes.`

/** Which reminder a user turn gets. */
export type Kind = "plan" | "plan-mode" | "build-switch"

/** One reminder for the user turn `messageID`. */
export interface Placement {
  readonly messageID: Identifier.MessageID
  readonly kind: Kind
}

const isUserTurn = (
  message: SessionMessages.SessionMessage
): message is SessionMessages.SessionMessageUser | SessionMessages.SessionMessageSynthetic =>
  message.type === "user" || message.type === "synthetic"

/**
 * Where the reminders go for a Step of `agent` over `history` (the projected Session History), in
 * the order they are appended; see the module doc for the conditions. Pure.
 */
export const placements = (input: {
  readonly history: ReadonlyArray<SessionMessages.SessionMessage>
  readonly agent: string
  readonly experimentalPlanMode: boolean
}): ReadonlyArray<Placement> => {
  const { history, agent } = input
  if (!input.experimentalPlanMode) {
    let latest: SessionMessages.SessionMessageUser | SessionMessages.SessionMessageSynthetic | undefined
    for (let index = history.length - 1; index >= 0 && latest === undefined; index--) {
      const message = history[index]!
      if (isUserTurn(message)) latest = message
    }
    if (latest === undefined) return []
    const wasPlan = history.some((message) => message.type === "assistant" && message.agent === "plan")
    return [
      ...(agent === "plan" ? [{ messageID: latest.id, kind: "plan" as const }] : []),
      ...(agent === "build" && wasPlan ? [{ messageID: latest.id, kind: "build-switch" as const }] : [])
    ]
  }
  const placed: Array<Placement> = []
  let turn: Identifier.MessageID | undefined
  let previous: string | undefined
  /** Upstream's evaluation at one Step of `stepAgent`, after an assistant of `previous`. */
  const step = (stepAgent: string) => {
    if (turn === undefined) return
    if (stepAgent !== "plan" && previous === "plan") placed.push({ messageID: turn, kind: "build-switch" })
    else if (stepAgent === "plan" && previous !== "plan") placed.push({ messageID: turn, kind: "plan-mode" })
  }
  for (const message of history) {
    if (isUserTurn(message)) turn = message.id
    else if (message.type === "assistant") {
      step(message.agent)
      previous = message.agent
    } else if (message.type === "compaction") previous = "compaction"
  }
  step(agent)
  return placed
}

/**
 * `history` with each placement's text appended (after a blank line) to its user turn's text, every
 * other message unchanged. Pure.
 */
export const appendTo = (
  history: ReadonlyArray<SessionMessages.SessionMessage>,
  texts: ReadonlyArray<{ readonly messageID: Identifier.MessageID; readonly text: string }>
): ReadonlyArray<SessionMessages.SessionMessage> => {
  if (texts.length === 0) return history
  return history.map((message) => {
    if (!isUserTurn(message)) return message
    const added = texts.filter((item) => item.messageID === message.id).map((item) => item.text)
    return added.length === 0 ? message : { ...message, text: [message.text, ...added].join("\n\n") }
  })
}

export interface Interface {
  /**
   * `history` as one Step of `agent` sends it: with the plan and build reminders appended to their
   * user turns (see the module doc). The Plan File is located (and its existence read) only when a
   * plan-mode or build-switch reminder applies under experimental plan mode. Writes nothing.
   */
  readonly apply: (input: {
    readonly sessionID: Identifier.SessionID
    readonly agent: string
    readonly history: ReadonlyArray<SessionMessages.SessionMessage>
  }) => Effect.Effect<
    ReadonlyArray<SessionMessages.SessionMessage>,
    Errors.SessionNotFoundError | Errors.InvalidRequestError
  >
}

/** `yield* SessionReminders.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionReminders")<Service, Interface>() {}

export interface Options {
  /** Experimental plan mode (EnvFlag.experimentalPlanMode of the runtime's environment). */
  readonly experimentalPlanMode: boolean
}

export const layer = (options: Options): Layer.Layer<Service, never, PlanFile.Service> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const planFile = yield* PlanFile.Service
      const apply = Traced.fn("SessionReminders.apply")(
        function* (input: {
          readonly sessionID: Identifier.SessionID
          readonly agent: string
          readonly history: ReadonlyArray<SessionMessages.SessionMessage>
        }) {
          const placed = placements({ ...input, experimentalPlanMode: options.experimentalPlanMode })
          if (placed.length === 0) return input.history
          const file = options.experimentalPlanMode ? yield* planFile.locate(input.sessionID) : undefined
          const text = (kind: Kind): string => {
            switch (kind) {
              case "plan":
                return plan
              case "plan-mode":
                // A function replacement: a `$` in the path is not a replacement pattern.
                return planMode.replace(planInfoPlaceholder, () => planInfo(file?.path ?? "", file?.exists ?? false))
              case "build-switch":
                return file?.exists === true ? `${buildSwitch}\n\n${planFileToExecute(file.path)}` : buildSwitch
            }
          }
          return appendTo(
            input.history,
            placed.map((item) => ({ messageID: item.messageID, text: text(item.kind) }))
          )
        },
        (effect, input) => LogAnnotation.session(effect, input.sessionID)
      )
      return Service.of({ apply })
    })
  )
