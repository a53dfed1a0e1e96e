export * as TaskTool from "./task-tool.js"

/**
 * The `task` tool: runs a Subagent in a Child Session and returns the child's final reply.
 *
 * A call names a subagent (`general`, `explore`, or a configured agent whose mode is not `primary`)
 * and asks permission (`task` on the subagent's name, under the calling agent's rules), unless the
 * session's latest prompt mentions that subagent (`@name`: the user asked for it). It then
 * creates the child session (its `parentID` is the calling session; same Location; the subagent as
 * its agent; the subagent's model, else the model of the calling Step), admits `prompt` to it, wakes
 * it and waits until it is idle. The child is an ordinary session run by the SessionRunner like any
 * other: it appears in `active` under its own ID while it runs (its parent appears only because the
 * parent's own drain is running this call), its permission and question requests carry the child's
 * sessionID, and it can be read, prompted or interrupted on its own.
 *
 * The result is the text of the child's last assistant message, framed with the subagent and the
 * child's ID (`structured`: `{ sessionID, agent }`); ToolSettlement bounds it like every tool output.
 * A child whose last Step failed (or was interrupted on its own) settles the call as a ToolFailure
 * with that error. The child's ID is reported as progress as soon as it exists.
 *
 * Interruption: interrupting the call (the parent's interrupt, or its host closing) interrupts the
 * child, and resolves once the child's Step has settled and its pending requests are rejected.
 * A child session cannot start a subagent of its own (the call fails), so delegation is one level.
 */

import { type Model, SessionError } from "@opencode-ai/schema"
import { Effect, Layer, Option, Schema } from "effect"
import type { AgentCatalog } from "../config/agent-catalog.js"
import { Config } from "../config/config.js"
import { SessionInput } from "../input/session-input.js"
import { Locations } from "../location/locations.js"
import { Traced } from "../observability/traced.js"
import { SubagentPrompt } from "../prompt/subagent-prompt.js"
import { SessionRunner } from "../runner/session-runner.js"
import { SessionHistory } from "../session/session-history.js"
import { Sessions } from "../session/sessions.js"
import { BuiltinTool } from "../tool/builtin/builtin-tool.js"
import { ToolRegistry } from "../tool/tool-registry.js"

export const name = "task"

export const Input = Schema.Struct({
  description: Schema.String.annotations({ description: "A short (3-5 word) description of the job" }),
  prompt: Schema.String.annotations({ description: "The complete instructions for the subagent" }),
  subagent_type: Schema.String.annotations({ description: "The name of the subagent to run" })
})
export type Input = typeof Input.Type

/** Whether an agent can run as a subagent: any visible agent whose mode is not `primary`. */
export const isSubagent = (agent: AgentCatalog.Agent): boolean => agent.mode !== "primary" && !agent.hidden

/** The final text of a child's history: its last assistant message's text parts, or its error. */
export const lastReply = (
  history: ReadonlyArray<{ readonly type: string }>
): { readonly text: string; readonly error?: string | undefined } => {
  for (let index = history.length - 1; index >= 0; index--) {
    const message = history[index] as SessionHistory.Page["data"][number]
    if (message.type !== "assistant") continue
    const text = message.content
      .flatMap((part) => (part.type === "text" ? [part.text] : []))
      .join("")
      .trim()
    return message.error === undefined ? { text } : { text, error: SessionError.messageOf(message.error) }
  }
  return { text: "" }
}

export interface Dependencies {
  readonly config: Config.Interface
  readonly sessions: Sessions.Interface
  readonly input: SessionInput.Interface
  readonly runner: SessionRunner.Interface
  readonly history: SessionHistory.Interface
  readonly locations: Locations.Interface
}

