export * as SessionEvents from "./session-events.js"

/**
 * SessionEvents: the one way to append durable `session.next.*` events to a session's log. Every
 * append runs, in the log's transaction, the session check, then {@link MessageProjection.apply}
 * (messages and the session row), then the caller's own projection (`extra`: an inbox row, a
 * checkpoint advance...). So the event rows, the sequence bump, the projected messages and whatever
 * `extra` writes commit together or not at all, and a reader never sees a message without its event
 * or the other way round.
 */

import type { SqlClient } from "@effect/sql"
import { type Errors, Event, type Identifier } from "@opencode-ai/schema"
import { Context, Effect, Layer } from "effect"
import * as EventLog from "../event/event-log.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import * as KnownSessions from "./known-sessions.js"
import * as MessageProjection from "./message-projection.js"

/** A durable `session.next.*` type. */
export type Type = Event.SessionDurableEvent["type"]

/** The `data` of a durable event type, in its decoded (Type) form. */
export type DataOf<T extends Type> = Extract<Event.SessionDurableEvent, { readonly type: T }>["data"]

/**
 * An event to append, built from typed data: the data is encoded with the type's schema and the
 * draft carries the type's current schema version. Invalid data is a defect (it is the caller's
 * bug, never the user's input).
 */
export const draft = <T extends Type>(type: T, data: DataOf<T>): EventLog.Draft => ({
  type,
  version: Event.durableVersion[type],
  data: MessageProjection.encodeData(type, data)
})

export interface Interface {
  /**
   * Appends `drafts` to the log of `sessionID` in one transaction (see EventLog.append): the session
   * must exist (else SessionNotFoundError and nothing is written), the projected messages and session
   * row are updated, then `extra` runs. A failure of `extra` rolls everything back and is this
   * call's failure; a draft that is not a valid durable `session.next.*` event, or a transition the
   * message projection rejects, is a defect (also rolling back). Resolves with the committed
   * envelopes, which are published to live subscribers only after the commit. Appending nothing
   * writes nothing (and does not check the session).
   *
   * Like EventLog.append it must not run inside another SQL transaction, and once the transaction
   * starts it runs to completion.
   */
  readonly append: <E = never>(
    sessionID: Identifier.SessionID,
    drafts: ReadonlyArray<EventLog.Draft>,
    extra?: EventLog.Projection<E>,
    /** Passed to EventLog.append (e.g. `live`: deltas published among the committed events). */
    options?: EventLog.AppendOptions
  ) => Effect.Effect<ReadonlyArray<EventLog.Envelope>, E | Errors.SessionNotFoundError>
}

/** The session event appender; `yield* SessionEvents.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/SessionEvents")<Service, Interface>() {}

export const layer: Layer.Layer<Service, never, EventLog.Service | KnownSessions.Service> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const log = yield* EventLog.Service
    const known = yield* KnownSessions.Service

    // Untraced, like EventLog.append under it: it runs for every durable event batch.
    const append = Effect.fnUntraced(
      function* <E>(
        sessionID: Identifier.SessionID,
        drafts: ReadonlyArray<EventLog.Draft>,
        extra?: EventLog.Projection<E>,
        options?: EventLog.AppendOptions
      ) {
        const project = (
          committed: ReadonlyArray<EventLog.Envelope>
        ): Effect.Effect<void, E | Errors.SessionNotFoundError, SqlClient.SqlClient> =>
          known
            .ensure(sessionID)
            .pipe(
              Effect.zipRight(MessageProjection.apply(committed)),
              Effect.zipRight(extra === undefined ? Effect.void : extra(committed))
            )
        const foreign = drafts.find((candidate) => !MessageProjection.schemaByType.has(candidate.type))
        if (foreign !== undefined)
          return yield* Effect.dieMessage(`${foreign.type} is not a durable session.next event`)
        return yield* log.append(sessionID, drafts, project, options)
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    return Service.of({ append })
  })
)
