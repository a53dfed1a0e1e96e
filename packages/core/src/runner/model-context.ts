export * as ModelContext from "./model-context.js"

import { FileSystem } from "@effect/platform"
import type { Errors, Identifier, Model, SessionMessages } from "@opencode-ai/schema"
import { Context, Effect, Either, Layer } from "effect"
import { ContextBudget } from "../compaction/context-budget.js"
import { ToolOutputPrune } from "../compaction/tool-output-prune.js"
import type { AgentCatalog } from "../config/agent-catalog.js"
import type { Catalog } from "../config/catalog.js"
import { Config } from "../config/config.js"
import { RequestOptions } from "../config/request-options.js"
import { PromptFiles } from "../input/prompt-files.js"
import { LLMRequest } from "../llm/llm-request.js"
import { LoweringMemo } from "../llm/lowering-memo.js"
import { PrefixMemo } from "../llm/prefix-memo.js"
import { Traced } from "../observability/traced.js"
import { Permission } from "../permission/permission.js"
import { AgentPrompt } from "../prompt/agent-prompt.js"
import { CompactionPrompt } from "../prompt/compaction-prompt.js"
import { ModelIdentity } from "../prompt/model-identity.js"
import { SessionReminders } from "../prompt/session-reminders.js"
import { SubagentPrompt } from "../prompt/subagent-prompt.js"
import { SessionHistory } from "../session/session-history.js"
import { StructuredOutput } from "../structured/structured-output.js"
import type { ToolRegistry } from "../tool/tool-registry.js"
import type { SafeStepBoundary } from "./safe-step-boundary.js"
import type { StepSelection } from "./step-selection.js"

/** Everything one Step's model request is assembled from; all of it sampled at the Step's start. */
export interface Input {
  readonly sessionID: Identifier.SessionID
  readonly agent: AgentCatalog.Agent
  readonly provider: Catalog.Provider
  readonly model: Catalog.Model
  /**
   * The variant the session's model reference selects, else the model's default one
   * (`Catalog.Model.defaultVariant`); one the model does not offer (any more) is ignored (see
   * `RequestOptions`).
   */
  readonly variant?: string | undefined
  /** The Instruction Baseline, verbatim (provider-cache prefix state). */
  readonly baseline: string
  /** Projected Session History, chronological (Instruction Updates included as system messages). */
  readonly history: ReadonlyArray<SessionMessages.SessionMessage>
  readonly tools: ToolRegistry.Materialized["definitions"]
  /** The agent's step limit is reached: tools are disabled and the max-steps instruction is added. */
  readonly lastStep: boolean
  /**
   * Pruning (`compaction.prune`): tool outputs older than this many tokens of newer ones are replaced
   * by a marker in the request (see ToolOutputPrune). Absent: nothing is pruned.
   */
  readonly pruneWindow?: number | undefined
  /** The history's files as the model reads them (PromptFiles.load); without it, files are references. */
  readonly files?: PromptFiles.Lowered
  /** The Structured Output the latest user message asks for (StructuredOutput.requested), if any. */
  readonly structured?: StructuredOutput.Requested | undefined
}

/**
 * A tool result's text: its text parts, then (with `lowered`) the notes for the files the model
 * cannot see; without `lowered`, each file is a `[file <uri>]` reference.
 */
const toolOutput = (
  content: ReadonlyArray<{ readonly type: string; readonly text?: string; readonly uri?: string }>,
  lowered: PromptFiles.ToolFiles | undefined
) =>
  lowered === undefined
    ? content.map((part) => (part.type === "text" ? (part.text ?? "") : `[file ${part.uri ?? ""}]`)).join("\n")
    : [...content.flatMap((part) => (part.type === "text" ? [part.text ?? ""] : [])), ...lowered.notes].join("\n")

