export * as AgentCatalog from "./agent-catalog.js"

/**
 * The agent catalog: the built-in agents with the config's `agent.<name>` entries merged over them.
 * This is agent CONFIGURATION (mode, permissions, step limit, model, prompt override); the built-in
 * prompt texts belong to the prompt module.
 *
 * Built-ins (upstream's core agent plugin): `build` (primary, the default: every tool per the
 * permissions), `plan` (primary: edits denied except plan files), `general` and `explore`
 * (subagents; explore may only read and search), and the hidden `compaction`, `title` and `summary`
 * (no tools). None has a step limit.
 *
 * Merge: a config entry overrides the fields it sets on the built-in of that name, or defines a new
 * agent (mode `all`); `disable: true` removes the agent. Permissions are an ordered ruleset where the
 * LAST matching rule wins: the shared defaults, then the built-in's own rules, then the config's
 * top-level `tools` and `permission`, then the agent's `tools` and `permission`.
 */

import * as nodePath from "node:path"
import type { Model as ModelSchema } from "@opencode-ai/schema"
import { Either } from "effect"
import { Traced } from "../observability/traced.js"
import * as Catalog from "./catalog.js"
import * as ConfigErrors from "./config-error.js"
import type * as ConfigInfo from "./config-info.js"

/**
 * One permission rule: for tool `action` (`*` any) on `resource` (a glob; `*` any), do `effect`.
 * Evaluation takes the last rule that matches.
 */
export interface Rule {
  readonly action: string
  readonly resource: string
  readonly effect: ConfigInfo.PermissionAction
}

export type Ruleset = ReadonlyArray<Rule>

export interface Agent {
  readonly name: string
  readonly description?: string
  readonly mode: ConfigInfo.AgentMode
  /** Built in (possibly overridden by config), as opposed to defined by config. */
  readonly native: boolean
  /** Not offered for selection (the compaction, title and summary agents). */
  readonly hidden: boolean
  /** The config's prompt override; absent means the built-in prompt. */
  readonly prompt?: string
  /** The agent's model; absent means the session's (or the default) model. */
  readonly model?: ModelSchema.ModelRef
  /** The maximum number of steps of one run; absent means unlimited. */
  readonly steps?: number
  readonly temperature?: number
  readonly topP?: number
  /** Upstream-shaped request options for this agent's requests, over the model's (see `RequestOptions`). */
  readonly options?: ConfigInfo.RequestOptions
  readonly permission: Ruleset
}

export interface AgentCatalog {
  /** Enabled agents: the built-ins in their order, then config-defined ones in config order. */
  readonly agents: ReadonlyArray<Agent>
  /** The primary agent a new session starts with. */
  readonly defaultAgent: string
}

export interface Options {
  /** The data directory: enables the rules that let agents reach managed tool output and plan files. */
  readonly dataDir?: string
  /** The worktree root, for the plan agent's project-relative plan-file rule. */
  readonly worktreeRoot?: string
}

/** The built-in agent names, in catalog order. */
export const builtinNames = ["build", "plan", "general", "explore", "compaction", "title", "summary"] as const

const rule = (action: string, resource: string, effect: ConfigInfo.PermissionAction): Rule => ({
  action,
  resource,
  effect
})

interface Builtin {
  readonly description?: string
  readonly mode: ConfigInfo.AgentMode
  readonly hidden: boolean
  readonly rules: Ruleset
}

const readonlyExternalDirectory = (options: Options): Ruleset => [
  rule("external_directory", "*", "ask"),
  ...(options.dataDir === undefined
    ? []
    : [rule("external_directory", nodePath.join(options.dataDir, "tool-output", "*"), "allow")])
]

/**
 * The rules every agent starts from: everything allowed except outside directories (ask; managed
 * tool output allowed), questions and plan-mode switches (denied), and `.env` files (ask; examples
 * allowed). A config-defined agent has exactly these before the config's own.
 */
export const defaults = (options: Options = {}): Ruleset => [
  rule("*", "*", "allow"),
  ...readonlyExternalDirectory(options),
  rule("question", "*", "deny"),
  rule("plan_enter", "*", "deny"),
  rule("plan_exit", "*", "deny"),
  rule("read", "*", "allow"),
  rule("read", "*.env", "ask"),
  rule("read", "*.env.*", "ask"),
  rule("read", "*.env.example", "allow")
]

