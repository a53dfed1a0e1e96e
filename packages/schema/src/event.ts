export * as Event from "./event.js"

import { Schema } from "effect"
import { EventID, SessionID } from "./identifier.js"
import { LocationRef } from "./location.js"
import { SessionV2Info } from "./session.js"

/**
 * Where a durable event sits in its aggregate's log: `seq` is gapless per aggregate and starts at 1;
 * `version` is the schema version of the event type.
 */
export const Durable = Schema.Struct({
  aggregateID: Schema.String,
  seq: Schema.Int,
  version: Schema.Int
})
export interface Durable extends Schema.Schema.Type<typeof Durable> {}

/**
 * Builds the envelope schema of one event type: `{id, type, durable?, location?, data}`.
 * Durable events always carry `durable`; live-only events omit it.
 */
export const define = <const Type extends string, Data extends Schema.Struct.Fields>(
  type: Type,
  data: Data,
  identifier: string
) =>
  Schema.Struct({
    id: EventID,
    type: Schema.Literal(type),
    durable: Schema.optional(Durable),
    location: Schema.optional(LocationRef),
    data: Schema.Struct(data)
  }).annotations({ identifier })

/** The first event of every session's log: the session as created. */
export const SessionCreated = define("session.created", { sessionID: SessionID, info: SessionV2Info }, "SessionCreated")
export interface SessionCreated extends Schema.Schema.Type<typeof SessionCreated> {}

/** Every durable event type the log knows how to decode. Later event families join this union. */
export const SessionDurableEvent = Schema.Union(SessionCreated).annotations({ identifier: "SessionDurableEvent" })
export type SessionDurableEvent = Schema.Schema.Type<typeof SessionDurableEvent>
