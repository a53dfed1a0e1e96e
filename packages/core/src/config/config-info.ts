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

/** `provider.<id>.models.<id>.modalities`: what the model takes in and gives out. */
export const ModelModalities = Schema.Struct({
  input: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  output: Schema.optionalWith(Schema.Array(Schema.String), { exact: true })
})
export interface ModelModalities extends Schema.Schema.Type<typeof ModelModalities> {}

/** Prices in USD per million tokens (models.dev's shape). */
export const ModelCostRates = Schema.Struct({
  input: Schema.Number,
  output: Schema.Number,
  cache_read: Schema.optionalWith(Schema.Number, { exact: true }),
  cache_write: Schema.optionalWith(Schema.Number, { exact: true })
})
export interface ModelCostRates extends Schema.Schema.Type<typeof ModelCostRates> {}

/**
 * `provider.<id>.models.<id>.cost`: prices in USD per million tokens; `context_over_200k` is the
 * tier that applies once a request's input exceeds 200,000 tokens.
 */
export const ModelCost = Schema.Struct({
  ...ModelCostRates.fields,
  context_over_200k: Schema.optionalWith(ModelCostRates, { exact: true })
})
export interface ModelCost extends Schema.Schema.Type<typeof ModelCost> {}

/** Upstream-shaped request options (AI SDK / models.dev keys), partitioned by the Catalog. */
export const RequestOptions = Schema.Record({ key: Schema.String, value: Schema.Unknown })
export type RequestOptions = typeof RequestOptions.Type

/** `provider.<id>.models.<id>`: one model of a provider; the key is the model's ID in references. */
export const Model = Schema.Struct({
  /** The model ID sent on the wire, when it differs from the key. */
  id: Schema.optionalWith(Schema.String, { exact: true }),
  name: Schema.optionalWith(Schema.String, { exact: true }),
  tool_call: Schema.optionalWith(Schema.Boolean, { exact: true }),
  reasoning: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** Whether the model accepts file attachments (upstream's flag): images and PDFs, unless `modalities` says. */
  attachment: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** The kinds of input and output the model handles: `text`, `image`, `pdf`, `audio`, `video`. */
  modalities: Schema.optionalWith(ModelModalities, { exact: true }),
  limit: Schema.optionalWith(ModelLimit, { exact: true }),
  family: Schema.optionalWith(Schema.String, { exact: true }),
  release_date: Schema.optionalWith(Schema.String, { exact: true }),
  status: Schema.optionalWith(Schema.Literal("alpha", "beta", "deprecated", "active"), { exact: true }),
  /** Whether the model takes a sampling temperature (models.dev's flag); default true. */
  temperature: Schema.optionalWith(Schema.Boolean, { exact: true }),
  cost: Schema.optionalWith(ModelCost, { exact: true }),
  /** Request options for every request to this model (upstream keys, e.g. `reasoningEffort`). */
  options: Schema.optionalWith(RequestOptions, { exact: true }),
  /** Named option sets selectable per session (`provider/model` + `variant`); `disabled: true` hides one. */
  variants: Schema.optionalWith(Schema.Record({ key: Schema.String, value: RequestOptions }), { exact: true }),
  /** The variant a selection of this model that names none uses (one of `variants`). */
  variant: Schema.optionalWith(Schema.String, { exact: true }),
  headers: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true })
})
export interface Model extends Schema.Schema.Type<typeof Model> {}

/**
 * `provider.<id>.options`: where and how to reach the provider, and (any other key) request options
 * for every model of the provider, in upstream's keys.
 */
export const ProviderOptions = Schema.Struct(
  {
    baseURL: Schema.optionalWith(Schema.String, { exact: true }),
    apiKey: Schema.optionalWith(Schema.String, { exact: true }),
    headers: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true })
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)
export interface ProviderOptions extends Schema.Schema.Type<typeof ProviderOptions> {}

