export * as PermissionRequests from "./permission-requests.js"

import { SqlClient, SqlSchema } from "@effect/sql"
import { Errors, Identifier, PermissionRequest, PermissionRule, Quote } from "@opencode-ai/schema"
import { Clock, Context, Deferred, Effect, Layer, Option, Schema } from "effect"
import type { AgentCatalog } from "../config/agent-catalog.js"
import { Config } from "../config/config.js"
import { EventLog } from "../event/event-log.js"
import { LogAnnotation } from "../observability/log-annotation.js"
import { Traced } from "../observability/traced.js"
import { RequestTable } from "../request/request-table.js"
import { Sessions } from "../session/sessions.js"
import { ToolRegistry } from "../tool/tool-registry.js"
import { Permission } from "./permission.js"

/*
 * PermissionRequests: durable asks and saved permissions.
 *
 * An action whose effect (see {@link Permission}) is `ask` becomes a pending request. The request row
 * and its `permission.v2.asked` event commit together; the answer and its `permission.v2.replied`
 * event too. Each request is its own event aggregate (aggregate ID = request ID: asked is seq 1,
 * replied seq 2), so its events never enter a session's log (whose contract holds only
 * `session.next.*`), and EventLog publishes both on the instance LiveBus as they commit, from where
 * `GET /api/event` forwards them.
 *
 *   ask ──► allow ─► the call runs            pending ──once───► the call runs
 *       ──► deny ──► the call fails                   ──always─► saved + the call runs
 *       ──► ask ───► pending ─┐                       ──reject─► the call fails (reply message → model)
 *                             └─ waits (only this call)  interrupt / restart ─► reject
 *
 * Only the asking fiber waits: other calls of the same Step go on. Interrupting the waiting call (the
 * session was interrupted) answers its request `reject` durably before the interruption completes;
 * {@link Interface.rejectPending} also rejects the requests a client created for the session. After
 * the host running a session stopped (a restart, or another host taking the session over),
 * {@link Interface.recover} rejects the requests that its tool calls were waiting on (their calls were
 * failed as stranded); those a client created stay pending.
 *
 * Replying `always` saves the request's `save` patterns (default: its resources) for the session's
 * project, in the reply's transaction, and then answers every other pending request of the session
 * that the saved permissions now allow (with `always`, without saving anything more).
 */

export type Request = PermissionRequest.PermissionV2Request
export type Reply = PermissionRequest.PermissionV2Reply
export type SavedInfo = PermissionRequest.PermissionSavedInfo

/** The rules refuse the action: the message tells the model which action and resource. */
export class PermissionDeniedError extends Schema.TaggedError<PermissionDeniedError>()("PermissionDeniedError", {
  action: Schema.String,
  resource: Schema.String,
  message: Schema.String
}) {}

/** The user (or an interrupt) refused the request; `message` is what the model is told. */
export class PermissionRejectedError extends Schema.TaggedError<PermissionRejectedError>()("PermissionRejectedError", {
  requestID: Schema.String,
  message: Schema.String
}) {}

export interface AskInput {
  readonly sessionID: Identifier.SessionID
  /** The effective agent of the Step that issued the call: its rules are the ones that apply. */
  readonly agent: AgentCatalog.Agent
  readonly action: string
  readonly resources: ReadonlyArray<string>
  readonly save?: ReadonlyArray<string> | undefined
  readonly metadata?: Readonly<Record<string, unknown>> | undefined
  readonly source?: PermissionRequest.PermissionV2Source | undefined
}

export interface CreateInput {
  readonly id?: Identifier.PermissionID | undefined
  readonly action: string
  readonly resources: ReadonlyArray<string>
  readonly save?: ReadonlyArray<string> | undefined
  readonly metadata?: Readonly<Record<string, unknown>> | undefined
  readonly source?: PermissionRequest.PermissionV2Source | undefined
  /** Whose rules apply; default the session's agent (or the default agent). */
  readonly agent?: string | undefined
}

export interface Answer {
  readonly reply: Reply
  /** With `reject`: feedback for the model. */
  readonly message?: string | undefined
}

