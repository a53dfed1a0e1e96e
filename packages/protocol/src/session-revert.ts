export * as SessionRevertApi from "./session-revert.js"

import { HttpApiEndpoint, OpenApi } from "@effect/platform"
import { Errors, Identifier, Session } from "@opencode-ai/schema"
import { Schema } from "effect"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const SessionPath = Schema.Struct({ sessionID: Identifier.SessionID })

/** `{messageID, files?}`: the message to go back to, and whether to restore the files too. */
export const StagePayload = Schema.Struct({
  messageID: Identifier.SessionMessageID,
  files: Schema.optional(Schema.Boolean)
}).annotations(strict)
export interface StagePayload extends Schema.Schema.Type<typeof StagePayload> {}

/**
 * `POST /api/session/{sessionID}/revert/stage`: stages a revert to the state before `messageID` (that
 * message and everything after it) and answers with the RevertState; with `files: true` the files the
 * reverted Steps changed are restored now, and `files` lists each change made. Staging again replaces
 * the staged revert. A message that does not exist, belongs to another session or was reverted is a
 * 404 MessageNotFoundError; a running session (or one with input waiting to run) a 409 ConflictError.
 */
export const stage = HttpApiEndpoint.post("revertStage", "/api/session/:sessionID/revert/stage")
  .setPath(SessionPath)
  .setPayload(StagePayload)
  .addSuccess(Schema.Struct({ data: Session.RevertState }))
  .addError(Errors.MessageNotFoundError, { status: 404 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .addError(Errors.ConflictError, { status: 409 })
  .addError(Errors.UnknownError, { status: 500 })
  .annotate(OpenApi.Identifier, "v2.session.revert.stage")
  .annotate(OpenApi.Summary, "Stage a revert")
  .annotate(
    OpenApi.Description,
    "Goes back to before a message: the reverted part is hidden from what the model sees next, and with `files` the files its Steps changed are restored now. Answers the staged revert with every file change."
  )

/**
 * `POST /api/session/{sessionID}/revert/clear`: undoes the staged revert, restored files included
 * (204). Nothing staged, or a running session, is a 409 ConflictError.
 */
export const clear = HttpApiEndpoint.post("revertClear", "/api/session/:sessionID/revert/clear")
  .setPath(SessionPath)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .addError(Errors.ConflictError, { status: 409 })
  .addError(Errors.UnknownError, { status: 500 })
  .annotate(OpenApi.Identifier, "v2.session.revert.clear")
  .annotate(OpenApi.Summary, "Clear a staged revert")
  .annotate(OpenApi.Description, "Undoes the staged revert, files included.")

/**
 * `POST /api/session/{sessionID}/revert/commit`: commits the staged revert (204): the reverted
 * messages leave the active history (the log keeps them) and the instructions start from a fresh
 * baseline. Nothing staged, or a running session, is a 409 ConflictError.
 */
export const commit = HttpApiEndpoint.post("revertCommit", "/api/session/:sessionID/revert/commit")
  .setPath(SessionPath)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .addError(Errors.ConflictError, { status: 409 })
  .annotate(OpenApi.Identifier, "v2.session.revert.commit")
  .annotate(OpenApi.Summary, "Commit a staged revert")
  .annotate(
    OpenApi.Description,
    "Makes the staged revert final: the reverted messages leave what the model sees, and the instructions start again from a fresh baseline. The durable log keeps everything."
  )