/**
 * `provider.<id>.oauth[]` (an extension of this runtime): one way to connect the provider by OAuth 2.0,
 * offered by `POST /api/integration/{id}/connect/oauth` with `methodID` = `id`. No provider offers
 * OAuth unless the config declares a method for it.
 * - `flow: "code"`: the authorization code flow with PKCE (S256). `redirect: "loopback"` (default)
 *   listens on `http://127.0.0.1:<port>/callback` for the browser's redirect (attempt mode `auto`);
 *   `redirect: "paste"` sends `redirectURI` and waits for the user to paste the code (mode `code`).
 * - `flow: "device"`: the device authorization grant (RFC 8628), polled at `tokenURL`.
 * - `timeout`: how long an attempt may take, in seconds (default 600; a device code's own `expires_in`
 *   can shorten it).
 * The tokens are stored in `auth.json` (`type: "oauth"`) and refreshed at `tokenURL` when they expire.
 */
export const OAuthMethod = Schema.Struct({
  id: Schema.String,
  label: Schema.String,
  flow: Schema.Literal("code", "device"),
  clientID: Schema.String,
  tokenURL: Schema.String,
  authorizeURL: Schema.optionalWith(Schema.String, { exact: true }),
  deviceAuthorizationURL: Schema.optionalWith(Schema.String, { exact: true }),
  scopes: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  redirect: Schema.optionalWith(Schema.Literal("loopback", "paste"), { exact: true }),
  redirectURI: Schema.optionalWith(Schema.String, { exact: true }),
  timeout: Schema.optionalWith(Schema.Number.pipe(Schema.positive()), { exact: true })
})
export interface OAuthMethod extends Schema.Schema.Type<typeof OAuthMethod> {}

/** `provider.<id>`: `npm` selects the wire protocol only (no AI SDK package is installed). */
export const Provider = Schema.Struct({
  npm: Schema.optionalWith(Schema.String, { exact: true }),
  name: Schema.optionalWith(Schema.String, { exact: true }),
  /** Environment variables that may hold the API key, first set wins (models.dev's `env`). */
  env: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  /** The base URL, models.dev's name for it; `options.baseURL` wins. */
  api: Schema.optionalWith(Schema.String, { exact: true }),
  /** Only these catalog models are offered. */
  whitelist: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  /** These catalog models are not offered. */
  blacklist: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  options: Schema.optionalWith(ProviderOptions, { exact: true }),
  models: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Model }), { exact: true }),
  /** How the provider can be connected by OAuth (an extension; see {@link OAuthMethod}). */
  oauth: Schema.optionalWith(Schema.Array(OAuthMethod), { exact: true })
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
  /** Request options for this agent's requests (upstream keys), over the model's. */
  options: Schema.optionalWith(RequestOptions, { exact: true }),
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
  cors: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  /** The largest request body accepted, in bytes (default 10 MiB); a larger one gets a 413. */
  max_body: Schema.optionalWith(PositiveInt, { exact: true }),
  /** How long an event stream may make no write progress before it is closed, in ms (default 30 s). */
  sse_write_timeout: Schema.optionalWith(PositiveInt, { exact: true }),
  /**
   * The PostgreSQL database the sessions are kept in, `postgres://user:password@host:port/database`
   * (`OPENCODE_DATABASE_URL` wins over it); absent: the SQLite file (see Storage).
   */
  database: Schema.optionalWith(
    Schema.String.pipe(
      Schema.pattern(/^postgres(ql)?:\/\//i, {
        message: () => "expected a PostgreSQL URL, postgres://user:password@host:port/database"
      })
    ),
    { exact: true }
  )
})
export interface Server extends Schema.Schema.Type<typeof Server> {}

/**
 * `reference.<name>` as a local directory: `path` is absolute, `~/…` (the home directory), or
 * relative to the project root. `type` may be written but is implied by `path`.
 */
export const ReferenceLocal = Schema.Struct({
  type: Schema.optionalWith(Schema.Literal("local"), { exact: true }),
  path: Schema.String,
  /** When to consult it: only described references are offered to the model. */
  description: Schema.optionalWith(Schema.String, { exact: true }),
  /** `true` keeps it from the model (it is still listed by the API). */
  hidden: Schema.optionalWith(Schema.Boolean, { exact: true })
})
export interface ReferenceLocal extends Schema.Schema.Type<typeof ReferenceLocal> {}

