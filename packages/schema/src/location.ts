export * as Location from "./location.js"

import { Schema } from "effect"
import { WorkspaceID } from "./identifier.js"

/** Where a session works: a directory, optionally inside a workspace. */
export const LocationRef = Schema.Struct({
  directory: Schema.String,
  workspaceID: Schema.optional(WorkspaceID)
}).annotations({ identifier: "LocationRef" })
export interface LocationRef extends Schema.Schema.Type<typeof LocationRef> {}

/** A project: a stable ID (root commit of a git worktree, else a directory hash) and its root directory. */
export const ProjectRef = Schema.Struct({
  id: Schema.String,
  directory: Schema.String
})
export interface ProjectRef extends Schema.Schema.Type<typeof ProjectRef> {}

/** A resolved Location: the directory, its workspace and the project it belongs to. */
export const LocationInfo = Schema.Struct({
  directory: Schema.String,
  workspaceID: Schema.optional(WorkspaceID),
  project: ProjectRef
}).annotations({ identifier: "LocationInfo" })
export interface LocationInfo extends Schema.Schema.Type<typeof LocationInfo> {}
