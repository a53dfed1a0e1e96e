export * as SessionMoveApi from "./session-move.js"

import { HttpApiEndpoint, OpenApi } from "@effect/platform"
import { Errors, Identifier, Location, Session } from "@opencode-ai/schema"
import { Schema } from "effect"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const SessionPath = Schema.Struct({ sessionID: Identifier.SessionID })

/** `{location}`: the Location the session continues in. */
export const MovePayload = Schema.Struct({ location: Location.LocationRef }).annotations(strict)
export interface MovePayload extends Schema.Schema.Type<typeof MovePayload> {}

/**
 * `POST /api/session/{sessionID}/move` (an extension of the upstream contract): the session continues
 * in `location` and answers with the moved session. Its instructions are reset, so the next Step
 * starts from a complete baseline of the destination (its AGENTS.md, skills and references). A
 * directory that does not exist is a 400 InvalidRequestError; a running session, or one with a staged
 * revert, a 409 ConflictError.
 */
export const move = HttpApiEndpoint.post("move", "/api/session/:sessionID/move")
  .setPath(SessionPath)
  .setPayload(MovePayload)
  .addSuccess(Schema.Struct({ data: Session.SessionV2Info }))
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .addError(Errors.ConflictError, { status: 409 })
  .annotate(OpenApi.Identifier, "v2.session.move")
  .annotate(OpenApi.Summary, "Move a session")
  .annotate(
    OpenApi.Description,
    "Extension. Moves the session to another Location; its next Step starts from a complete instruction baseline of the destination. A conflict while the session runs."
  )
