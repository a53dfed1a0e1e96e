export * as SkillGuidance from "./skill-guidance.js"

/**
 * Selected-agent skill guidance (`agent/skills`), an Instruction Source the runner composes
 * explicitly. The producer lists only the skills the selected agent may use, and reports
 * `Instructions.absent` when the skill tool is disabled for it; only names and descriptions reach the
 * model (bodies and locations go through the permission-checked skill tool). The list is kept in
 * name order, so a reordering alone is never a change. An agent switch that changes the list is an
 * ordinary change: an Instruction Update, the baseline untouched.
 */

import { Effect, Schema } from "effect"
import { Instructions } from "./instructions.js"

export const key: Instructions.Key = Instructions.key("agent/skills")

/** Only what the agent may see: a skill's name and description. */
export const Skill = Schema.Struct({ name: Schema.String, description: Schema.String }).annotations({
  identifier: "SkillGuidanceItem"
})
export interface Skill extends Schema.Schema.Type<typeof Skill> {}

export const Value = Schema.Array(Skill).annotations({ identifier: "SkillGuidance" })
export type Value = typeof Value.Type

const list = (skills: Value): string =>
  [
    "<available_skills>",
    ...skills.flatMap((skill) => [
      "  <skill>",
      `    <name>${skill.name}</name>`,
      `    <description>${skill.description}</description>`,
      "  </skill>"
    ]),
    "</available_skills>"
  ].join("\n")

const intro = [
  "Skills package specialised instructions and workflows for particular kinds of task.",
  "When a task fits a skill's description, load that skill with the skill tool."
].join("\n")

const none = "No skills are available to you any more."

/** The intro and the list; nothing when the agent may use no skill. */
export const baseline = (skills: Value): string => (skills.length === 0 ? "" : [intro, list(skills)].join("\n"))

/** The newly effective list; stated plainly when the model was told of none before. */
export const update = (skills: Value, previous: Value): string =>
  previous.length === 0
    ? baseline(skills)
    : skills.length === 0
      ? none
      : [intro, "The skills available to you are now:", list(skills)].join("\n")

export const removed = (previous: Value): string => (previous.length === 0 ? "" : none)

const byName = (skills: Value): Value => [...skills].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

/** The skill guidance source, observed with `load`. */
export const make = <R>(load: Effect.Effect<Instructions.Observation<Value>, never, R>): Instructions.Instructions<R> =>
  Instructions.make({
    key,
    codec: Value,
    load: Effect.map(load, (observed) => (Array.isArray(observed) ? byName(observed as Value) : observed)),
    baseline,
    update,
    removed
  })
