export * as StepEvent from "./step-event.js"

import type { Identifier } from "@opencode-ai/schema"
import { Clock, Effect } from "effect"
import type { EventLog } from "../event/event-log.js"
import { SessionEvents } from "../session/session-events.js"

/**
 * A durable Session event that a running Step records: its type and its data without the two fields
 * every such event shares (`timestamp`, `sessionID`), which are stamped when it is appended.
 */
export interface StepEvent {
  readonly type: SessionEvents.Type
  readonly data: object
}

/** The data of a durable type, less the `timestamp` and `sessionID` the append stamps. */
export type Data<T extends SessionEvents.Type> = Omit<SessionEvents.DataOf<T>, "timestamp" | "sessionID">

/** A step event of `type`, with its data type-checked against the durable schema. */
export const make = <T extends SessionEvents.Type>(type: T, data: Data<T>): StepEvent => ({ type, data })

/** The draft of `event` for the session's log, stamped with `timestamp`. */
export const draft = (sessionID: Identifier.SessionID, event: StepEvent, timestamp: number): EventLog.Draft =>
  SessionEvents.draft(event.type, { timestamp, sessionID, ...event.data } as unknown as SessionEvents.DataOf<
    typeof event.type
  >)

/**
 * Appends `list` to the session's log as ONE transaction, every event stamped with the same Clock
 * time. The session exists for the whole Step (sessions are never deleted under a running drain), so
 * a failure here is a defect. Appending nothing writes nothing. Once the transaction starts it runs to
 * completion (see SessionEvents.append). `live` (see EventLog.AppendOptions) are deltas published to
 * the LiveBus among these events, in their places, once the transaction has committed.
 */
export const append = (
  events: SessionEvents.Interface,
  sessionID: Identifier.SessionID,
  list: ReadonlyArray<StepEvent>,
  live?: EventLog.AppendOptions["live"]
): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (timestamp) =>
    events.append(
      sessionID,
      list.map((event) => draft(sessionID, event, timestamp)),
      undefined,
      live === undefined || live.length === 0 ? undefined : { live }
    )
  ).pipe(Effect.asVoid, Effect.orDie)
