export * as ContextUpdated from "./context-updated.js"

/**
 * The durable `session.next.context.updated` event: one admitted Instruction Update. `text` is the
 * exact combined rendering told to the model (it is replayed verbatim, never re-rendered), and
 * `messageID` names the chronological system message it becomes in Session History. It is appended
 * only by InstructionCheckpoint.prepare, in the same transaction that advances Applied Instructions.
 * The schema is the public one from `@opencode-ai/schema`.
 */

import { Event } from "@opencode-ai/schema"
import type { Schema } from "effect"

export const Envelope = Event.SessionNextContextUpdated
export type Envelope = Event.SessionNextContextUpdated

export const type = "session.next.context.updated"

/** The schema version of {@link type}. */
export const version = Event.durableVersion[type]

export const Data = Envelope.fields.data
export interface Data extends Schema.Schema.Type<typeof Data> {}
