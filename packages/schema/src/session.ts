export * as Session from "./session.js"

import { Schema } from "effect"
import { SessionID } from "./identifier.js"
import { LocationRef } from "./location.js"
import { ModelRef } from "./model.js"

/** Token usage, summed over a session's settled steps. */
export const Tokens = Schema.Struct({
  input: Schema.Number,
  output: Schema.Number,
  reasoning: Schema.Number,
  cache: Schema.Struct({ read: Schema.Number, write: Schema.Number })
})
export interface Tokens extends Schema.Schema.Type<typeof Tokens> {}

export const emptyTokens: Tokens = { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } }

/** Millisecond timestamps of a session's life. */
export const Time = Schema.Struct({
  created: Schema.Number,
  updated: Schema.Number,
  archived: Schema.optional(Schema.Number)
})
export interface Time extends Schema.Schema.Type<typeof Time> {}

export const FileDiff = Schema.Struct({
  path: Schema.String,
  status: Schema.Literal("added", "modified", "deleted"),
  additions: Schema.NonNegativeInt,
  deletions: Schema.NonNegativeInt,
  patch: Schema.String
}).annotations({ identifier: "FileDiff" })
export interface FileDiff extends Schema.Schema.Type<typeof FileDiff> {}

/** A staged revert: the message it rewinds to and the file changes it would undo. */
export const RevertState = Schema.Struct({
  messageID: Schema.String.pipe(Schema.startsWith("msg_"), Schema.brand("MessageID")),
  partID: Schema.optional(Schema.String),
  snapshot: Schema.optional(Schema.String),
  diff: Schema.optional(Schema.String),
  files: Schema.optional(Schema.Array(FileDiff))
}).annotations({ identifier: "RevertState" })
export interface RevertState extends Schema.Schema.Type<typeof RevertState> {}

/** The public record of one session. */
export const SessionV2Info = Schema.Struct({
  id: SessionID,
  parentID: Schema.optional(SessionID),
  projectID: Schema.String,
  agent: Schema.optional(Schema.String),
  model: Schema.optional(ModelRef),
  cost: Schema.Number,
  tokens: Tokens,
  time: Time,
  title: Schema.String,
  location: LocationRef,
  subpath: Schema.optional(Schema.String),
  revert: Schema.optional(RevertState)
}).annotations({ identifier: "SessionV2Info" })
export interface SessionV2Info extends Schema.Schema.Type<typeof SessionV2Info> {}
