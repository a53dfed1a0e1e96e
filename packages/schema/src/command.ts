export * as Command from "./command.js"

import { Schema } from "effect"
import { ModelRef } from "./model.js"

/**
 * A custom command (`GET /api/command`): a named prompt template a user runs by starting a prompt
 * with `/name`. `template` is the prompt text before expansion (`$ARGUMENTS`, `$1`…, `` !`cmd` ``,
 * `@file`); `agent` and `model`, when set, select the agent and model the expanded prompt runs with;
 * `subtask: true` runs it as a subagent task in a child session. Absent fields were not set.
 */
export const CommandV2Info = Schema.Struct({
  name: Schema.String,
  template: Schema.String,
  description: Schema.optional(Schema.String),
  agent: Schema.optional(Schema.String),
  model: Schema.optional(ModelRef),
  subtask: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "CommandV2Info" })
export interface CommandV2Info extends Schema.Schema.Type<typeof CommandV2Info> {}
