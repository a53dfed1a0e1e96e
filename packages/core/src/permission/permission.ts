export * as Permission from "./permission.js"

import { Effect } from "effect"
import type { AgentCatalog } from "../config/agent-catalog.js"
import { ToolRegistry } from "../tool/tool-registry.js"

export type Effect_ = "allow" | "ask" | "deny"

/** Escapes a glob into a regular expression: `*` any run of characters, `?` one character. */
const globToRegExp = (glob: string): RegExp =>
  new RegExp(`^${glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")}$`, "s")

/** Whether one rule's action and resource globs match. */
const matches = (rule: AgentCatalog.Rule, action: string, resource: string): boolean =>
  globToRegExp(rule.action).test(action) && globToRegExp(rule.resource).test(resource)

/**
 * The effect of `action` on `resource` under `rules`: the last matching rule wins; no match means
 * `ask`. Pure.
 */
export const evaluate = (rules: AgentCatalog.Ruleset, action: string, resource: string): Effect_ => {
  for (let i = rules.length - 1; i >= 0; i--) {
    const rule = rules[i]!
    if (matches(rule, action, resource)) return rule.effect
  }
  return "ask"
}

/**
 * Checks a tool's request against the issuing agent's rules: resolves when every resource is
 * allowed; fails with a ToolFailure when one is denied, or needs an answer (asking a user through
 * durable permission requests is not available yet, so an `ask` is refused with that reason).
 */
export const check = (rules: AgentCatalog.Ruleset, request: ToolRegistry.PermissionAsk) =>
  Effect.gen(function* () {
    for (const resource of request.resources) {
      const effect = evaluate(rules, request.action, resource)
      if (effect === "deny") {
        return yield* new ToolRegistry.ToolFailure({
          message: `Permission denied: ${request.action} ${resource} is not allowed for this agent`
        })
      }
      if (effect === "ask") {
        return yield* new ToolRegistry.ToolFailure({
          message: `Permission required: ${request.action} ${resource} needs approval, which cannot be requested here`
        })
      }
    }
  })