/**
 * A user turn: the message's text with the guidance of each `@agent` mention after it (call the task
 * tool with that subagent; with the user-invocation hint when `agent`'s rules deny `task` on it), then
 * what its attachments lowered to.
 */
const userTurn = (
  message: Pick<SessionMessages.SessionMessageUser, "text" | "agents">,
  attachments: ReadonlyArray<LLMRequest.UserPart> | undefined,
  agent: AgentCatalog.Agent | undefined
): LLMRequest.Message => {
  const mentions = (message.agents ?? []).map((mentioned) =>
    SubagentPrompt.mention(mentioned.name, {
      invokedByUser: agent !== undefined && Permission.evaluate(agent.permission, "task", mentioned.name) === "deny"
    })
  )
  const text = [message.text, ...mentions].join("\n\n")
  return attachments === undefined || attachments.length === 0
    ? LLMRequest.user(text)
    : { role: "user", content: [LLMRequest.text(text), ...attachments] }
}

const sameModel = (a: Model.ModelRef, provider: Catalog.Provider, model: Catalog.Model) =>
  a.providerID === provider.id && a.id === model.id

/**
 * Projects one assistant message into the request: its parts in stream order, then the results of
 * its tool calls. Reasoning and tool calls may be continued natively (their Native Continuation
 * Metadata replayed) only when the step succeeded and the request goes to the exact provider and
 * model that produced them.
 */
const assistantTurn = (
  message: SessionMessages.SessionMessageAssistant,
  provider: Catalog.Provider,
  model: Catalog.Model,
  files: PromptFiles.Lowered
): ReadonlyArray<LLMRequest.Message> => {
  const replayable = message.error === undefined && sameModel(message.model, provider, model)
  const parts: Array<LLMRequest.AssistantPart> = []
  const results: Array<LLMRequest.ToolResultPart> = []
  for (const item of message.content) {
    if (item.type === "text") {
      if (item.text.length > 0) parts.push(LLMRequest.text(item.text))
    } else if (item.type === "reasoning") {
      if (item.text.length > 0 || (replayable && item.providerMetadata !== undefined)) {
        parts.push(
          LLMRequest.reasoning(item.text, {
            ...(item.providerMetadata !== undefined ? { metadata: item.providerMetadata } : {}),
            replayable
          })
        )
      }
    } else {
      // A call still pending has no parsed input: it never ran and is not part of the conversation.
      if (item.state.status === "pending") continue
      const metadata = item.provider?.metadata
      parts.push(
        LLMRequest.toolCall(
          item.id,
          item.name,
          item.state.input,
          metadata === undefined ? {} : { metadata, replayable }
        )
      )
      switch (item.state.status) {
        case "completed": {
          const lowered = files.tool.get(item.id)
          results.push(
            LLMRequest.toolResult(item.id, item.name, toolOutput(item.state.content, lowered), {
              ...(lowered === undefined ? {} : { files: lowered.files })
            })
          )
          break
        }
        case "error":
          results.push(LLMRequest.toolResult(item.id, item.name, item.state.error.message, { isError: true }))
          break
        case "running":
          // Left running by a crash and not yet failed by recovery: the model must still get an answer.
          results.push(LLMRequest.toolResult(item.id, item.name, "The tool call was interrupted.", { isError: true }))
          break
      }
    }
  }
  if (parts.length === 0) return []
  return results.length > 0
    ? [LLMRequest.assistant(...parts), LLMRequest.tool(...results)]
    : [LLMRequest.assistant(...parts)]
}