export interface Interface {
  /**
   * Authorizes `action` on `resources` for a tool call: resolves at once when allowed, fails with
   * PermissionDeniedError when denied, and otherwise creates a pending request and waits for its
   * answer (once/always resolve; reject fails with PermissionRejectedError). Interrupting the wait
   * rejects the request durably.
   */
  readonly ask: (input: AskInput) => Effect.Effect<void, PermissionDeniedError | PermissionRejectedError>
  /**
   * Evaluates a client's request without waiting: `allow` and `deny` create nothing; `ask` creates a
   * pending request. Idempotent by `id` (an existing request of the session is returned as `ask`).
   * Unknown session → SessionNotFoundError; unknown agent, or an `id` of another session's request →
   * InvalidRequestError.
   */
  readonly create: (
    sessionID: Identifier.SessionID,
    input: CreateInput
  ) => Effect.Effect<
    { readonly id: Identifier.PermissionID; readonly effect: Permission.Effect_ },
    Errors.SessionNotFoundError | Errors.InvalidRequestError
  >
  /** The session's pending requests, oldest first. */
  readonly list: (sessionID: Identifier.SessionID) => Effect.Effect<ReadonlyArray<Request>, Errors.SessionNotFoundError>
  /** One pending request of the session; an answered or unknown one is PermissionNotFoundError. */
  readonly get: (
    sessionID: Identifier.SessionID,
    requestID: Identifier.PermissionID
  ) => Effect.Effect<Request, Errors.SessionNotFoundError | Errors.PermissionNotFoundError>
  /** The pending requests of the sessions in a Location (its directory, and workspace when given), oldest first. */
  readonly listIn: (location: {
    readonly directory: string
    readonly workspaceID?: string | undefined
  }) => Effect.Effect<ReadonlyArray<Request>>
  /** Answers a pending request (see the module doc); a request not pending in the session is PermissionNotFoundError. */
  readonly reply: (
    sessionID: Identifier.SessionID,
    requestID: Identifier.PermissionID,
    answer: Answer
  ) => Effect.Effect<void, Errors.SessionNotFoundError | Errors.PermissionNotFoundError>
  /** Rejects every pending request of the session (the session was interrupted). */
  readonly rejectPending: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  /** Saved permissions, of one project when given, oldest first. */
  readonly saved: (projectID?: string) => Effect.Effect<ReadonlyArray<SavedInfo>>
  /** Forgets a saved permission; idempotent. */
  readonly removeSaved: (id: string) => Effect.Effect<void>
  /**
   * After the host that ran the session stopped (see Recovery): rejects the session's pending
   * requests that its tool calls were waiting on (those calls are gone); requests a client created
   * stay pending, and so do those a call of this process waits on. Resolves with how many.
   */
  readonly recover: (sessionID: Identifier.SessionID) => Effect.Effect<number>
  /**
   * The sessions with pending requests that a tool call was waiting on (origin `runner`): those
   * start-up Recovery settles. An indexed read of pending requests only.
   */
  readonly strandedSessions: () => Effect.Effect<ReadonlyArray<Identifier.SessionID>>
}

/** `yield* PermissionRequests.Service` */
export class Service extends Context.Tag("@opencode-ai/core/PermissionRequests")<Service, Interface>() {}

const RequestJson = Schema.parseJson(PermissionRequest.PermissionV2Request)
const RulesetJson = Schema.parseJson(PermissionRule.PermissionV2Ruleset)
const askedData = PermissionRequest.PermissionV2Asked.fields.data
const repliedData = PermissionRequest.PermissionV2Replied.fields.data

/** A pending request as read back: its id, the asking agent's captured rules and the request. */
const PendingRow = Schema.Struct({
  id: Identifier.PermissionID,
  ruleset: RulesetJson,
  info: RequestJson
})
const InfoRow = Schema.Struct({ info: RequestJson })
const SavedRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  action: Schema.String,
  resource: Schema.String
})
const SessionRow = Schema.Struct({ session_id: Identifier.SessionID })

