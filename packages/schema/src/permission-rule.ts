export * as PermissionRule from "./permission-rule.js"

import { Schema } from "effect"

/** What a matching rule decides: let the action run, refuse it, or ask the user. */
export const PermissionV2Effect = Schema.Literal("allow", "deny", "ask").annotations({
  identifier: "PermissionV2Effect"
})
export type PermissionV2Effect = typeof PermissionV2Effect.Type

/** One rule: an `action` (e.g. a tool name) on a `resource` pattern, and its effect. */
export const PermissionV2Rule = Schema.Struct({
  action: Schema.String,
  resource: Schema.String,
  effect: PermissionV2Effect
}).annotations({ identifier: "PermissionV2Rule" })
export interface PermissionV2Rule extends Schema.Schema.Type<typeof PermissionV2Rule> {}

/** An ordered list of rules, as an agent declares them. */
export const PermissionV2Ruleset = Schema.Array(PermissionV2Rule).annotations({ identifier: "PermissionV2Ruleset" })
export type PermissionV2Ruleset = typeof PermissionV2Ruleset.Type
