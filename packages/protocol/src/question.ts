export * as QuestionGroup from "./question.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Errors, Identifier, Location, QuestionRequest } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { documentLocationQuery, LocationQuery } from "./location.js"

export const SessionPath = Schema.Struct({ sessionID: Identifier.SessionID })
export const RequestPath = Schema.Struct({ sessionID: Identifier.SessionID, requestID: Identifier.QuestionID })

/** `GET /api/question/request`: the pending questions of the sessions in the Location (default: the instance's). */
export const listRequests = HttpApiEndpoint.get("listRequests", "/api/question/request")
  .setUrlParams(LocationQuery)
  .addSuccess(Schema.Struct({ location: Location.LocationInfo, data: Schema.Array(QuestionRequest.QuestionV2Request) }))
  .annotate(OpenApi.Identifier, "v2.question.request.list")
  .annotate(OpenApi.Summary, "List pending questions")
  .annotate(
    OpenApi.Description,
    "The pending questions of the sessions in the requested Location (default: the instance's)."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/** `GET /api/session/{sessionID}/question`: the session's pending questions, oldest first. */
export const list = HttpApiEndpoint.get("list", "/api/session/:sessionID/question")
  .setPath(SessionPath)
  .addSuccess(Schema.Struct({ data: Schema.Array(QuestionRequest.QuestionV2Request) }))
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.question.list")
  .annotate(OpenApi.Summary, "List a session's questions")
  .annotate(OpenApi.Description, "The session's questions waiting for an answer, oldest first.")

/**
 * `POST /api/session/{sessionID}/question/{requestID}/reply` (204): answers a pending question (one
 * answer per question, in order); the asking tool call returns the answers to the model. A request
 * that is not pending (unknown, or already answered) is a 404.
 */
export const reply = HttpApiEndpoint.post("reply", "/api/session/:sessionID/question/:requestID/reply")
  .setPath(RequestPath)
  .setPayload(QuestionRequest.QuestionV2Reply)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.QuestionNotFoundError, { status: 404 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.question.reply")
  .annotate(OpenApi.Summary, "Answer a question")
  .annotate(
    OpenApi.Description,
    "Answers a pending question, one answer per question asked, in order; the asking tool call returns the answers to the model. A request that is not pending is a 404."
  )

/**
 * `POST /api/session/{sessionID}/question/{requestID}/reject` (204): dismisses a pending question;
 * the asking tool call fails with a message the model reads. Not pending → 404.
 */
export const reject = HttpApiEndpoint.post("reject", "/api/session/:sessionID/question/:requestID/reject")
  .setPath(RequestPath)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.QuestionNotFoundError, { status: 404 })
  .addError(Errors.SessionNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.session.question.reject")
  .annotate(OpenApi.Summary, "Dismiss a question")
  .annotate(
    OpenApi.Description,
    "Dismisses a pending question; the asking tool call fails with a message the model reads. A request that is not pending is a 404."
  )

export const group = HttpApiGroup.make("questions")
  .add(listRequests)
  .add(list)
  .add(reply)
  .add(reject)
  .annotate(OpenApi.Title, "session questions")
  .annotate(ClientProjection.Namespace, "questions")
