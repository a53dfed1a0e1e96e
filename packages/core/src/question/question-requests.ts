export * as QuestionRequests from "./question-requests.js"

import { SqlClient, SqlSchema } from "@effect/sql"
import { Errors, Identifier, QuestionRequest } from "@opencode-ai/schema"
import { Clock, Context, Deferred, Effect, Layer, Option, Schema } from "effect"
import { EventLog } from "../event/event-log.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { RequestTable } from "../request/request-table.js"
import { KnownSessions } from "../session/known-sessions.js"

/*
 * QuestionRequests: the durable questions of the `question` tool, shaped like PermissionRequests.
 *
 * Each request is its own event aggregate (aggregate ID = request ID): `question.v2.asked` is seq 1,
 * `question.v2.replied` or `question.v2.rejected` seq 2. The row and its event commit together, and
 * EventLog publishes the events on the instance LiveBus as they commit.
 *
 *   ask ─► pending ──reply──► the asking call returns the answers
 *                  ──reject─► the asking call fails (a readable ToolFailure)
 *                  interrupt / restart ─► rejected
 *
 * Only the asking fiber waits. Interrupting it rejects its request durably before the interruption
 * completes; {@link Interface.rejectPending} rejects whatever else the session has pending, and after a
 * the host running a session stopped {@link Interface.recover} rejects the requests its calls waited on.
 */

export type Request = QuestionRequest.QuestionV2Request
export type Answers = ReadonlyArray<ReadonlyArray<string>>

/** The question was rejected (by the user, an interrupt or a restart); `message` is what the model is told. */
export class QuestionRejectedError extends Schema.TaggedError<QuestionRejectedError>()("QuestionRejectedError", {
  requestID: Schema.String,
  message: Schema.String
}) {}

export interface AskInput {
  readonly sessionID: Identifier.SessionID
  readonly questions: ReadonlyArray<QuestionRequest.QuestionV2Info>
  readonly tool?: QuestionRequest.QuestionV2Tool | undefined
}

export interface Interface {
  /** Creates a pending request and waits for its answers; a rejection fails with QuestionRejectedError. */
  readonly ask: (input: AskInput) => Effect.Effect<Answers, QuestionRejectedError | Errors.SessionNotFoundError>
  /** The session's pending requests, oldest first. */
  readonly list: (sessionID: Identifier.SessionID) => Effect.Effect<ReadonlyArray<Request>, Errors.SessionNotFoundError>
  /** The pending requests of the sessions in a Location (its directory, and workspace when given), oldest first. */
  readonly listIn: (location: {
    readonly directory: string
    readonly workspaceID?: string | undefined
  }) => Effect.Effect<ReadonlyArray<Request>>
  /** Answers a pending request; one not pending in the session is QuestionNotFoundError. */
  readonly reply: (
    sessionID: Identifier.SessionID,
    requestID: Identifier.QuestionID,
    answers: Answers
  ) => Effect.Effect<void, Errors.SessionNotFoundError | Errors.QuestionNotFoundError>
  /** Rejects a pending request; one not pending in the session is QuestionNotFoundError. */
  readonly reject: (
    sessionID: Identifier.SessionID,
    requestID: Identifier.QuestionID
  ) => Effect.Effect<void, Errors.SessionNotFoundError | Errors.QuestionNotFoundError>
  /** Rejects every pending request of the session (the session was interrupted). */
  readonly rejectPending: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  /**
   * After the host that ran the session stopped (see Recovery): rejects the session's pending
   * requests that no call of this process waits on. Resolves with how many.
   */
  readonly recover: (sessionID: Identifier.SessionID) => Effect.Effect<number>
  /** The sessions with pending requests a tool call was waiting on: those start-up Recovery settles. */
  readonly strandedSessions: () => Effect.Effect<ReadonlyArray<Identifier.SessionID>>
}

/** `yield* QuestionRequests.Service` */
export class Service extends Context.Tag("@opencode-ai/core/QuestionRequests")<Service, Interface>() {}

const RequestJson = Schema.parseJson(QuestionRequest.QuestionV2Request)
const AnswersJson = Schema.parseJson(Schema.Array(QuestionRequest.QuestionV2Answer))
const askedData = QuestionRequest.QuestionV2Asked.fields.data
const repliedData = QuestionRequest.QuestionV2Replied.fields.data
const rejectedData = QuestionRequest.QuestionV2Rejected.fields.data