/** One stored message as request messages (see {@link messages}). */
const lowerMessage = (
  message: SessionMessages.SessionMessage,
  provider: Catalog.Provider,
  model: Catalog.Model,
  files: PromptFiles.Lowered,
  agent: AgentCatalog.Agent | undefined
): ReadonlyArray<LLMRequest.Message> => {
  switch (message.type) {
    case "user":
      return [userTurn(message, files.user.get(message.id), agent)]
    case "synthetic":
      return [LLMRequest.user(message.text)]
    case "system":
      return [LLMRequest.instructionUpdate(message.text)]
    case "assistant":
      return assistantTurn(message, provider, model, files)
    case "shell":
      return [LLMRequest.user(`The user ran a shell command:\n$ ${message.command}\n${message.output}`)]
    case "compaction":
      // The summary (and the part kept word for word) stands for everything before it.
      return [LLMRequest.user(CompactionPrompt.summaryMessage(message.summary, message.recent))]
    default:
      // Agent and model switch markers are for transcripts.
      return []
  }
}

/** A lowering made with files read for this Step: never reused (the next Step reads them again). */
const readFiles = Symbol("readFiles")

/**
 * What a stored message's lowering depends on besides the message itself: for an assistant message,
 * whether it is replayable (the request goes to the model that wrote it); for a user message with
 * `@agent` mentions, the Step's agent; {@link readFiles} when files of the message were read.
 */
const loweringKey = (
  message: SessionMessages.SessionMessage,
  provider: Catalog.Provider,
  model: Catalog.Model,
  files: PromptFiles.Lowered,
  agent: AgentCatalog.Agent | undefined
): unknown => {
  switch (message.type) {
    case "user":
      if (files.user.has(message.id)) return readFiles
      return (message.agents ?? []).length > 0 ? agent : null
    case "assistant":
      if (files.tool.size > 0 && message.content.some((item) => item.type === "tool" && files.tool.has(item.id))) {
        return readFiles
      }
      return message.error === undefined && sameModel(message.model, provider, model)
    default:
      return null
  }
}

const lowerings = LoweringMemo.make<SessionMessages.SessionMessage, ReadonlyArray<LLMRequest.Message>>()
const histories = PrefixMemo.make<SessionMessages.SessionMessage, LLMRequest.Message, undefined>()

/**
 * Session History → the provider-neutral message list, chronological. `files` is what the history's
 * attachments and tool files lowered to (PromptFiles.load); without it they stay references. `agent`
 * is the Step's agent (its rules decide the `@agent` mention hint). A message's lowering is reused
 * from an earlier Step while the message and what it depends on are the same (see LoweringMemo), and
 * a history that continues one lowered before with the same model, files and agent is lowered only
 * from where it differs (see PrefixMemo); the result is the same either way.
 */
export const messages = (
  history: ReadonlyArray<SessionMessages.SessionMessage>,
  provider: Catalog.Provider,
  model: Catalog.Model,
  files: PromptFiles.Lowered = PromptFiles.empty,
  agent?: AgentCatalog.Agent
): ReadonlyArray<LLMRequest.Message> =>
  histories.lower(history, [provider, model, files, agent], undefined, (_, message, out) => {
    const key = loweringKey(message, provider, model, files, agent)
    let lowered = key === readFiles ? undefined : lowerings.get(message, key)
    if (lowered === undefined) {
      lowered = lowerMessage(message, provider, model, files, agent)
      if (key !== readFiles) lowerings.set(message, key, lowered)
    }
    for (const item of lowered) out.push(item)
    return undefined
  })

/** What the model must call: a Structured Output requires a call (at the step limit, of its tool). */
const toolChoice = (lastStep: boolean, structured: boolean): { readonly toolChoice?: LLMRequest.ToolChoice } =>
  structured
    ? { toolChoice: lastStep ? { type: "tool", name: StructuredOutput.toolName } : "required" }
    : lastStep
      ? { toolChoice: "none" }
      : {}

/** The step-local messages after the history: the max-steps turn at the step limit. */
const local = (input: Pick<Input, "lastStep">): ReadonlyArray<LLMRequest.Message> =>
  input.lastStep ? [LLMRequest.assistant(LLMRequest.text(AgentPrompt.maxSteps))] : []

