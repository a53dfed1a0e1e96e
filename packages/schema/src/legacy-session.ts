export * as LegacySession from "./legacy-session.js"

import { Schema } from "effect"
import { FreeFormObject } from "./free-form.js"
import { MessageID, PartID, SessionID, WorkspaceID } from "./identifier.js"
import { ModelRef } from "./model.js"
import type { SessionV2Info } from "./session.js"

/*
 * The session record of the contract's v1 bus events (`session.created` and `session.updated` on
 * `GET /api/event`), which upstream clients read to list sessions and refresh their titles. The
 * runtime keeps the v2 record (`SessionV2Info`); this is only its projection for those events, made
 * by {@link fromV2}.
 */

/** What a revert would change in one file (only in a session's `summary`, which we do not keep). */
export const SnapshotFileDiff = Schema.Struct({
  file: Schema.optional(Schema.String),
  patch: Schema.optional(Schema.String),
  additions: Schema.Number,
  deletions: Schema.Number,
  status: Schema.optional(Schema.Literal("added", "deleted", "modified"))
}).annotations({ identifier: "SnapshotFileDiff" })
export interface SnapshotFileDiff extends Schema.Schema.Type<typeof SnapshotFileDiff> {}

/** The v1 permission effect. */
export const PermissionAction = Schema.Literal("allow", "deny", "ask").annotations({ identifier: "PermissionAction" })
export type PermissionAction = typeof PermissionAction.Type

/** One v1 permission rule: `action` for `permission` on resources matching `pattern`. */
export const PermissionRule = Schema.Struct({
  permission: Schema.String,
  pattern: Schema.String,
  action: PermissionAction
}).annotations({ identifier: "PermissionRule" })
export interface PermissionRule extends Schema.Schema.Type<typeof PermissionRule> {}

export const PermissionRuleset = Schema.Array(PermissionRule).annotations({ identifier: "PermissionRuleset" })
export type PermissionRuleset = typeof PermissionRuleset.Type

const Timestamp = Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))

/** The v1 session record (the contract's `Session`). */
export const Session = Schema.Struct({
  id: SessionID,
  slug: Schema.String,
  projectID: Schema.String,
  workspaceID: Schema.optional(WorkspaceID),
  directory: Schema.String,
  path: Schema.optional(Schema.String),
  parentID: Schema.optional(SessionID),
  summary: Schema.optional(
    Schema.Struct({
      additions: Schema.Number,
      deletions: Schema.Number,
      files: Schema.Number,
      diffs: Schema.optional(Schema.Array(SnapshotFileDiff))
    })
  ),
  cost: Schema.optional(Schema.Number),
  tokens: Schema.optional(
    Schema.Struct({
      input: Schema.Number,
      output: Schema.Number,
      reasoning: Schema.Number,
      cache: Schema.Struct({ read: Schema.Number, write: Schema.Number })
    })
  ),
  share: Schema.optional(Schema.Struct({ url: Schema.String })),
  title: Schema.String,
  agent: Schema.optional(Schema.String),
  model: Schema.optional(ModelRef),
  version: Schema.String,
  metadata: Schema.optional(FreeFormObject),
  time: Schema.Struct({
    created: Timestamp,
    updated: Timestamp,
    compacting: Schema.optional(Timestamp),
    archived: Schema.optional(Schema.Number)
  }),
  permission: Schema.optional(PermissionRuleset),
  revert: Schema.optional(
    Schema.Struct({
      messageID: MessageID,
      partID: Schema.optional(PartID),
      snapshot: Schema.optional(Schema.String),
      diff: Schema.optional(Schema.String)
    })
  )
}).annotations({ identifier: "Session" })
export interface Session extends Schema.Schema.Type<typeof Session> {}

/**
 * The v1 record of a session: its Location as `directory` (+ `workspaceID`), its subpath as `path`,
 * `version` the runtime's version (given), and as `slug` (a short handle upstream makes up from words)
 * the session's id, which is unique and stable. Timestamps are rounded to whole milliseconds. A staged
 * revert keeps its message, part (when it is a part id), snapshot and diff; its file list has no v1
 * counterpart.
 */
export const fromV2 = (info: SessionV2Info, version: string): Session => ({
  id: info.id,
  slug: info.id,
  projectID: info.projectID,
  ...(info.location.workspaceID === undefined ? {} : { workspaceID: info.location.workspaceID }),
  directory: info.location.directory,
  ...(info.subpath === undefined ? {} : { path: info.subpath }),
  ...(info.parentID === undefined ? {} : { parentID: info.parentID }),
  cost: info.cost,
  tokens: info.tokens,
  title: info.title,
  ...(info.agent === undefined ? {} : { agent: info.agent }),
  ...(info.model === undefined ? {} : { model: info.model }),
  version,
  time: {
    created: Math.max(0, Math.round(info.time.created)),
    updated: Math.max(0, Math.round(info.time.updated)),
    ...(info.time.archived === undefined ? {} : { archived: info.time.archived })
  },
  ...(info.revert === undefined
    ? {}
    : {
        revert: {
          messageID: info.revert.messageID,
          ...(isPartID(info.revert.partID) ? { partID: info.revert.partID } : {}),
          ...(info.revert.snapshot === undefined ? {} : { snapshot: info.revert.snapshot }),
          ...(info.revert.diff === undefined ? {} : { diff: info.revert.diff })
        }
      })
})

const isPartID = Schema.is(PartID)
