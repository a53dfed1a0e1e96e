export * as Permission from "./permission.js"

import type { PermissionRule } from "@opencode-ai/schema"
import type { AgentCatalog } from "../config/agent-catalog.js"
import { Wildcard } from "./wildcard.js"

/**
 * Permission evaluation: pure functions over ordered rulesets of `{action, resource, effect}`.
 *
 * **Last match wins.** A ruleset is read from the end: the last rule whose `action` pattern matches
 * the action and whose `resource` pattern matches the resource decides. No matching rule means
 * `ask`. Patterns use {@link Wildcard} (`*` crosses `/`; everything but `*` and `?` is literal).
 *
 * **Merge order.** The effective ruleset of a call is the concatenation, so later layers win:
 *   1. defaults (`AgentCatalog.defaults`: everything allowed, outside directories and `.env` ask, ...);
 *   2. the agent's own built-in rules;
 *   3. config: the top-level `tools`/`permission`, then the agent's `tools`/`permission`;
 *   4. session: the saved permissions (replies of `always`) of the session's project.
 * Layers 1–3 are the agent's `permission` as `AgentCatalog.resolve` builds it; the runner captures
 * that ruleset when a Step starts, so a call keeps it even if the session switches agent meanwhile.
 * Layer 4 is read when a call asks (see `PermissionRequests`). As upstream, a saved `allow` is a
 * later rule than the configuration, so it also overrides a configured `deny` for the same resource.
 */

export type Effect_ = PermissionRule.PermissionV2Effect
export type Rule = AgentCatalog.Rule
export type Ruleset = AgentCatalog.Ruleset

/** The tools that act under the `edit` permission (upstream's edit tools). */
export const editTools: ReadonlySet<string> = new Set(["edit", "write", "patch", "multiedit", "apply_patch"])

/** The permission action a tool is governed by: `edit` for the file-writing tools, else its name. */
export const actionOf = (toolName: string): string => (editTools.has(toolName) ? "edit" : toolName)

/** Concatenates rulesets in precedence order (a later one wins; see the module doc). */
export const merge = (...rulesets: ReadonlyArray<Ruleset>): Ruleset => rulesets.flat()

const findLast = (ruleset: Ruleset, predicate: (rule: Rule) => boolean): Rule | undefined => {
  for (let index = ruleset.length - 1; index >= 0; index--) {
    const rule = ruleset[index]!
    if (predicate(rule)) return rule
  }
  return undefined
}

/** The last rule matching `action` on `resource`, if any. */
export const matching = (ruleset: Ruleset, action: string, resource: string): Rule | undefined =>
  findLast(ruleset, (rule) => Wildcard.match(action, rule.action) && Wildcard.match(resource, rule.resource))

/** The effect of `action` on `resource`: the last matching rule's, else `ask`. */
export const evaluate = (ruleset: Ruleset, action: string, resource: string): Effect_ =>
  matching(ruleset, action, resource)?.effect ?? "ask"

/** What a request for several resources comes to: `resource` names the one that decided it. */
export interface Decision {
  readonly effect: Effect_
  readonly resource?: string
}

/**
 * The effect of `action` on all of `resources`: `deny` when any one is denied, else `ask` when any
 * one asks, else `allow`. A request naming no resource is judged as the resource `*`.
 */
export const decide = (ruleset: Ruleset, action: string, resources: ReadonlyArray<string>): Decision => {
  const effects = (resources.length === 0 ? ["*"] : resources).map((resource) => ({
    resource,
    effect: evaluate(ruleset, action, resource)
  }))
  return (
    effects.find((item) => item.effect === "deny") ??
    effects.find((item) => item.effect === "ask") ?? { effect: "allow" }
  )
}

/**
 * The tools the model is offered under `ruleset`, in the given order. A tool is hidden when the last
 * rule matching its action (see {@link actionOf}) denies it for every resource (`resource: "*"`); a
 * tool denied only for some resources stays visible and is refused per call.
 */
export const visibleTools = (ruleset: Ruleset, toolNames: ReadonlyArray<string>): ReadonlyArray<string> =>
  toolNames.filter((name) => {
    const action = actionOf(name)
    const rule = findLast(ruleset, (candidate) => Wildcard.match(action, candidate.action))
    return !(rule !== undefined && rule.resource === "*" && rule.effect === "deny")
  })

/** Saved permissions as the session layer of a ruleset: each one an `allow` rule. */
export const fromSaved = (saved: ReadonlyArray<{ readonly action: string; readonly resource: string }>): Ruleset =>
  saved.map((item) => ({ action: item.action, resource: item.resource, effect: "allow" as const }))