/**
 * The ONE system text of a Step: the agent's prompt (its config `prompt`, else AgentPrompt.forAgent:
 * the explore prompt or the model family's), a blank line, the Model Identity line, then on the
 * next line the Instruction Baseline verbatim (it opens with the environment block, so the identity
 * line heads it as upstream's does). Deterministic for one agent, model and baseline: it is the
 * provider-cache prefix.
 */
export const systemText = (input: Pick<Input, "agent" | "provider" | "model" | "baseline">): string => {
  const model = { providerID: input.provider.id, apiID: input.model.apiID }
  return [
    input.agent.prompt ?? AgentPrompt.forAgent(input.agent.name, model),
    [ModelIdentity.line(model), input.baseline].filter((part) => part.length > 0).join("\n")
  ]
    .filter((part) => part.length > 0)
    .join("\n\n")
}

/**
 * The request settings of one Step (`RequestOptions.resolve`: the model's options, the selected
 * variant, the agent's): Generation Controls, Model Request Options, and the compatibility body
 * fields under the provider's protocol. An unavailable variant counts as none.
 */
const requestSettings = (
  input: Pick<Input, "agent" | "provider" | "model" | "variant">
): Pick<LLMRequest.Request, "generation" | "options" | "providerOptions"> => {
  const variant =
    input.variant === undefined ? undefined : Either.getOrUndefined(RequestOptions.variant(input.model, input.variant))
  const resolved = RequestOptions.resolve({ model: input.model, variant, agent: input.agent })
  return {
    generation: resolved.generation,
    ...(Object.keys(resolved.options).length > 0 ? { options: resolved.options } : {}),
    ...(Object.keys(resolved.body).length > 0
      ? { providerOptions: { [input.provider.protocol]: { ...resolved.body } } }
      : {})
  }
}

/**
 * Assembles the Model Context of one Step into one provider request: the ONE system text
 * ({@link systemText}), the projected history, the tools, the request settings
 * ({@link requestSettings}), and the headers (the model's configured `headers`, then the
 * session's). At the step limit the tools stay declared (history may hold tool calls) but
 * `toolChoice` is `none`, and the max-steps instruction is the final assistant turn.
 * While a Structured Output is requested, the `StructuredOutput` tool is offered, its instruction
 * ends the system text, and a tool call is required (at the step limit, that tool's).
 */
export const build = (input: Input): LLMRequest.Request => {
  const history =
    input.pruneWindow === undefined ? input.history : ToolOutputPrune.prune(input.history, input.pruneWindow)
  const { structured } = input
  const system = [systemText(input), structured === undefined ? "" : StructuredOutput.instruction]
    .filter((part) => part.length > 0)
    .join("\n\n")
  const offered =
    structured === undefined
      ? input.tools
      : [
          ...input.tools.filter((tool) => tool.name !== StructuredOutput.toolName),
          StructuredOutput.definition(structured.format)
        ]
  const tools = input.model.toolCall
    ? offered.map((tool) => ({
        name: tool.name,
        description: tool.description,
        inputSchema: { ...tool.inputSchema }
      }))
    : []
  return {
    model: { providerID: input.provider.id, modelID: input.model.apiID },
    system,
    messages: [...messages(history, input.provider, input.model, input.files, input.agent), ...local(input)],
    ...(tools.length > 0 ? { tools } : {}),
    ...(tools.length === 0 ? {} : toolChoice(input.lastStep, structured !== undefined)),
    ...requestSettings(input),
    headers: { ...input.model.headers, "x-session-id": input.sessionID, "x-session-affinity": input.sessionID }
  }
}

/**
 * One Step's assembled Model Context: the `request`, its `projected` input tokens (ContextBudget.projected:
 * the provider's count for the last Step plus an estimate of what was added since) and the model's
 * `usable` context (undefined when its context limit is unknown).
 */
