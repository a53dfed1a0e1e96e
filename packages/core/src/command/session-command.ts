export * as SessionCommand from "./session-command.js"

/**
 * SessionCommand: prompting a session, where a prompt may run a custom command. This is how the V2
 * contract runs commands: its prompt body has no command field, so (as upstream clients do when the
 * typed text starts with `/name` and a command of that name is listed) a prompt whose text is
 * `/name arguments` and names a command of the session's Location ({@link Commands}) runs it. Text
 * that names no command is admitted as it is.
 *
 * Running a command, once per admission (a retry of an admitted `id` replays it and runs nothing):
 * - **inline** (the default): the template is expanded ({@link CommandTemplate}) and the expansion is
 *   admitted in place of the typed text, its `@path` files added to the prompt's own attachments.
 *   The command's `agent` and `model`, when set, are selected for the session first
 *   (SessionSelection: durable switches that hold for later prompts too, as upstream's do). The
 *   caller then wakes the session as for any prompt.
 * - **subtask** (`subtask: true`, or no `subtask` key and an `agent` whose mode is `subagent`): the
 *   typed text is admitted to the session as the user's prompt, and the session is NOT woken for it.
 *   A child session is created (parent: the session; agent: the command's, else the session's;
 *   model: the command's, else the agent's, else the session's; title: the command's description or
 *   name), the expansion is admitted to it (with the prompt's own attachments and the template's)
 *   and it is woken. When the child is idle, its final reply
 *   (framed as the task tool frames it, or its failure) followed by the continuation instruction
 *   (seed 003: summarize the task output and continue) is admitted to the parent as a steer and the
 *   parent is woken: its model then answers with the subtask's result in view.
 *
 * Failures: an expansion whose shell snippet cannot run or times out, or that is longer than a
 * prompt may be, or a command naming an agent or model that cannot be selected, is an
 * InvalidRequestError (`kind: "command"`, `field` `prompt.text`, `agent` or `model`); nothing is
 * switched or admitted then. An attachment that admission refuses afterwards (an `@path` outside
 * the Location the agent may not read) is its usual InvalidRequestError; by then an inline
 * command's agent and model are already selected, and a subtask's (empty) child already exists.
 *
 * The wait for a subtask's child runs in the background for as long as this service
 * lives; closing the host interrupts it (the child is interrupted by the runner's own shutdown), and
 * a parent whose continuation was lost that way keeps the typed prompt, which the next wake runs.
 */

import { FileSystem } from "@effect/platform"
import { AdmittedPrompt, Errors, type Identifier, type Model } from "@opencode-ai/schema"
import { Context, Effect, FiberSet, Layer, Option } from "effect"
import { Config } from "../config/config.js"
import { SessionInput } from "../input/session-input.js"
import { Locations } from "../location/locations.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { SubagentPrompt } from "../prompt/subagent-prompt.js"
import { SessionRunner } from "../runner/session-runner.js"
import { SessionHistory } from "../session/session-history.js"
import { SessionSelection } from "../session/session-selection.js"
import { Sessions } from "../session/sessions.js"
import { TaskTool } from "../subagent/task-tool.js"
import { CommandTemplate } from "./command-template.js"
import { Commands } from "./commands.js"

/**
 * The continuation instruction admitted to the parent after a command's subtask (seed 003's
 * "Command task continuation instruction"; our words).
 */
export const continuation = "Use the task result above: summarize what it found, then carry on with your task."

export interface Prompted {
  /** The Admitted Prompt of the session (for a subtask, the typed text). */
  readonly admitted: AdmittedPrompt.SessionInputAdmitted
  /** Whether the caller should wake the session: false while a command's subtask runs. */
  readonly wake: boolean
  /** The command the prompt ran, if it ran one (not on a retry). */
  readonly command?: string
  /** The child session of a subtask. */
  readonly childSessionID?: Identifier.SessionID
}

export interface Interface {
  /**
   * Admits `input` to the session, running the command its text names (see the module doc). Errors
   * as SessionInput.admit, plus InvalidRequestError for a command that cannot run.
   */
  readonly prompt: (
    sessionID: Identifier.SessionID,
    input: SessionInput.AdmitInput
  ) => Effect.Effect<Prompted, Errors.SessionNotFoundError | Errors.ConflictError | Errors.InvalidRequestError>
}

