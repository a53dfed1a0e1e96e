export * as Skill from "./skill.js"

import { Schema } from "effect"

/**
 * A discovered skill (`GET /api/skill`): the `name` and `description` from its `SKILL.md` front
 * matter, the absolute path of that file (`location`) and the instructions that follow the front
 * matter (`content`). `slash` says whether the skill may also be invoked as a slash command; absent
 * when the skill does not say.
 */
export const SkillV2Info = Schema.Struct({
  name: Schema.String,
  description: Schema.optional(Schema.String),
  slash: Schema.optional(Schema.Boolean),
  location: Schema.String,
  content: Schema.String
}).annotations({ identifier: "SkillV2Info" })
export interface SkillV2Info extends Schema.Schema.Type<typeof SkillV2Info> {}
