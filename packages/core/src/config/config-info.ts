export * as ConfigInfo from "./config-info.js"

/**
 * The shape of one `opencode.json(c)` document, in the upstream key names so that a user's existing
 * file works unchanged. Every key is optional: a document is a partial layer merged over the ones
 * before it (see `Config`). Keys this runtime does not know are not part of the schema; the loader
 * warns about them and drops them, it never fails on them.
 *
 * Types are the decoded values; nothing is transformed, so a decoded document is also its own
 * encoded form.
 */

import { Schema } from "effect"

const PositiveInt = Schema.Int.pipe(Schema.positive())
const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())

/** What a permission rule does when it matches. */
export const PermissionAction = Schema.Literal("allow", "ask", "deny")
export type PermissionAction = typeof PermissionAction.Type

/** One tool's permission: an action for everything, or an action per pattern (`{"*": "ask", "git *": "allow"}`). */
export const PermissionRule = Schema.Union(
  PermissionAction,
  Schema.Record({ key: Schema.String, value: PermissionAction })
)
export type PermissionRule = typeof PermissionRule.Type

/**
 * `permission`: one action for every tool, or per tool (`edit`, `bash`, `webfetch`, `read`,
 * `external_directory`, … and `*`). Keys are kept in document order; later entries win.
 */
export const Permission = Schema.Union(PermissionAction, Schema.Record({ key: Schema.String, value: PermissionRule }))
export type Permission = typeof Permission.Type

/** `tools` (upstream's older form of permissions): `false` denies a tool, `true` allows it. */
export const Tools = Schema.Record({ key: Schema.String, value: Schema.Boolean })
export type Tools = typeof Tools.Type

/** `provider.<id>.models.<id>.limit`: token limits, 0 or absent when unknown. */
export const ModelLimit = Schema.Struct({
  context: Schema.optionalWith(NonNegativeInt, { exact: true }),
  output: Schema.optionalWith(NonNegativeInt, { exact: true })
})
export interface ModelLimit extends Schema.Schema.Type<typeof ModelLimit> {}

/** `provider.<id>.models.<id>`: one model of a provider; the key is the model's ID in references. */
export const Model = Schema.Struct({
  /** The model ID sent on the wire, when it differs from the key. */
  id: Schema.optionalWith(Schema.String, { exact: true }),
  name: Schema.optionalWith(Schema.String, { exact: true }),
  tool_call: Schema.optionalWith(Schema.Boolean, { exact: true }),
  reasoning: Schema.optionalWith(Schema.Boolean, { exact: true }),
  limit: Schema.optionalWith(ModelLimit, { exact: true })
})
export interface Model extends Schema.Schema.Type<typeof Model> {}

/** `provider.<id>.options`: where and how to reach the provider. */
export const ProviderOptions = Schema.Struct({
  baseURL: Schema.optionalWith(Schema.String, { exact: true }),
  apiKey: Schema.optionalWith(Schema.String, { exact: true }),
  headers: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true })
})
export interface ProviderOptions extends Schema.Schema.Type<typeof ProviderOptions> {}

/** `provider.<id>`: `npm` selects the wire protocol only (no AI SDK package is installed). */
export const Provider = Schema.Struct({
  npm: Schema.optionalWith(Schema.String, { exact: true }),
  name: Schema.optionalWith(Schema.String, { exact: true }),
  options: Schema.optionalWith(ProviderOptions, { exact: true }),
  models: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Model }), { exact: true })
})
export interface Provider extends Schema.Schema.Type<typeof Provider> {}

/** Where an agent can be selected: as the session's agent, as a task subagent, or both. */
export const AgentMode = Schema.Literal("primary", "subagent", "all")
export type AgentMode = typeof AgentMode.Type

/** `agent.<name>`: overrides of a built-in agent, or a new agent. */
export const Agent = Schema.Struct({
  /** The agent's system prompt, replacing the built-in one (`{file:./prompt.md}` reads a file). */
  prompt: Schema.optionalWith(Schema.String, { exact: true }),
  /** `provider/model`. */
  model: Schema.optionalWith(Schema.String, { exact: true }),
  /** The maximum number of steps of one run; unlimited when absent. */
  steps: Schema.optionalWith(PositiveInt, { exact: true }),
  /** Upstream's older name for `steps`; `steps` wins when both are set. */
  maxSteps: Schema.optionalWith(PositiveInt, { exact: true }),
  permission: Schema.optionalWith(Permission, { exact: true }),
  tools: Schema.optionalWith(Tools, { exact: true }),
  /** `true` removes the agent (built-in or not). */
  disable: Schema.optionalWith(Schema.Boolean, { exact: true }),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  mode: Schema.optionalWith(AgentMode, { exact: true }),
  hidden: Schema.optionalWith(Schema.Boolean, { exact: true }),
  temperature: Schema.optionalWith(Schema.Number, { exact: true }),
  top_p: Schema.optionalWith(Schema.Number, { exact: true }),
  color: Schema.optionalWith(Schema.String, { exact: true })
})
export interface Agent extends Schema.Schema.Type<typeof Agent> {}

/** `tool_output`: how much of a tool's output the model sees before it is bounded. */
export const ToolOutput = Schema.Struct({
  max_lines: Schema.optionalWith(PositiveInt, { exact: true }),
  max_bytes: Schema.optionalWith(PositiveInt, { exact: true })
})
export interface ToolOutput extends Schema.Schema.Type<typeof ToolOutput> {}

/** `compaction`: automatic compaction of long sessions and pruning of old tool output. */
export const Compaction = Schema.Struct({
  auto: Schema.optionalWith(Schema.Boolean, { exact: true }),
  prune: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** Tokens kept free below the context limit when deciding to compact. */
  reserved: Schema.optionalWith(NonNegativeInt, { exact: true })
})
export interface Compaction extends Schema.Schema.Type<typeof Compaction> {}

/** `server`: the `opencode serve` listener. */
export const Server = Schema.Struct({
  port: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 65535)), { exact: true }),
  hostname: Schema.optionalWith(Schema.String, { exact: true }),
  mdns: Schema.optionalWith(Schema.Boolean, { exact: true }),
  cors: Schema.optionalWith(Schema.Array(Schema.String), { exact: true })
})
export interface Server extends Schema.Schema.Type<typeof Server> {}

/** One config document. */
export const Info = Schema.Struct({
  $schema: Schema.optionalWith(Schema.String, { exact: true }),
  /** The default model, `provider/model`. */
  model: Schema.optionalWith(Schema.String, { exact: true }),
  /** The model for small tasks (titles, summaries), `provider/model`. */
  small_model: Schema.optionalWith(Schema.String, { exact: true }),
  /** The primary agent a new session starts with; `build` when absent. */
  default_agent: Schema.optionalWith(Schema.String, { exact: true }),
  provider: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Provider }), { exact: true }),
  agent: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Agent }), { exact: true }),
  /** Permissions of every agent, applied after the built-in ones and before each agent's own. */
  permission: Schema.optionalWith(Permission, { exact: true }),
  tools: Schema.optionalWith(Tools, { exact: true }),
  /** Extra instruction files: paths or globs. Concatenated across documents, not replaced. */
  instructions: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  tool_output: Schema.optionalWith(ToolOutput, { exact: true }),
  compaction: Schema.optionalWith(Compaction, { exact: true }),
  server: Schema.optionalWith(Server, { exact: true })
}).annotations({ identifier: "OpencodeConfig" })
export interface Info extends Schema.Schema.Type<typeof Info> {}