export interface Assembled {
  readonly request: LLMRequest.Request
  readonly projected: number
  readonly usable: number | undefined
  /** The Structured Output the request asks for (see StructuredOutput), if any. */
  readonly structured: StructuredOutput.Requested | undefined
}

export interface Interface {
  /**
   * The Model Context of one Step, as one provider request: reads the session's Session History as
   * of now (SessionHistory.context, without the Instruction Updates the boundary's baseline already
   * contains, i.e. those at or before `instructions.baselineSeq`), adds the plan and build reminders
   * to its user turns for the Step's agent (SessionReminders, in the request only), reads its attachments and tool
   * files for the Step's model (PromptFiles.load) and {@link build}s the request from it, the Step's
   * selection and the Instruction Baseline the boundary prepared, pruning old tool outputs when
   * `compaction.prune` is on. Writes nothing, so interrupting it leaves nothing behind. Unknown
   * session → SessionNotFoundError.
   */
  readonly assemble: (input: {
    readonly sessionID: Identifier.SessionID
    readonly selection: StepSelection.Selected
    readonly instructions: Pick<SafeStepBoundary.Ready, "baseline" | "baselineSeq">
  }) => Effect.Effect<Assembled, Errors.SessionNotFoundError>
}

/** `yield* ModelContext.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/ModelContext")<Service, Interface>() {}

export const layer: Layer.Layer<
  Service,
  never,
  SessionHistory.Service | Config.Service | FileSystem.FileSystem | SessionReminders.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const history = yield* SessionHistory.Service
    const config = yield* Config.Service
    const fs = yield* FileSystem.FileSystem
    const reminders = yield* SessionReminders.Service
    const assemble = Traced.fn("ModelContext.assemble")(function* (input: {
      readonly sessionID: Identifier.SessionID
      readonly selection: StepSelection.Selected
      readonly instructions: Pick<SafeStepBoundary.Ready, "baseline" | "baselineSeq">
    }) {
      const { selection } = input
      const usable = ContextBudget.usable(selection.model, config.compaction)
      const pruneWindow = config.compaction.prune ? ToolOutputPrune.window(usable) : undefined
      const stored = yield* history.context(input.sessionID, { baselineSeq: input.instructions.baselineSeq })
      // The drain resolved the session's Location for this Step already: failing now is a broken invariant.
      const context = yield* reminders
        .apply({ sessionID: input.sessionID, agent: selection.agent.name, history: stored })
        .pipe(Effect.catchTag("InvalidRequestError", (error) => Effect.die(error)))
      // The attachments and tool files are read now, for this Step's model (see PromptFiles).
      const files = yield* PromptFiles.load(context, selection.model).pipe(
        Effect.provideService(FileSystem.FileSystem, fs)
      )
      const structured = StructuredOutput.requested(context)
      // The session's variant, else the model's default one (config `variant`).
      const variant = selection.ref.variant ?? selection.model.defaultVariant
      if (variant !== undefined) {
        const available = RequestOptions.variant(selection.model, variant)
        if (Either.isLeft(available)) {
          yield* Effect.logWarning("the session's model variant is unavailable; the model's options apply", {
            sessionID: input.sessionID,
            reason: available.left.message
          })
        }
      }
      const pruned = pruneWindow === undefined ? context : ToolOutputPrune.prune(context, pruneWindow)
      const request = build({
        sessionID: input.sessionID,
        agent: selection.agent,
        provider: selection.provider,
        model: selection.model,
        variant,
        baseline: input.instructions.baseline,
        // Pruned here already (the projection below counts the same history).
        history: pruned,
        tools: selection.offered.definitions,
        lastStep: selection.lastStep,
        files,
        structured
      })
      const projected = ContextBudget.projected({
        history: pruned,
        request,
        local: local(selection),
        lower: (slice) => messages(slice, selection.provider, selection.model, files, selection.agent)
      })
      return { request, projected, usable, structured } satisfies Assembled
    })
    return Service.of({ assemble })
  })
)
