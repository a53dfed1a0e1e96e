export * as InstructionDiscovery from "./instruction-discovery.js"

/**
 * InstructionDiscovery's Instruction Source (`core/instruction-discovery`): the ambient global and
 * upward-project AGENTS.md files as ONE ordered aggregate value. This module holds the value, the pure
 * renderers and the source constructor; the Location-scoped service that reads the files (global
 * `~/.config/opencode/AGENTS.md`, then project files, honouring `OPENCODE_DISABLE_PROJECT_CONFIG` for
 * project files only) supplies the loader.
 *
 * Because the set is one value, any change re-sends the complete current ordered set, stating that it
 * supersedes the earlier one; an empty set says the earlier files no longer apply.
 */

import { type Effect, Schema } from "effect"
import { Instructions } from "./instructions.js"

export const key: Instructions.Key = Instructions.key("core/instruction-discovery")

export const File = Schema.Struct({
  /** Absolute path of the file, as shown to the model. */
  path: Schema.String,
  content: Schema.String
}).annotations({ identifier: "DiscoveredInstructionFile" })
export interface File extends Schema.Schema.Type<typeof File> {}

/** The discovered files in precedence order (the order the model reads them). */
export const Value = Schema.Array(File).annotations({ identifier: "DiscoveredInstructions" })
export type Value = typeof Value.Type

const files = (value: Value): string =>
  value.map((file) => [`Instructions loaded from ${file.path}:`, file.content.trimEnd()].join("\n")).join("\n\n")

const noLongerApply = "The instruction files loaded earlier no longer apply; no instruction files are in effect now."

/** The files, in order; empty when none were found (the baseline then says nothing). */
export const baseline = (value: Value): string => files(value)

/**
 * The complete current set, superseding the prior one; or that none apply any more. When the model
 * was told of no files before, the set is simply stated.
 */
export const update = (value: Value, previous: Value): string =>
  value.length === 0
    ? noLongerApply
    : previous.length === 0
      ? files(value)
      : ["The instruction files below replace all instruction files loaded earlier:", files(value)].join("\n\n")

/** Said when the discovery source stops being composed or reports absence. */
export const removed = (previous: Value): string => (previous.length === 0 ? "" : noLongerApply)

/** The discovery source, observed with `load`. */
export const make = <R>(load: Effect.Effect<Instructions.Observation<Value>, never, R>): Instructions.Instructions<R> =>
  Instructions.make({ key, codec: Value, load, baseline, update, removed })