/** The built-in agents' definitions (description, mode, permissions), per upstream. */
export const builtins = (options: Options = {}): Readonly<Record<(typeof builtinNames)[number], Builtin>> => {
  const base = defaults(options)
  const planFiles: Ruleset =
    options.dataDir === undefined
      ? []
      : [
          rule("external_directory", nodePath.join(options.dataDir, "plans", "*"), "allow"),
          ...(options.worktreeRoot === undefined
            ? []
            : [
                rule(
                  "edit",
                  nodePath.relative(options.worktreeRoot, nodePath.join(options.dataDir, "plans", "*.md")),
                  "allow"
                )
              ])
        ]
  const noTools: Ruleset = [...base, rule("*", "*", "deny")]
  return {
    build: {
      description: "The default agent: it works with every tool its permission rules allow.",
      mode: "primary",
      hidden: false,
      rules: [...base, rule("question", "*", "allow"), rule("plan_enter", "*", "allow")]
    },
    plan: {
      description: "Planning mode: it reads and plans, and may not edit files.",
      mode: "primary",
      hidden: false,
      rules: [
        ...base,
        rule("question", "*", "allow"),
        rule("plan_exit", "*", "allow"),
        ...planFiles.filter((item) => item.action === "external_directory"),
        rule("edit", "*", "deny"),
        rule("edit", nodePath.join(".opencode", "plans", "*.md"), "allow"),
        ...planFiles.filter((item) => item.action === "edit")
      ]
    },
    general: {
      description:
        "A general-purpose subagent for researching open questions and carrying out tasks of several steps. Hand it independent pieces of work to have them done side by side.",
      mode: "subagent",
      hidden: false,
      rules: [...base, rule("todowrite", "*", "deny")]
    },
    explore: {
      description:
        'A fast, read-only subagent for finding your way around a codebase: locating files by name patterns (e.g. "src/**/*.tsx"), searching the code for keywords (e.g. "retry policy") and answering questions about how it works. Say how thorough it should be: "quick", "medium" or "very thorough".',
      mode: "subagent",
      hidden: false,
      rules: [
        ...base,
        rule("*", "*", "deny"),
        rule("grep", "*", "allow"),
        rule("glob", "*", "allow"),
        rule("webfetch", "*", "allow"),
        rule("websearch", "*", "allow"),
        rule("read", "*", "allow"),
        ...readonlyExternalDirectory(options)
      ]
    },
    compaction: { mode: "primary", hidden: true, rules: noTools },
    title: { mode: "primary", hidden: true, rules: noTools },
    summary: { mode: "primary", hidden: true, rules: noTools }
  }
}

const editTools = new Set(["write", "edit", "patch", "multiedit"])

/**
 * The rules a config's `tools` and `permission` say, in that order (so `permission` wins). `tools`
 * is upstream's older form: `false` denies, `true` allows, and the file-writing tools (`write`,
 * `patch`, `multiedit`) all map to `edit`.
 */
export const fromConfig = (config: {
  readonly tools?: ConfigInfo.Tools | undefined
  readonly permission?: ConfigInfo.Permission | undefined
}): Ruleset => {
  const tools = Object.entries(config.tools ?? {}).map(([name, enabled]) =>
    rule(editTools.has(name) ? "edit" : name, "*", enabled ? "allow" : "deny")
  )
  const permission = config.permission
  if (permission === undefined) return tools
  if (typeof permission === "string") return [...tools, rule("*", "*", permission)]
  return [
    ...tools,
    ...Object.entries(permission).flatMap(([action, value]) =>
      typeof value === "string"
        ? [rule(action, "*", value)]
        : Object.entries(value).map(([resource, effect]) => rule(action, resource, effect))
    )
  ]
}

const selectable = (agent: Agent): boolean => agent.mode !== "subagent" && !agent.hidden

/**
 * Merges the config's agents over the built-ins, checks each agent `model` against the provider
 * catalog, and picks the default agent (`default_agent`, else `build`, else the first selectable
 * primary agent). Fails when a model reference is invalid, when `default_agent` names no selectable
 * primary agent, or when no primary agent is left.
 */
export const resolve = Traced.fn("AgentCatalog.resolve")(function* (
  info: ConfigInfo.Info,
  options: Options & { readonly catalog: Pick<Catalog.Catalog, "providers">; readonly locate: Catalog.Locate }
) {
  const definitions = builtins(options)
  const global = fromConfig(info)
  const configured = info.agent ?? {}
  const names = [...builtinNames, ...Object.keys(configured).filter((name) => !(name in definitions))]
  const agents: Array<Agent> = []
  for (const name of names) {
    const builtin = (definitions as Record<string, Builtin | undefined>)[name]
    const config: ConfigInfo.Agent = configured[name] ?? {}
    if (config.disable === true) continue
    const model =
      config.model === undefined
        ? undefined
        : yield* Catalog.checkModelRef(options.catalog, config.model, ["agent", name, "model"], options.locate)
    const description = config.description ?? builtin?.description
    const steps = config.steps ?? config.maxSteps
    agents.push({
      name,
      ...(description === undefined ? {} : { description }),
      mode: config.mode ?? builtin?.mode ?? "all",
      native: builtin !== undefined,
      hidden: config.hidden ?? builtin?.hidden ?? false,
      ...(config.prompt === undefined ? {} : { prompt: config.prompt }),
      ...(model === undefined ? {} : { model }),
      ...(steps === undefined ? {} : { steps }),
      ...(config.temperature === undefined ? {} : { temperature: config.temperature }),
      ...(config.top_p === undefined ? {} : { topP: config.top_p }),
      ...(config.options === undefined ? {} : { options: config.options }),
      permission: [...(builtin?.rules ?? defaults(options)), ...global, ...fromConfig(config)]
    })
  }
  let defaultAgent: string
  if (info.default_agent !== undefined) {
    const chosen = agents.find((agent) => agent.name === info.default_agent)
    if (chosen === undefined || !selectable(chosen)) {
      return yield* Either.left(
        ConfigErrors.at(
          options.locate(["default_agent"]),
          chosen === undefined
            ? `"${info.default_agent}" is not an enabled agent`
            : `"${info.default_agent}" is a ${chosen.hidden ? "hidden" : "subagent-only"} agent, not a primary one`,
          "default_agent"
        )
      )
    }
    defaultAgent = chosen.name
  } else {
    const chosen = agents.find((agent) => agent.name === "build") ?? agents.find(selectable)
    if (chosen === undefined) {
      return yield* Either.left(
        ConfigErrors.at(options.locate(["agent"]), "every primary agent is disabled; at least one must remain", "agent")
      )
    }
    defaultAgent = chosen.name
  }
  return { agents, defaultAgent } satisfies AgentCatalog
})