/** Prompting with commands; `yield* SessionCommand.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionCommand")<Service, Interface>() {}

const commandError = (name: string, message: string, field = "prompt.text") =>
  new Errors.InvalidRequestError({ kind: "command", field, message: `Command /${name}: ${message}` })

export const layer: Layer.Layer<
  Service,
  never,
  | Commands.Service
  | Config.Service
  | Sessions.Service
  | SessionInput.Service
  | SessionSelection.Service
  | SessionRunner.Service
  | SessionHistory.Service
  | Locations.Service
  | FileSystem.FileSystem
> = Layer.scoped(
  Service,
  Effect.gen(function* () {
    const commands = yield* Commands.Service
    const config = yield* Config.Service
    const sessions = yield* Sessions.Service
    const input = yield* SessionInput.Service
    const selection = yield* SessionSelection.Service
    const runner = yield* SessionRunner.Service
    const history = yield* SessionHistory.Service
    const locations = yield* Locations.Service
    const fs = yield* FileSystem.FileSystem
    const background = yield* FiberSet.make<void, never>()

    /** Waits for the child, then hands its result and the continuation to the parent. */
    const finish = (parentID: Identifier.SessionID, childID: Identifier.SessionID, agent: string) =>
      Effect.gen(function* () {
        yield* runner.wait(childID)
        const reply = TaskTool.lastReply(yield* history.context(childID))
        const result =
          reply.error === undefined
            ? SubagentPrompt.result({ agent, sessionID: childID, text: reply.text })
            : `The ${agent} subagent (session ${childID}) failed: ${reply.error}`
        yield* input.admit(parentID, { prompt: { text: `${result}\n\n${continuation}` }, delivery: "steer" })
        yield* runner.wake(parentID)
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning("a command's subtask could not hand its result to the session", cause)
        ),
        Effect.annotateLogs({ sessionID: parentID, childSessionID: childID })
      )

    const prompt = Traced.fn("SessionCommand.prompt")(
      function* (sessionID: Identifier.SessionID, request: SessionInput.AdmitInput) {
        const named = CommandTemplate.invocation(request.prompt.text)
        if (Option.isNone(named)) return { admitted: yield* input.admit(sessionID, request), wake: true }
        const session = yield* sessions.get(sessionID)
        // A session whose directory is gone has no commands: its prompt is admitted as typed.
        const resolved = yield* Effect.option(
          locations.resolve({ directory: session.location.directory, workspace: session.location.workspaceID })
        )
        if (Option.isNone(resolved)) return { admitted: yield* input.admit(sessionID, request), wake: true }
        const location = resolved.value
        const found = yield* commands
          .get(location, named.value.name)
          .pipe(Effect.catchAll((error) => Effect.fail(commandError(named.value.name, error.message))))
        if (Option.isNone(found)) return { admitted: yield* input.admit(sessionID, request), wake: true }
        const command = found.value
        const agentOf = (name: string) => config.agent(name)
        const commandAgent = command.agent === undefined ? Option.none() : agentOf(command.agent)
        if (command.agent !== undefined && Option.isNone(commandAgent)) {
          return yield* commandError(command.name, `its agent "${command.agent}" is not an enabled agent`, "agent")
        }
        const subtask =
          command.subtask === true ||
          (command.subtask === undefined && Option.isSome(commandAgent) && commandAgent.value.mode === "subagent")
        // Checked before anything is switched or admitted, so a command that cannot run changes nothing.
        if (!subtask && Option.isSome(commandAgent) && commandAgent.value.hidden) {
          return yield* commandError(command.name, `its agent "${command.agent}" cannot be selected`, "agent")
        }
        if (command.model !== undefined && Option.isNone(config.findModel(command.model))) {
          const { providerID, id } = command.model
          return yield* commandError(command.name, `its model "${providerID}/${id}" is not configured`, "model")
        }

        // A subtask's child: its agent, then its model (the command's, the agent's, the session's).
        const childAgent = command.agent ?? session.agent ?? config.defaultAgent
        const childModel: Model.ModelRef | undefined =
          command.model ?? Option.getOrUndefined(agentOf(childAgent))?.model ?? session.model

        // Set only by a new admission (the prepare step does not run for a retry).
        let ran = false
        let child: Identifier.SessionID | undefined
        const expand = (prompt: AdmittedPrompt.PromptInput) =>
          Effect.gen(function* () {
            const result = yield* CommandTemplate.expand(command.template, named.value.arguments, {
              directory: location.directory
            }).pipe(
              Effect.provideService(FileSystem.FileSystem, fs),
              Effect.mapError((error) =>
                commandError(command.name, `the shell command \`${error.command}\` failed: ${error.message}`)
              )
            )
            if (result.text.length > AdmittedPrompt.maxTextLength) {
              return yield* commandError(
                command.name,
                `its expansion has ${result.text.length} characters; a prompt has at most ${AdmittedPrompt.maxTextLength}`
              )
            }
            ran = true
            if (subtask) {
              // The expansion goes to the child; the session keeps what the user typed.
              const created = yield* sessions.create({
                parentID: session.id,
                agent: childAgent,
                ...(childModel === undefined ? {} : { model: childModel }),
                location,
                title: `${command.description ?? `/${command.name}`} (@${childAgent} subagent)`
              })
              // The child gets the prompt's own attachments too, then the template's.
              const files = [...(prompt.files ?? []), ...result.files]
              yield* input
                .admit(created.id, { prompt: { text: result.text, ...(files.length === 0 ? {} : { files }) } })
                .pipe(Effect.catchTags({ SessionNotFoundError: Effect.die, ConflictError: Effect.die }))
              child = created.id
              return prompt
            }
            const known = { SessionNotFoundError: Effect.die }
            if (command.agent !== undefined) {
              yield* selection.switchAgent(sessionID, command.agent).pipe(Effect.catchTags(known))
            }
            if (command.model !== undefined) {
              yield* selection.switchModel(sessionID, command.model).pipe(Effect.catchTags(known))
            }
            return {
              ...prompt,
              text: result.text,
              ...(prompt.files === undefined && result.files.length === 0
                ? {}
                : { files: [...(prompt.files ?? []), ...result.files] })
            }
          })
        const admitted = yield* input.admit(sessionID, { ...request, prepare: expand })
        if (!ran) return { admitted, wake: true }
        if (child === undefined) return { admitted, wake: true, command: command.name }
        yield* runner.wake(child)
        yield* FiberSet.run(background, finish(session.id, child, childAgent))
        return { admitted, wake: false, command: command.name, childSessionID: child }
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    return Service.of({ prompt })
  })
)
