export * as Reference from "./reference.js"

import { Schema } from "effect"

/** A project reference configured as a local directory (`path`, as written in the config). */
export const ReferenceLocalSource = Schema.Struct({
  type: Schema.Literal("local"),
  path: Schema.String,
  description: Schema.optional(Schema.String),
  hidden: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "ReferenceLocalSource" })
export interface ReferenceLocalSource extends Schema.Schema.Type<typeof ReferenceLocalSource> {}

/** A project reference configured as a git repository (and optionally a branch). */
export const ReferenceGitSource = Schema.Struct({
  type: Schema.Literal("git"),
  repository: Schema.String,
  branch: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  hidden: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "ReferenceGitSource" })
export interface ReferenceGitSource extends Schema.Schema.Type<typeof ReferenceGitSource> {}

/** Where a reference comes from, as configured. */
export const ReferenceSource = Schema.Union(ReferenceLocalSource, ReferenceGitSource).annotations({
  identifier: "ReferenceSource"
})
export type ReferenceSource = typeof ReferenceSource.Type

/**
 * A project reference (`GET /api/reference`): an extra directory the agent may consult. `path` is
 * the resolved absolute directory (a local path resolved against the project root; for a git
 * repository, where its checkout lives); `description` and `hidden` repeat the configured values;
 * `source` is the configuration it was resolved from.
 */
export const ReferenceInfo = Schema.Struct({
  name: Schema.String,
  path: Schema.String,
  description: Schema.optional(Schema.String),
  hidden: Schema.optional(Schema.Boolean),
  source: ReferenceSource
}).annotations({ identifier: "ReferenceInfo" })
export interface ReferenceInfo extends Schema.Schema.Type<typeof ReferenceInfo> {}
