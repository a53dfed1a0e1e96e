export * as ReferenceGuidance from "./reference-guidance.js"

/**
 * Reference guidance (`core/references`), an Instruction Source the runner composes explicitly: the
 * configured project references that have a description (the producer filters), listed in name order
 * (so a reordering alone is never a change). Nothing is said while there are none.
 */

import { Effect, Schema } from "effect"
import { Instructions } from "./instructions.js"

export const key: Instructions.Key = Instructions.key("core/references")

export const Reference = Schema.Struct({
  name: Schema.String,
  path: Schema.String,
  description: Schema.String
}).annotations({ identifier: "ReferenceGuidanceItem" })
export interface Reference extends Schema.Schema.Type<typeof Reference> {}

export const Value = Schema.Array(Reference).annotations({ identifier: "ReferenceGuidance" })
export type Value = typeof Value.Type

const list = (references: Value): string =>
  [
    "Project references are extra directories you may consult when they are relevant.",
    "<available_references>",
    ...references.flatMap((reference) => [
      "  <reference>",
      `    <name>${reference.name}</name>`,
      `    <path>${reference.path}</path>`,
      `    <description>${reference.description}</description>`,
      "  </reference>"
    ]),
    "</available_references>"
  ].join("\n")

const none = "No project references are available any more."

export const baseline = (references: Value): string => (references.length === 0 ? "" : list(references))

/** The newly effective list; stated plainly when the model was told of none before. */
export const update = (references: Value, previous: Value): string =>
  previous.length === 0
    ? baseline(references)
    : references.length === 0
      ? none
      : ["The project references have changed.", list(references)].join("\n")

export const removed = (previous: Value): string => (previous.length === 0 ? "" : none)

const byName = (references: Value): Value =>
  [...references].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

/** The reference guidance source, observed with `load`. */
export const make = <R>(load: Effect.Effect<Instructions.Observation<Value>, never, R>): Instructions.Instructions<R> =>
  Instructions.make({
    key,
    codec: Value,
    load: Effect.map(load, (observed) => (Array.isArray(observed) ? byName(observed as Value) : observed)),
    baseline,
    update,
    removed
  })
