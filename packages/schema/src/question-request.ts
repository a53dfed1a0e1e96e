export * as QuestionRequest from "./question-request.js"

import { Schema } from "effect"
import { define } from "./event.js"
import { QuestionID, SessionID } from "./identifier.js"

/**
 * Question requests: the `question` tool asks the user one or more questions and waits for the
 * answers. A request is pending until it is replied (one answer, a list of chosen labels, per
 * question) or rejected; interrupting its session, or a restart, rejects it.
 *
 *   pending ──reply──► the call returns the answers to the model
 *           ──reject─► the call fails (also: session interrupted, process restarted)
 */

/** One choice offered for a question. */
export const QuestionV2Option = Schema.Struct({
  label: Schema.String,
  description: Schema.String
}).annotations({ identifier: "QuestionV2Option" })
export interface QuestionV2Option extends Schema.Schema.Type<typeof QuestionV2Option> {}

/** One question: its text, a short header, its options; `multiple` allows several choices, `custom` a typed answer. */
export const QuestionV2Info = Schema.Struct({
  question: Schema.String,
  header: Schema.String,
  options: Schema.Array(QuestionV2Option),
  multiple: Schema.optional(Schema.Boolean),
  custom: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "QuestionV2Info" })
export interface QuestionV2Info extends Schema.Schema.Type<typeof QuestionV2Info> {}

/** The tool call that asked (`messageID` is the assistant message). */
export const QuestionV2Tool = Schema.Struct({
  messageID: Schema.String,
  callID: Schema.String
}).annotations({ identifier: "QuestionV2Tool" })
export interface QuestionV2Tool extends Schema.Schema.Type<typeof QuestionV2Tool> {}

/** A pending request. */
export const QuestionV2Request = Schema.Struct({
  id: QuestionID,
  sessionID: SessionID,
  questions: Schema.Array(QuestionV2Info),
  tool: Schema.optional(QuestionV2Tool)
}).annotations({ identifier: "QuestionV2Request" })
export interface QuestionV2Request extends Schema.Schema.Type<typeof QuestionV2Request> {}

/** The answer to one question: the chosen labels (or typed text). */
export const QuestionV2Answer = Schema.Array(Schema.String).annotations({ identifier: "QuestionV2Answer" })
export type QuestionV2Answer = typeof QuestionV2Answer.Type

/** `POST …/question/{requestID}/reply`: one answer per question, in the questions' order. */
export const QuestionV2Reply = Schema.Struct({
  answers: Schema.Array(QuestionV2Answer)
}).annotations({ identifier: "QuestionV2Reply", parseOptions: { onExcessProperty: "error" } })
export interface QuestionV2Reply extends Schema.Schema.Type<typeof QuestionV2Reply> {}

/** A request was created (seq 1 of the request's own aggregate, `durable.aggregateID` = request ID). */
export const QuestionV2Asked = define(
  "question.v2.asked",
  {
    id: QuestionID,
    sessionID: SessionID,
    questions: Schema.Array(QuestionV2Info),
    tool: Schema.optional(QuestionV2Tool)
  },
  "QuestionV2Asked"
)
export interface QuestionV2Asked extends Schema.Schema.Type<typeof QuestionV2Asked> {}

/** A request was answered (seq 2 of its aggregate). */
export const QuestionV2Replied = define(
  "question.v2.replied",
  { sessionID: SessionID, requestID: QuestionID, answers: Schema.Array(QuestionV2Answer) },
  "QuestionV2Replied"
)
export interface QuestionV2Replied extends Schema.Schema.Type<typeof QuestionV2Replied> {}

/** A request was rejected (seq 2 of its aggregate): by the user, an interrupt or a restart. */
export const QuestionV2Rejected = define(
  "question.v2.rejected",
  { sessionID: SessionID, requestID: QuestionID },
  "QuestionV2Rejected"
)
export interface QuestionV2Rejected extends Schema.Schema.Type<typeof QuestionV2Rejected> {}