/** The tool over its services; its description lists the catalog's subagents. */
export const make = (deps: Dependencies): ToolRegistry.Tool => {
  const subagents = deps.config.agents.filter(isSubagent)
  const failWith = (message: string) => Effect.fail(BuiltinTool.fail(message))
  return BuiltinTool.define({
    name,
    description: SubagentPrompt.taskDescription(subagents),
    input: Input,
    execute: Traced.fn("TaskTool.execute")(function* (input: Input, context: ToolRegistry.CallContext) {
      const requested = input.subagent_type.trim()
      const agent = deps.config.agents.find((item) => item.name === requested)
      if (agent === undefined || !isSubagent(agent)) {
        return yield* failWith(
          `Unknown subagent "${requested}". Subagents you can name: ${subagents.map((item) => item.name).join(", ") || "none"}`
        )
      }
      if (input.prompt.trim() === "") return yield* failWith("The task tool needs a `prompt` for the subagent")
      const parent = yield* deps.sessions.get(context.sessionID).pipe(Effect.orDie)
      if (parent.parentID !== undefined) {
        return yield* failWith("A subagent cannot start a subagent of its own: do the work with your own tools")
      }
      // A subagent the latest prompt mentions (`@name`) was asked for by the user: no permission check.
      const parentHistory = yield* deps.history.context(parent.id).pipe(Effect.orDie)
      const latestPrompt = [...parentHistory].reverse().find((message) => message.type === "user")
      const mentioned =
        latestPrompt?.type === "user" && (latestPrompt.agents ?? []).some((item) => item.name === agent.name)
      if (!mentioned) {
        yield* context.ask({
          action: "task",
          resources: [agent.name],
          metadata: { description: input.description, subagent_type: agent.name }
        })
      }

      const location = yield* deps.locations
        .resolve({ directory: context.directory, workspace: parent.location.workspaceID })
        .pipe(
          Effect.catchTag("InvalidRequestError", (error) => failWith(`The subagent cannot start: ${error.message}`))
        )
      // The model of the calling Step (its assistant message), else the parent session's choice.
      const calling: Option.Option<Model.ModelRef> =
        context.messageID === undefined
          ? Option.fromNullable(parent.model)
          : yield* deps.history.message(parent.id, context.messageID).pipe(
              Effect.map((message) =>
                message.type === "assistant" ? Option.some(message.model) : Option.fromNullable(parent.model)
              ),
              Effect.orElseSucceed(() => Option.fromNullable(parent.model))
            )
      const model = agent.model ?? Option.getOrUndefined(calling)
      const child = yield* deps.sessions.create({
        parentID: parent.id,
        agent: agent.name,
        ...(model === undefined ? {} : { model }),
        location,
        title: `${input.description.trim() || "Subagent task"} (@${agent.name} subagent)`
      })
      yield* context.progress(
        BuiltinTool.text(`The ${agent.name} subagent is working in session ${child.id}`, {
          sessionID: child.id,
          agent: agent.name
        })
      )
      yield* Effect.gen(function* () {
        yield* deps.input.admit(child.id, { prompt: { text: input.prompt } }).pipe(
          Effect.catchTag("InvalidRequestError", (error) => failWith(`The subagent cannot start: ${error.message}`)),
          // The session was just created and nothing else knows its ID: it exists and holds no prompt yet.
          Effect.orDie
        )
        yield* deps.runner.wake(child.id)
        yield* Effect.orDie(deps.runner.wait(child.id))
      }).pipe(
        // The parent's interrupt reaches the child (from its admission on); this resolves once the
        // child's Step has settled and its pending requests are rejected.
        Effect.onInterrupt(() => Effect.ignore(deps.runner.interrupt(child.id)))
      )
      const reply = lastReply(yield* deps.history.context(child.id).pipe(Effect.orDie))
      if (reply.error !== undefined) {
        return yield* failWith(`The ${agent.name} subagent (session ${child.id}) failed: ${reply.error}`)
      }
      return BuiltinTool.text(SubagentPrompt.result({ agent: agent.name, sessionID: child.id, text: reply.text }), {
        sessionID: child.id,
        agent: agent.name
      })
    })
  })
}

/** Registers the task tool in the ToolRegistry for the layer's lifetime. */
export const layer: Layer.Layer<
  never,
  never,
  | ToolRegistry.Service
  | Config.Service
  | Sessions.Service
  | SessionInput.Service
  | SessionRunner.Service
  | SessionHistory.Service
  | Locations.Service
> = Layer.scopedDiscard(
  Effect.gen(function* () {
    const registry = yield* ToolRegistry.Service
    const tool = make({
      config: yield* Config.Service,
      sessions: yield* Sessions.Service,
      input: yield* SessionInput.Service,
      runner: yield* SessionRunner.Service,
      history: yield* SessionHistory.Service,
      locations: yield* Locations.Service
    })
    yield* registry.register(tool)
  })
)