const interruptedMessage = "The permission request was cancelled: the session was interrupted."
const restartedMessage = "The permission request was cancelled: the server restarted while it was pending."

const rejectedMessage = (request: Request, feedback: string | undefined) =>
  feedback === undefined || feedback.trim() === ""
    ? `The user rejected permission for ${request.action} on ${request.resources.join(", ")}. Do not retry it unless the user asks.`
    : `The user rejected permission for ${request.action} on ${request.resources.join(", ")}, with this feedback: ${feedback}`

const deniedMessage = (agent: string, action: string, resource: string) =>
  `Permission denied: the rules of agent "${agent}" do not allow ${action} on ${resource}.`

export const layer: Layer.Layer<
  Service,
  never,
  SqlClient.SqlClient | EventLog.Service | Sessions.Service | Config.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const log = yield* EventLog.Service
    const sessions = yield* Sessions.Service
    const config = yield* Config.Service
    /** The calls of this process waiting for an answer, by request ID. */
    const waiting = new Map<Identifier.PermissionID, Deferred.Deferred<Answer>>()

    // The table's queries. A storage failure or an undecodable row is a defect: this is the one place
    // it becomes one. Each runs inside the caller's transaction when there is one.
    const store = {
      savedRules: SqlSchema.findAll({
        Request: Schema.String,
        Result: Schema.Struct({ action: Schema.String, resource: Schema.String }),
        execute: (projectID) => sql`
          SELECT action, resource FROM permission_saved WHERE project_id = ${projectID} ORDER BY time_created, id`
      }),
      pending: SqlSchema.findAll({
        Request: Identifier.SessionID,
        Result: PendingRow,
        execute: (sessionID) => sql`
          SELECT id, ruleset, info FROM permission_request
          WHERE status = 'pending' AND session_id = ${sessionID} ORDER BY time_created, id`
      }),
      insert: (row: {
        readonly request: Request
        readonly agent: string
        readonly origin: "runner" | "api"
        readonly ruleset: Permission.Ruleset
        readonly now: number
      }) =>
        Effect.all([Schema.encode(RulesetJson)(row.ruleset), Schema.encode(RequestJson)(row.request)]).pipe(
          Effect.flatMap(
            ([ruleset, info]) =>
              sql`INSERT INTO permission_request ${sql.insert({
                id: row.request.id,
                session_id: row.request.sessionID,
                agent: row.agent,
                origin: row.origin,
                ruleset,
                info,
                status: "pending",
                time_created: row.now
              })}`
          )
        ),
      answer: (row: {
        readonly id: Identifier.PermissionID
        readonly sessionID: Identifier.SessionID
        readonly answer: Answer
        readonly now: number
      }) =>
        SqlSchema.findOne({
          Request: Schema.Void,
          Result: InfoRow,
          execute: () => sql`
            UPDATE permission_request
            SET status = ${row.answer.reply}, message = ${row.answer.message ?? null}, time_replied = ${row.now}
            WHERE id = ${row.id} AND session_id = ${row.sessionID} AND status = 'pending'
            RETURNING info`
        })(undefined),
      save: (rows: ReadonlyArray<typeof SavedRow.Type & { readonly time_created: number }>) =>
        sql`INSERT INTO permission_saved ${sql.insert(rows)} ON CONFLICT (project_id, action, resource) DO NOTHING`,
      sessionOf: SqlSchema.findOne({
        Request: Identifier.PermissionID,
        Result: SessionRow,
        execute: (id) => sql`SELECT session_id FROM permission_request WHERE id = ${id}`
      }),
      pendingOne: SqlSchema.findOne({
        Request: Schema.Struct({ sessionID: Identifier.SessionID, requestID: Identifier.PermissionID }),
        Result: InfoRow,
        execute: ({ sessionID, requestID }) => sql`
          SELECT info FROM permission_request
          WHERE id = ${requestID} AND session_id = ${sessionID} AND status = 'pending'`
      }),
      saved: SqlSchema.findAll({
        Request: Schema.UndefinedOr(Schema.String),
        Result: SavedRow,
        execute: (projectID) => sql`
          SELECT id, project_id, action, resource FROM permission_saved
          ${projectID === undefined ? sql.literal("") : sql`WHERE project_id = ${projectID}`}
          ORDER BY time_created, id`
      }),
      removeSaved: (id: string) => sql`DELETE FROM permission_saved WHERE id = ${id}`
    }

    const shared = RequestTable.reads(sql, "permission_request", { Id: Identifier.PermissionID, Info: RequestJson })

    const savedRules = (projectID: string) =>
      store.savedRules(projectID).pipe(Effect.orDie, Effect.map(Permission.fromSaved))

    const projectOf = (sessionID: Identifier.SessionID) =>
      Effect.map(sessions.get(sessionID), (session) => session.projectID)

    const pendingRows = (sessionID: Identifier.SessionID) => store.pending(sessionID).pipe(Effect.orDie)

    /** Commits a new pending request and its `asked` event. */
    const insert = (
      request: Request,
      owner: { readonly agent: string; readonly origin: "runner" | "api"; readonly ruleset: Permission.Ruleset }
    ) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const draft: EventLog.Draft = {
          type: "permission.v2.asked",
          version: 1,
          data: Schema.encodeSync(askedData)(request)
        }
        yield* log.append(request.id, [draft], () =>
          Effect.gen(function* () {
            yield* sessions.get(request.sessionID)
            yield* store.insert({ request, ...owner, now }).pipe(Effect.orDie)
          })
        )
        yield* Effect.logInfo("permission asked", {
          requestID: request.id,
          action: request.action,
          resources: request.resources.length,
          origin: owner.origin
        }).pipe(Effect.annotateLogs({ sessionID: request.sessionID }))
      })

    /**
     * Answers a pending request durably (row and `replied` event in one transaction; with `save`, the
     * saved permissions too), then wakes the call waiting on it. Fails with PermissionNotFoundError,
     * writing nothing, when the request is not pending in that session (lost a race, or unknown).
     */
    const settle = (
      requestID: Identifier.PermissionID,
      sessionID: Identifier.SessionID,
      answer: Answer,
      save: boolean
    ): Effect.Effect<Request, Errors.PermissionNotFoundError> =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        let settled: Request | undefined
        const draft: EventLog.Draft = {
          type: "permission.v2.replied",
          version: 1,
          data: Schema.encodeSync(repliedData)({ sessionID, requestID, reply: answer.reply })
        }
        yield* log.append(requestID, [draft], () =>
          Effect.gen(function* () {
            const row = yield* store.answer({ id: requestID, sessionID, answer, now }).pipe(Effect.orDie)
            if (Option.isNone(row)) return yield* Errors.PermissionNotFoundError.of(requestID)
            const request = row.value.info
            settled = request
            if (!save) return
            const session = yield* sessions.get(sessionID).pipe(Effect.option)
            if (Option.isNone(session)) return
            const patterns = [...new Set(request.save ?? request.resources)]
            if (patterns.length === 0) return
            yield* store
              .save(
                patterns.map((resource) => ({
                  id: Identifier.create("permission", "ascending", now),
                  project_id: session.value.projectID,
                  action: request.action,
                  resource,
                  time_created: now
                }))
              )
              .pipe(Effect.orDie)
          })
        )
        yield* Effect.logInfo("permission replied", { requestID, reply: answer.reply }).pipe(
          Effect.annotateLogs({ sessionID })
        )
        const waiter = waiting.get(requestID)
        if (waiter !== undefined) yield* Deferred.succeed(waiter, answer)
        return settled!
      })

    /** After an `always`: answers the session's other pending requests that the saved permissions now allow. */
    const approveCovered = (sessionID: Identifier.SessionID) =>
      Effect.gen(function* () {
        const saved = yield* savedRules(yield* projectOf(sessionID).pipe(Effect.orDie))
        for (const row of yield* pendingRows(sessionID)) {
          const rules = Permission.merge(row.ruleset, saved)
          if (Permission.decide(rules, row.info.action, row.info.resources).effect !== "allow") continue
          yield* settle(row.id, sessionID, { reply: "always" }, false).pipe(Effect.ignore)
        }
      })

    const newRequest = (
      sessionID: Identifier.SessionID,
      input: Omit<CreateInput, "agent">,
      id?: Identifier.PermissionID
    ): Request => ({
      id: id ?? Identifier.PermissionID.make(Identifier.create("permission", "ascending")),
      sessionID,
      action: input.action,
      resources: [...input.resources],
      ...(input.save !== undefined ? { save: [...input.save] } : {}),
      ...(input.metadata !== undefined ? { metadata: { ...input.metadata } } : {}),
      ...(input.source !== undefined ? { source: input.source } : {})
    })

    const ask = Traced.fn("PermissionRequests.ask")(
      function* (input: AskInput) {
        const sessionID = input.sessionID
        const projectID = yield* projectOf(sessionID).pipe(Effect.orDie)
        const rules = Permission.merge(input.agent.permission, yield* savedRules(projectID))
        const decision = Permission.decide(rules, input.action, input.resources)
        if (decision.effect === "allow") return
        if (decision.effect === "deny") {
          const resource = decision.resource ?? "*"
          return yield* new PermissionDeniedError({
            action: input.action,
            resource,
            message: deniedMessage(input.agent.name, input.action, resource)
          })
        }
        const request = newRequest(sessionID, input)
        const answer = yield* Effect.uninterruptibleMask((restore) =>
          Effect.gen(function* () {
            const deferred = yield* Deferred.make<Answer>()
            waiting.set(request.id, deferred)
            yield* insert(request, { agent: input.agent.name, origin: "runner", ruleset: input.agent.permission }).pipe(
              Effect.orDie
            )
            return yield* restore(Deferred.await(deferred)).pipe(
              // Runs uninterruptibly, before the interruption completes: the request never stays pending.
              Effect.onInterrupt(() =>
                settle(request.id, sessionID, { reply: "reject", message: interruptedMessage }, false).pipe(
                  Effect.ignore
                )
              )
            )
          }).pipe(Effect.ensuring(Effect.sync(() => waiting.delete(request.id))))
        )
        if (answer.reply === "reject") {
          return yield* new PermissionRejectedError({
            requestID: request.id,
            message: rejectedMessage(request, answer.message)
          })
        }
      },
      (effect, input) => LogAnnotation.session(effect, input.sessionID)
    )

    const create = Traced.fn("PermissionRequests.create")(
      function* (sessionID: Identifier.SessionID, input: CreateInput) {
        const session = yield* sessions.get(sessionID)
        if (input.id !== undefined) {
          const existing = yield* store.sessionOf(input.id).pipe(Effect.orDie)
          if (Option.isSome(existing)) {
            if (existing.value.session_id !== sessionID) {
              return yield* new Errors.InvalidRequestError({
                kind: "payload",
                field: "id",
                message: `Permission request ${input.id} belongs to another session`
              })
            }
            return { id: input.id, effect: "ask" as const }
          }
        }
        const agent =
          input.agent !== undefined
            ? config.agent(input.agent)
            : Option.orElse(config.agent(session.agent ?? config.defaultAgent), () => config.agent(config.defaultAgent))
        if (Option.isNone(agent)) {
          return yield* new Errors.InvalidRequestError({
            kind: "payload",
            field: "agent",
            message: `Unknown agent ${Quote.input(input.agent ?? session.agent ?? config.defaultAgent)}`
          })
        }
        const rules = Permission.merge(agent.value.permission, yield* savedRules(session.projectID))
        const decision = Permission.decide(rules, input.action, input.resources)
        const request = newRequest(sessionID, input, input.id)
        if (decision.effect === "ask") {
          yield* insert(request, { agent: agent.value.name, origin: "api", ruleset: agent.value.permission }).pipe(
            Effect.catchTag("SessionNotFoundError", Effect.die)
          )
        }
        return { id: request.id, effect: decision.effect }
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const list = Traced.fn("PermissionRequests.list")(function* (sessionID: Identifier.SessionID) {
      yield* projectOf(sessionID)
      return (yield* pendingRows(sessionID)).map((row) => row.info)
    })

    const get = Traced.fn("PermissionRequests.get")(function* (
      sessionID: Identifier.SessionID,
      requestID: Identifier.PermissionID
    ) {
      yield* projectOf(sessionID)
      const row = yield* store.pendingOne({ sessionID, requestID }).pipe(Effect.orDie)
      if (Option.isNone(row)) return yield* Errors.PermissionNotFoundError.of(requestID)
      return row.value.info
    })

    const listIn = Traced.fn("PermissionRequests.listIn")(function* (location: {
      readonly directory: string
      readonly workspaceID?: string | undefined
    }) {
      const rows = yield* shared.pendingIn(location).pipe(Effect.orDie)
      return rows.map((row) => row.info)
    })

    const reply = Traced.fn("PermissionRequests.reply")(
      function* (sessionID: Identifier.SessionID, requestID: Identifier.PermissionID, answer: Answer) {
        yield* projectOf(sessionID)
        yield* settle(requestID, sessionID, answer, answer.reply === "always")
        if (answer.reply === "always") yield* approveCovered(sessionID)
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const rejectPending = Traced.fn("PermissionRequests.rejectPending")(
      function* (sessionID: Identifier.SessionID) {
        for (const row of yield* pendingRows(sessionID)) {
          yield* settle(row.id, sessionID, { reply: "reject", message: interruptedMessage }, false).pipe(Effect.ignore)
        }
      },
      (effect, sessionID) => LogAnnotation.session(effect, sessionID)
    )

    const saved = Traced.fn("PermissionRequests.saved")(function* (projectID?: string) {
      const rows = yield* store.saved(projectID).pipe(Effect.orDie)
      return rows.map(
        (row): SavedInfo => ({ id: row.id, projectID: row.project_id, action: row.action, resource: row.resource })
      )
    })

    const removeSaved = Traced.fn("PermissionRequests.removeSaved")(function* (id: string) {
      yield* store.removeSaved(id).pipe(Effect.orDie)
    })

    const recover = Traced.fn("PermissionRequests.recover")(function* (sessionID: Identifier.SessionID) {
      const stranded = yield* shared.stranded(sessionID).pipe(Effect.orDie)
      return yield* RequestTable.settleOrphaned(stranded, waiting, (id) =>
        settle(id, sessionID, { reply: "reject", message: restartedMessage }, false)
      )
    })

    const strandedSessions = Traced.fn("PermissionRequests.strandedSessions")(function* () {
      return (yield* shared.strandedSessions(undefined).pipe(Effect.orDie)).map((row) => row.session_id)
    })

    return Service.of({
      ask,
      create,
      list,
      get,
      listIn,
      reply,
      rejectPending,
      saved,
      removeSaved,
      recover,
      strandedSessions
    })
  })
)

/**
 * The `ask` of a tool call's context: authorizes under the issuing Step's agent and records the call
 * as the request's source. Denials and rejections become a ToolFailure the model can read.
 */
export const forCall =
  (
    service: Interface,
    call: {
      readonly sessionID: Identifier.SessionID
      readonly agent: AgentCatalog.Agent
      readonly messageID: Identifier.MessageID
      readonly callID: string
    }
  ) =>
  (request: ToolRegistry.PermissionAsk): Effect.Effect<void, ToolRegistry.ToolFailure> =>
    service
      .ask({
        sessionID: call.sessionID,
        agent: call.agent,
        action: request.action,
        resources: request.resources,
        save: request.save,
        metadata: request.metadata,
        source: { type: "tool", messageID: call.messageID, callID: call.callID }
      })
      .pipe(Effect.mapError((error) => new ToolRegistry.ToolFailure({ message: error.message })))

/** The ids of every permission request (any status) of the given sessions (see RequestTable.idsOfSessions). */
export const idsOfSessions = RequestTable.idsOfSessions("permission_request", Identifier.PermissionID)
