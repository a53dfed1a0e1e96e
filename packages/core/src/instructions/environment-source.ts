export * as EnvironmentSource from "./environment-source.js"

/**
 * The environment Instruction Source (`core/environment`): where the agent is working. Pure renderers
 * plus {@link make}; the runner supplies the loader from its Location.
 */

import { type Effect, Schema } from "effect"
import { Instructions } from "./instructions.js"

export const key: Instructions.Key = Instructions.key("core/environment")

export const Value = Schema.Struct({
  /** The working directory of the Location. */
  directory: Schema.String,
  /** The workspace (worktree) root folder. */
  root: Schema.String,
  /** Whether the directory is inside a git repository. */
  git: Schema.Boolean,
  /** The host platform, e.g. `linux` or `darwin`. */
  platform: Schema.String
}).annotations({ identifier: "EnvironmentInstruction" })
export interface Value extends Schema.Schema.Type<typeof Value> {}

const block = (value: Value): string =>
  [
    "<env>",
    `  Current directory: ${value.directory}`,
    `  Workspace root: ${value.root}`,
    `  Git repository: ${value.git ? "yes" : "no"}`,
    `  Platform: ${value.platform}`,
    "</env>"
  ].join("\n")

export const baseline = (value: Value): string =>
  ["Details of the environment you are working in:", block(value)].join("\n")

/** States only the new environment. */
export const update = (value: Value): string => ["Your environment has changed. It is now:", block(value)].join("\n")

/** The environment source, observed with `load` (`immediate`: see `Instructions.Spec`). */
export const make = <R>(
  load: Effect.Effect<Instructions.Observation<Value>, never, R>,
  options?: { readonly immediate?: boolean }
): Instructions.Instructions<R> =>
  Instructions.make({ key, codec: Value, load, baseline, update, immediate: options?.immediate === true })
