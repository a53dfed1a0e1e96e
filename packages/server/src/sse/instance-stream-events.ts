export * as InstanceStreamEvents from "./instance-stream-events.js"

import { type LiveBus, Sessions } from "@opencode-ai/core"
import { Identifier, InstanceEvent, LegacySession, type Location, type Session } from "@opencode-ai/schema"
import { Effect, Option, Schema } from "effect"
import { ServerVersion } from "../server-version.js"

/*
 * What `GET /api/event` shows of each LiveBus envelope, so that every event it sends is a member of
 * the contract's `V2Event` union:
 *
 *   session.created (v2 record, log origin) ─► session.created with the v1 record
 *   session.deleted (v2 record, live only) ──► session.deleted with the v1 record
 *   session.next.title.updated ─┐
 *   session.next.usage.recorded ┴──────────► session.updated with the session's v1 record as now
 *   any other type V2Event declares ───────► itself
 *   anything else ─────────────────────────► nothing (stays in process)
 *
 * and each event about a session (its data names a `sessionID`) gets the session's `location`.
 */

/** The types the stream forwards unchanged: what the contract's `V2Event` declares. */
const v2Types: ReadonlySet<string> = new Set(InstanceEvent.V2Event.members.map((m) => m.fields.type.literals[0]))

/** Durable extension events a client learns about as the session's new record. */
const updatesSession: ReadonlySet<string> = new Set(["session.next.title.updated", "session.next.usage.recorded"])

const isSessionID = Schema.is(Identifier.SessionID)

/** The session an envelope is about: its data's `sessionID`, when that is a session ID. */
const sessionIDOf = (data: unknown): Identifier.SessionID | undefined => {
  const id =
    typeof data === "object" && data !== null ? (data as { readonly sessionID?: unknown }).sessionID : undefined
  return isSessionID(id) ? id : undefined
}

const refOf = (location: Location.LocationRef): Location.LocationRef =>
  location.workspaceID === undefined
    ? { directory: location.directory }
    : { directory: location.directory, workspaceID: location.workspaceID }

/**
 * One subscriber's view. It remembers each session's Location (from `session.created`,
 * `session.deleted`, `session.next.moved`, or else the session's record) for the life of the stream, so a burst of
 * deltas costs one lookup. An envelope about a session that no longer exists goes without `location`.
 */
export const make = Effect.gen(function* () {
  const sessions = yield* Sessions.Service
  const locations = new Map<string, Location.LocationRef>()

  const locate = (sessionID: Identifier.SessionID): Effect.Effect<Option.Option<Location.LocationRef>> => {
    const known = locations.get(sessionID)
    if (known !== undefined) return Effect.succeed(Option.some(known))
    return sessions.get(sessionID).pipe(
      Effect.map((info) => {
        const ref = refOf(info.location)
        locations.set(sessionID, ref)
        return Option.some(ref)
      }),
      Effect.catchTag("SessionNotFoundError", () => Effect.succeed(Option.none()))
    )
  }

  const updated = (envelope: LiveBus.Envelope, sessionID: Identifier.SessionID) =>
    sessions.get(sessionID).pipe(
      Effect.map((info) =>
        Option.some<LiveBus.Envelope>({
          id: envelope.id,
          type: "session.updated",
          data: { sessionID, info: LegacySession.fromV2(info, ServerVersion.current) }
        })
      ),
      Effect.catchTag("SessionNotFoundError", () => Effect.succeed(Option.none<LiveBus.Envelope>()))
    )

  /** The event the stream sends for `envelope`, if any, with its session's `location`. */
  return (envelope: LiveBus.Envelope): Effect.Effect<Option.Option<LiveBus.Envelope>> =>
    Effect.gen(function* () {
      const sessionID = sessionIDOf(envelope.data)
      let shown: Option.Option<LiveBus.Envelope>
      if ((envelope.type === "session.created" || envelope.type === "session.deleted") && sessionID !== undefined) {
        const info = (envelope.data as { readonly info: Session.SessionV2Info }).info
        locations.set(sessionID, refOf(info.location))
        shown = Option.some({
          ...envelope,
          data: { sessionID, info: LegacySession.fromV2(info, ServerVersion.current) }
        })
      } else if (updatesSession.has(envelope.type) && sessionID !== undefined) {
        shown = yield* updated(envelope, sessionID)
      } else if (v2Types.has(envelope.type)) {
        if (envelope.type === "session.next.moved" && sessionID !== undefined) {
          locations.set(sessionID, refOf((envelope.data as { readonly location: Location.LocationRef }).location))
        }
        shown = Option.some(envelope)
      } else shown = Option.none()
      if (Option.isNone(shown) || sessionID === undefined) return shown
      const location = yield* locate(sessionID)
      return Option.isSome(location) ? Option.some({ ...shown.value, location: location.value }) : shown
    })
})
