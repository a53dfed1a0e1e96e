export * as SessionExecution from "./session-execution.js"

import { HttpApiEndpoint, OpenApi } from "@effect/platform"
import { Errors, Identifier, SessionActivity } from "@opencode-ai/schema"
import { Schema } from "effect"

const SessionPath = Schema.Struct({ sessionID: Identifier.SessionID })

/** `{data: {<sessionID>: {type: "running"}}}`: sessions absent from the record are idle. */
export const ActiveResponse = Schema.Struct({
  data: Schema.Record({ key: Identifier.SessionID, value: SessionActivity.SessionActive }).annotations({
    // Effect renders a refined record key as `propertyNames`; the contract says `patternProperties`.
    jsonSchema: {
      type: "object",
      patternProperties: {
        "^ses": {
          type: "object",
          properties: { type: { type: "string", enum: ["running"] } },
          required: ["type"],
          additionalProperties: false
        }
      }
    }
  })
})

/** `GET /api/session/active`: a snapshot of this process's foreground drain registry. */
export const active = HttpApiEndpoint.get("active", "/api/session/active")
  .addSuccess(ActiveResponse)
  .annotate(OpenApi.Identifier, "v2.session.active")
  .annotate(OpenApi.Summary, "List running sessions")
  .annotate(OpenApi.Description, "A snapshot of the sessions this process is running now.")

/**
 * `POST /api/session/{sessionID}/interrupt`: stops the running Step (provider stream and tools;
 * partial output is kept) and answers 204 once it has settled. Idempotent: an idle session is 204 too.
 */
export const interrupt = HttpApiEndpoint.post("interrupt", "/api/session/:sessionID/interrupt")
  .setPath(SessionPath)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.interrupt")
  .annotate(OpenApi.Summary, "Interrupt a session")
  .annotate(
    OpenApi.Description,
    "Stops the running Step (the provider stream and its tools; partial output is kept) and answers 204 once it has settled. Idempotent: an idle session answers 204 too."
  )

/** `POST /api/session/{sessionID}/wait`: answers 204 once the session is idle (at once when it already is). */
export const wait = HttpApiEndpoint.post("wait", "/api/session/:sessionID/wait")
  .setPath(SessionPath)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .addError(Errors.ServiceUnavailableError, { status: 503 })
  .annotate(OpenApi.Identifier, "v2.session.wait")
  .annotate(OpenApi.Summary, "Wait for a session to settle")
  .annotate(OpenApi.Description, "Answers 204 once the session is idle, at once when it already is.")

/**
 * `POST /api/session/{sessionID}/compact`: asks for the session's history to be compacted (replaced
 * by a summary). Answers 204 once the request is recorded: the session's drain runs the compaction
 * at its next Safe Step Boundary, or at once when the session is idle (`wait` resolves after it).
 * Idempotent while a requested compaction is waiting or running. Upstream answers 503 here; this
 * server compacts.
 */
export const compact = HttpApiEndpoint.post("compact", "/api/session/:sessionID/compact")
  .setPath(SessionPath)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .addError(Errors.ServiceUnavailableError, { status: 503 })
  .annotate(OpenApi.Identifier, "v2.session.compact")
  .annotate(OpenApi.Summary, "Compact a session")
  .annotate(
    OpenApi.Description,
    "Asks for a compaction: the older history is replaced by a summary in what the model sees, at the next Step boundary or at once when the session is idle. Answers 204; asking again while one is pending changes nothing."
  )
