export * as Agent from "./agent.js"

import { Schema } from "effect"
import { ModelRef } from "./model.js"
import { PermissionV2Ruleset } from "./permission-rule.js"
import { ProviderRequest } from "./provider.js"

/** A display colour: a `#rrggbb` hex value or a theme colour name. */
export const AgentColor = Schema.Union(
  Schema.String.pipe(Schema.pattern(/^#[0-9a-fA-F]{6}$/)),
  Schema.Literal("primary", "secondary", "accent", "success", "warning", "error", "info")
).annotations({ identifier: "AgentColor" })
export type AgentColor = typeof AgentColor.Type

/**
 * An agent (`GET /api/agent`). `mode` says whether it can be selected for a session (`primary`),
 * only delegated to (`subagent`), or both (`all`). `model` is its preferred model, `system` its
 * prompt, `request` the request additions it applies, `steps` its step allowance per run (no
 * limit when absent) and `permissions` its rules. Hidden agents are not offered in pickers.
 */
export const AgentV2Info = Schema.Struct({
  id: Schema.String,
  model: Schema.optional(ModelRef),
  request: ProviderRequest,
  system: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  mode: Schema.Literal("subagent", "primary", "all"),
  hidden: Schema.Boolean,
  color: Schema.optional(AgentColor),
  steps: Schema.optional(Schema.Int.pipe(Schema.positive())),
  permissions: PermissionV2Ruleset
}).annotations({ identifier: "AgentV2Info" })
export interface AgentV2Info extends Schema.Schema.Type<typeof AgentV2Info> {}

/**
 * An agent configuration the model wrote from a description (`POST /api/agent/generate`, an
 * extension): `identifier` (lowercase words joined by hyphens, not an existing agent's name), when to
 * delegate to it, and its system prompt. It is a proposal: nothing is saved; a client writes it to
 * the config (`agent.<identifier>` with `description` and `prompt`) if the user keeps it.
 */
export const GeneratedAgent = Schema.Struct({
  identifier: Schema.String.pipe(Schema.pattern(/^[a-z0-9]+(-[a-z0-9]+)*$/)),
  whenToUse: Schema.String,
  systemPrompt: Schema.String
}).annotations({ identifier: "GeneratedAgent" })
export interface GeneratedAgent extends Schema.Schema.Type<typeof GeneratedAgent> {}
