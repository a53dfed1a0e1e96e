export * as PlanTools from "./plan-tools.js"

/**
 * The plan mode switch tools of experimental plan mode: `plan_exit` (the plan agent asks to hand
 * over to build) and `plan_enter` (the build agent suggests planning first). Registered only when
 * experimental plan mode is on (`OPENCODE_EXPERIMENTAL_PLAN_MODE`, or `OPENCODE_EXPERIMENTAL`), as
 * upstream registers `plan_exit`; upstream ships `plan_enter` commented out, this runtime offers it
 * as the mirror image. Permissions as upstream's built-ins: both denied by default, `plan_exit`
 * allowed for `plan` and `plan_enter` for `build` (AgentCatalog), so each agent is offered only its
 * own; each call also asks its permission (`*`), so a config `ask` rule is honoured.
 *
 * A call asks the user first, through the durable question mechanism (QuestionRequests, like the
 * `question` tool; upstream's plan_exit asks the same Yes/No question). On "Yes" it switches the
 * session's agent through SessionSelection.switchAgent: one durable `agent.switched` event, so the
 * next Step of the same drain (and every later one) runs with the new agent, while the Step that made
 * the call keeps its own agent's rules. Upstream instead writes a synthetic user message carrying the
 * new agent and an "execute the plan" text; here the tool result says it. Any other answer, or a
 * rejected question, fails the call with a message telling the model to stay in its mode.
 */

import { Effect, Layer, Schema } from "effect"
import { QuestionRequests } from "../../question/question-requests.js"
import { PlanFile } from "../../session/plan-file.js"
import { SessionSelection } from "../../session/session-selection.js"
import { ToolRegistry } from "../tool-registry.js"
import { BuiltinTool } from "./builtin-tool.js"

/** Both tools take no input. */
export const Input = Schema.Struct({})

const exitDescription = `Ends plan mode: asks the user whether this session should switch to the build agent and start implementing the plan in the plan file.

Call it only when:
- your plan is complete and written to the plan file, and
- you have already cleared up any open questions with the user.

Do not call it:
- to ask whether the plan looks good: calling it IS that request;
- for tasks that were only research or questions and need no implementation.

If the user agrees, the following steps of this session run as the build agent, which may edit files. If the user declines, stay in plan mode and wait for their feedback.`

const enterDescription = `Suggests switching this session to the plan agent, to research the task and write a plan before changing any code. It asks the user first.

Call it when a request is large, ambiguous or risky enough that agreeing on a plan first would save rework: several components, architectural choices, unclear requirements. Do not call it for small, clear changes.

If the user agrees, the following steps of this session run as the plan agent, which is read-only except for its plan file.`

/** A tool that asks the user, then switches the session's agent to `target` on "Yes". */
const switcher = (
  services: {
    readonly questions: Pick<QuestionRequests.Interface, "ask">
    readonly selection: Pick<SessionSelection.Interface, "switchAgent">
    readonly planFile: PlanFile.Interface
  },
  definition: {
    readonly name: "plan_exit" | "plan_enter"
    readonly description: string
    readonly target: "build" | "plan"
    readonly question: (plan: string) => { readonly question: string; readonly header: string }
    readonly yes: string
    readonly no: string
    readonly approved: (plan: string) => string
    readonly declined: string
  }
): ToolRegistry.Tool =>
  BuiltinTool.define({
    name: definition.name,
    description: definition.description,
    input: Input,
    execute: Effect.fn(`PlanTools.${definition.name}`)(function* (_input: typeof Input.Type, context) {
      yield* context.ask({ action: definition.name, resources: ["*"] })
      const located = yield* services.planFile
        .locate(context.sessionID)
        .pipe(Effect.mapError((error) => BuiltinTool.fail(error.message)))
      const plan = PlanFile.display(located)
      const answers = yield* services.questions
        .ask({
          sessionID: context.sessionID,
          questions: [
            {
              ...definition.question(plan),
              custom: false,
              options: [
                { label: "Yes", description: definition.yes },
                { label: "No", description: definition.no }
              ]
            }
          ],
          ...(context.messageID !== undefined ? { tool: { messageID: context.messageID, callID: context.callID } } : {})
        })
        .pipe(Effect.mapError(() => BuiltinTool.fail(definition.declined)))
      if (answers[0]?.[0] !== "Yes") return yield* BuiltinTool.fail(definition.declined)
      yield* services.selection
        .switchAgent(context.sessionID, definition.target)
        .pipe(Effect.mapError((error) => BuiltinTool.fail(error.message)))
      return BuiltinTool.text(definition.approved(located.path), { agent: definition.target, plan: located.path })
    })
  })

/** The `plan_exit` tool (see the module doc). */
export const exit = (services: Parameters<typeof switcher>[0]): ToolRegistry.Tool =>
  switcher(services, {
    name: "plan_exit",
    description: exitDescription,
    target: "build",
    question: (plan) => ({
      question: `The plan in ${plan} is ready. Switch to the build agent and start implementing it?`,
      header: "Build agent"
    }),
    yes: "Switch to the build agent and implement the plan",
    no: "Stay with the plan agent and keep refining the plan",
    approved: (plan) =>
      `The user approved the plan. From the next step on, this session runs the build agent, which may edit files: carry out the plan in ${plan}.`,
    declined:
      "The user chose to stay in plan mode. Keep refining the plan with them, and do not call plan_exit again until they say it is ready."
  })

/** The `plan_enter` tool (see the module doc). */
export const enter = (services: Parameters<typeof switcher>[0]): ToolRegistry.Tool =>
  switcher(services, {
    name: "plan_enter",
    description: enterDescription,
    target: "plan",
    question: (plan) => ({
      question: `Switch to the plan agent and write a plan to ${plan} before making changes?`,
      header: "Plan mode"
    }),
    yes: "Switch to the plan agent to research and plan first",
    no: "Stay with the build agent and keep making changes",
    approved: (plan) =>
      `The user agreed to plan first. From the next step on, this session runs the plan agent, which is read-only except for the plan file ${plan}: research the request and write the plan there.`,
    declined: "The user declined to switch to plan mode. Continue the task with the build agent."
  })

/** Registers `plan_exit` and `plan_enter` in the ToolRegistry for the lifetime of the layer. */
export const layer: Layer.Layer<
  never,
  never,
  ToolRegistry.Service | QuestionRequests.Service | SessionSelection.Service | PlanFile.Service
> = Layer.scopedDiscard(
  Effect.gen(function* () {
    const registry = yield* ToolRegistry.Service
    const services = {
      questions: yield* QuestionRequests.Service,
      selection: yield* SessionSelection.Service,
      planFile: yield* PlanFile.Service
    }
    yield* registry.register(exit(services))
    yield* registry.register(enter(services))
  })
)
