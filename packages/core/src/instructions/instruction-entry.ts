export * as InstructionEntry from "./instruction-entry.js"

/**
 * InstructionEntry's Instruction Sources: each API-managed per-Session JSON value under a slash-free
 * name becomes the source `api/<name>`, rendered as a mechanism-neutral `<context>` block (the model
 * sees session context, not how it was attached). Adding, replacing or removing an entry is picked up
 * by `Instructions.reconcile` at the next Safe Step Boundary: a new entry's block, a replaced entry's
 * new block, or a removed entry's pre-rendered removal text.
 */

import { Effect, Schema } from "effect"
import { Instructions } from "./instructions.js"

/** The client-facing, slash-free entry name. */
export const Name = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9._-]*$/),
  Schema.brand("InstructionEntryName")
).annotations({
  identifier: "InstructionEntryName"
})
export type Name = typeof Name.Type

/** One entry: its name and its JSON value. */
export const Entry = Schema.Struct({ name: Name, value: Instructions.Json }).annotations({
  identifier: "InstructionEntry"
})
export interface Entry extends Schema.Schema.Type<typeof Entry> {}

/** The source key of an entry: `api/<name>`. */
export const sourceKey = (name: Name): Instructions.Key => Instructions.key(`api/${name}`)

const body = (value: Instructions.Json): string => (typeof value === "string" ? value : JSON.stringify(value, null, 2))

const block = (name: Name, value: Instructions.Json): string =>
  [`<context name="${name}">`, body(value), "</context>"].join("\n")

export const baseline =
  (name: Name) =>
  (value: Instructions.Json): string =>
    block(name, value)

/** States only the new value, replacing the earlier context of the same name. */
export const update =
  (name: Name) =>
  (value: Instructions.Json): string =>
    [`The context named "${name}" now reads:`, block(name, value)].join("\n")

export const removed = (name: Name): string => `The context named "${name}" no longer applies.`

/**
 * One entry's source, observed with `load` (usually `Effect.succeed(value)` from the session's store;
 * `immediate`: see `Instructions.Spec`).
 */
export const make = <R>(
  name: Name,
  load: Effect.Effect<Instructions.Observation<Instructions.Json>, never, R>,
  options?: { readonly immediate?: boolean }
): Instructions.Instructions<R> =>
  Instructions.make({
    key: sourceKey(name),
    codec: Instructions.Json,
    load,
    baseline: baseline(name),
    update: update(name),
    removed: removed(name),
    immediate: options?.immediate === true
  })

/** The sources of a session's current entries, in name order (a stable declared order). */
export const instructions = (entries: ReadonlyArray<Entry>): Instructions.Instructions<never> =>
  Instructions.combine(
    ...[...entries]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((entry) => make(entry.name, Effect.succeed(entry.value), { immediate: true }))
  )