/** `reference.<name>` as a git repository (and optionally a branch); `type` is implied by `repository`. */
export const ReferenceGit = Schema.Struct({
  type: Schema.optionalWith(Schema.Literal("git"), { exact: true }),
  repository: Schema.String,
  branch: Schema.optionalWith(Schema.String, { exact: true }),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  hidden: Schema.optionalWith(Schema.Boolean, { exact: true })
})
export interface ReferenceGit extends Schema.Schema.Type<typeof ReferenceGit> {}

/** `reference.<name>`: a project reference, an extra directory the agent may consult. */
export const Reference = Schema.Union(ReferenceLocal, ReferenceGit)
export type Reference = typeof Reference.Type

/** `mcp.<name>` with `type: "local"`: a server this runtime starts and speaks to over stdio. */
export const McpLocal = Schema.Struct({
  type: Schema.Literal("local"),
  /** The executable and its arguments, e.g. `["npx", "-y", "some-mcp-server"]`. */
  command: Schema.Array(Schema.String),
  /** Variables added to the server's environment (over the host's). */
  environment: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true }),
  /** `false` keeps the server configured but not started. */
  enabled: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /** Milliseconds allowed for connecting (start, initialize, list tools) and for each request. */
  timeout: Schema.optionalWith(PositiveInt, { exact: true })
})
export interface McpLocal extends Schema.Schema.Type<typeof McpLocal> {}

/** `mcp.<name>` with `type: "remote"`: a server reached over streamable HTTP (or, failing that, SSE). */
export const McpRemote = Schema.Struct({
  type: Schema.Literal("remote"),
  url: Schema.String,
  /** Headers sent with every request, e.g. `{"Authorization": "Bearer {env:TOKEN}"}`. */
  headers: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true }),
  enabled: Schema.optionalWith(Schema.Boolean, { exact: true }),
  timeout: Schema.optionalWith(PositiveInt, { exact: true })
})
export interface McpRemote extends Schema.Schema.Type<typeof McpRemote> {}

/**
 * `mcp.<name>` as only `{"enabled": …}`: turns a server defined by another document on or off
 * (documents merge key by key). `type` may not be written here: a typed entry must be complete.
 */
export const McpToggle = Schema.Struct({
  type: Schema.optionalWith(Schema.Never, { exact: true }),
  enabled: Schema.Boolean
})
export interface McpToggle extends Schema.Schema.Type<typeof McpToggle> {}

/** `mcp.<name>`: one MCP server, by name. */
export const Mcp = Schema.Union(McpLocal, McpRemote, McpToggle)
export type Mcp = typeof Mcp.Type

/**
 * `command.<name>`: a custom command (see `Commands`). `template` is the prompt it expands to;
 * `model` is `provider/model`; `subtask: true` runs it as a subagent task.
 */
export const Command = Schema.Struct({
  template: Schema.String,
  description: Schema.optionalWith(Schema.String, { exact: true }),
  agent: Schema.optionalWith(Schema.String, { exact: true }),
  model: Schema.optionalWith(Schema.String, { exact: true }),
  subtask: Schema.optionalWith(Schema.Boolean, { exact: true })
})
export interface Command extends Schema.Schema.Type<typeof Command> {}

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
  /** File snapshots around every Step, which revert restores from; default true. */
  snapshot: Schema.optionalWith(Schema.Boolean, { exact: true }),
  server: Schema.optionalWith(Server, { exact: true }),
  /** Project references by name; a later document's entry replaces an earlier one of that name whole. */
  reference: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Reference }), { exact: true }),
  /** MCP servers by name; entries merge key by key across documents. */
  mcp: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Mcp }), { exact: true }),
  /** Custom commands by name; entries merge key by key across documents. */
  command: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Command }), { exact: true })
}).annotations({ identifier: "OpencodeConfig" })
export interface Info extends Schema.Schema.Type<typeof Info> {}