type Outcome =
  | { readonly _tag: "replied"; readonly answers: Answers }
  | { readonly _tag: "rejected"; readonly message: string }

export const rejectedMessage =
  "The user dismissed the question without answering. Do not ask it again unless the user asks."
export const interruptedMessage = "The question was cancelled: the session was interrupted."
export const restartedMessage = "The question was cancelled: the server restarted while it was pending."

export const layer: Layer.Layer<Service, never, SqlClient.SqlClient | EventLog.Service | KnownSessions.Service> =
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const log = yield* EventLog.Service
      const known = yield* KnownSessions.Service
      /** The calls of this process waiting for an answer, by request ID. */
      const waiting = new Map<Identifier.QuestionID, Deferred.Deferred<Outcome>>()

      // The table's queries. A storage failure or an undecodable row is a defect: this is the one place
      // it becomes one. Each runs inside the caller's transaction when there is one.
      const store = {
        pending: SqlSchema.findAll({
          Request: Identifier.SessionID,
          Result: Schema.Struct({ id: Identifier.QuestionID, info: RequestJson }),
          execute: (sessionID) => sql`
          SELECT id, info FROM question_request
          WHERE status = 'pending' AND session_id = ${sessionID} ORDER BY time_created, id`
        }),
        insert: (request: Request, now: number) =>
          Schema.encode(RequestJson)(request).pipe(
            Effect.flatMap(
              (info) =>
                sql`INSERT INTO question_request ${sql.insert({
                  id: request.id,
                  session_id: request.sessionID,
                  origin: "runner",
                  info,
                  status: "pending",
                  time_created: now
                })}`
            )
          ),
        settle: (row: {
          readonly id: Identifier.QuestionID
          readonly sessionID: Identifier.SessionID
          readonly outcome: Outcome
          readonly now: number
        }) =>
          Effect.flatMap(
            row.outcome._tag === "replied" ? Schema.encode(AnswersJson)(row.outcome.answers) : Effect.succeed(null),
            (answers) =>
              SqlSchema.findOne({
                Request: Schema.Void,
                Result: Schema.Struct({ id: Identifier.QuestionID }),
                execute: () => sql`
                UPDATE question_request
                SET status = ${row.outcome._tag}, answers = ${answers},
                    message = ${row.outcome._tag === "rejected" ? row.outcome.message : null}, time_replied = ${row.now}
                WHERE id = ${row.id} AND session_id = ${row.sessionID} AND status = 'pending'
                RETURNING id`
              })(undefined)
          )
      }

      const shared = RequestTable.reads(sql, "question_request", { Id: Identifier.QuestionID, Info: RequestJson })

      const pendingRows = (sessionID: Identifier.SessionID) => store.pending(sessionID).pipe(Effect.orDie)

      const insert = (request: Request) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const draft: EventLog.Draft = {
            type: "question.v2.asked",
            version: 1,
            data: Schema.encodeSync(askedData)(request)
          }
          yield* log.append(request.id, [draft], () =>
            Effect.zipRight(known.ensure(request.sessionID), store.insert(request, now).pipe(Effect.orDie))
          )
          yield* Effect.logInfo("question asked", { requestID: request.id }).pipe(
            Effect.annotateLogs({ sessionID: request.sessionID })
          )
        })

      /**
       * Settles a pending request durably (row and event in one transaction), then wakes the call waiting
       * on it. QuestionNotFoundError, writing nothing, when it is not pending in that session.
       */
      const settle = (requestID: Identifier.QuestionID, sessionID: Identifier.SessionID, outcome: Outcome) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const draft: EventLog.Draft =
            outcome._tag === "replied"
              ? {
                  type: "question.v2.replied",
                  version: 1,
                  data: Schema.encodeSync(repliedData)({
                    sessionID,
                    requestID,
                    answers: outcome.answers.map((answer) => [...answer])
                  })
                }
              : {
                  type: "question.v2.rejected",
                  version: 1,
                  data: Schema.encodeSync(rejectedData)({ sessionID, requestID })
                }
          yield* log.append(requestID, [draft], () =>
            Effect.gen(function* () {
              const row = yield* store.settle({ id: requestID, sessionID, outcome, now }).pipe(Effect.orDie)
              if (Option.isNone(row)) return yield* Errors.QuestionNotFoundError.of(requestID)
            })
          )
          yield* Effect.logInfo(`question ${outcome._tag}`, { requestID }).pipe(Effect.annotateLogs({ sessionID }))
          const waiter = waiting.get(requestID)
          if (waiter !== undefined) yield* Deferred.succeed(waiter, outcome)
        })

      const ask = Traced.fn("QuestionRequests.ask")(
        function* (input: AskInput) {
          const sessionID = input.sessionID
          const request: Request = {
            id: Identifier.QuestionID.make(Identifier.create("question", "ascending")),
            sessionID,
            questions: input.questions.map((question) => ({ ...question, options: [...question.options] })),
            ...(input.tool !== undefined ? { tool: input.tool } : {})
          }
          const outcome = yield* Effect.uninterruptibleMask((restore) =>
            Effect.gen(function* () {
              const deferred = yield* Deferred.make<Outcome>()
              waiting.set(request.id, deferred)
              yield* insert(request)
              return yield* restore(Deferred.await(deferred)).pipe(
                // Runs before the interruption completes: the request never stays pending.
                Effect.onInterrupt(() =>
                  settle(request.id, sessionID, { _tag: "rejected", message: interruptedMessage }).pipe(Effect.ignore)
                )
              )
            }).pipe(Effect.ensuring(Effect.sync(() => waiting.delete(request.id))))
          )
          if (outcome._tag === "rejected") {
            return yield* new QuestionRejectedError({ requestID: request.id, message: outcome.message })
          }
          return outcome.answers
        },
        (effect, input) => LogAnnotation.session(effect, input.sessionID)
      )

      const list = Traced.fn("QuestionRequests.list")(function* (sessionID: Identifier.SessionID) {
        yield* known.ensure(sessionID)
        return (yield* pendingRows(sessionID)).map((row) => row.info)
      })

      const listIn = Traced.fn("QuestionRequests.listIn")(function* (location: {
        readonly directory: string
        readonly workspaceID?: string | undefined
      }) {
        const rows = yield* shared.pendingIn(location).pipe(Effect.orDie)
        return rows.map((row) => row.info)
      })

      const reply = Traced.fn("QuestionRequests.reply")(
        function* (sessionID: Identifier.SessionID, requestID: Identifier.QuestionID, answers: Answers) {
          yield* known.ensure(sessionID)
          yield* settle(requestID, sessionID, { _tag: "replied", answers })
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      const reject = Traced.fn("QuestionRequests.reject")(
        function* (sessionID: Identifier.SessionID, requestID: Identifier.QuestionID) {
          yield* known.ensure(sessionID)
          yield* settle(requestID, sessionID, { _tag: "rejected", message: rejectedMessage })
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      const rejectPending = Traced.fn("QuestionRequests.rejectPending")(
        function* (sessionID: Identifier.SessionID) {
          for (const row of yield* pendingRows(sessionID)) {
            yield* settle(row.id, sessionID, { _tag: "rejected", message: interruptedMessage }).pipe(Effect.ignore)
          }
        },
        (effect, sessionID) => LogAnnotation.session(effect, sessionID)
      )

      const recover = Traced.fn("QuestionRequests.recover")(function* (sessionID: Identifier.SessionID) {
        const stranded = yield* shared.stranded(sessionID).pipe(Effect.orDie)
        return yield* RequestTable.settleOrphaned(stranded, waiting, (id) =>
          settle(id, sessionID, { _tag: "rejected", message: restartedMessage })
        )
      })

      const strandedSessions = Traced.fn("QuestionRequests.strandedSessions")(function* () {
        return (yield* shared.strandedSessions(undefined).pipe(Effect.orDie)).map((row) => row.session_id)
      })

      return Service.of({ ask, list, listIn, reply, reject, rejectPending, recover, strandedSessions })
    })
  )

/** The ids of every question request (any status) of the given sessions (see RequestTable.idsOfSessions). */
export const idsOfSessions = RequestTable.idsOfSessions("question_request", Identifier.QuestionID)
