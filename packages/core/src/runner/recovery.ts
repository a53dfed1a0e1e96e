export * as Recovery from "./recovery.js"

import type { SqlClient } from "@effect/sql"
import type { Identifier } from "@opencode-ai/schema"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { EventLog } from "../event/event-log.js"
import * as SessionInput from "../input/session-input.js"
import { Traced } from "../observability/traced.js"
import { PermissionRequests } from "../permission/permission-requests.js"
import { QuestionRequests } from "../question/question-requests.js"
import { MessageProjection } from "../session/message-projection.js"
import { SessionEvents } from "../session/session-events.js"
import * as Sessions from "../session/sessions.js"
import { SessionLeases } from "./session-leases.js"

/** What a startup Recovery found and settled. */
export interface Report {
  /** Steps that had begun but never settled, now failed. */
  readonly stranded: number
  /** Tool calls left pending or running, now failed. */
  readonly tools: number
  /** Permission and question requests that a stopped call was waiting on, now rejected. */
  readonly requests: number
  /**
   * Sessions with admitted prompts still waiting for promotion, or whose drain stopped with more to
   * do ({@link continues}): the caller resumes them.
   */
  readonly pending: ReadonlyArray<Identifier.SessionID>
}

export const strandedMessage = "The runtime stopped while this step was running"
export const strandedToolMessage = "interrupted: the runtime stopped while the tool was running"

export interface Interface {
  /**
   * Settles what a stopped host left open in one session, from durable state alone (no process-local
   * execution survives it): every tool call still pending or running is failed explicitly and the
   * Step is failed, in ONE durable transaction per Step; text and reasoning blocks still open are
   * ended with what was stored (their deltas were live-only, so usually nothing), as an interruption
   * ends them: every `*.started` block gets its `*.ended`. The permission and question requests its
   * calls waited on are rejected. Admitted prompts are left pending.
   *
   * Run it only while this host holds the session's lease (SessionLeases) and before any drain of it:
   * whoever held the session before has stopped. Idempotent: a second run finds nothing open.
   */
  readonly session: (sessionID: Identifier.SessionID) => Effect.Effect<Settled>
  /**
   * Records that the session was interrupted, now (the Clock the messages' times come from): a later
   * Recovery does not continue what its history ended with before this (see {@link continues}).
   * Idempotent.
   */
  readonly interrupted: (sessionID: Identifier.SessionID) => Effect.Effect<void>
  /**
   * Whether a drain of the session that stopped had more to do without any new input: its
   * conversation (user, synthetic and assistant messages) ends with promoted user input or a
   * synthetic continuation (written after an automatic compaction) that no Step answered, or with a
   * Step that called tools, and the session was not interrupted after that. A host that
   * stopped between two Steps leaves exactly this behind; it is resumed as a continuation. Reads only.
   */
  readonly continues: (sessionID: Identifier.SessionID) => Effect.Effect<boolean>
  /**
   * Startup: settles ({@link session}) every session that has an open Step, admitted input, a request
   * waiting on a call or a conversation a Step should continue, unless another live host holds its
   * lease (that host is running it). Each is claimed while it is settled and released after. Resolves
   * with what was settled and the sessions to resume.
   *
   * It asks the owners of the records, never history: the message projection's pending-work index,
   * the unpromoted session inputs and the pending requests of runner calls. So its cost follows the
   * unfinished work left behind, not the size of the database.
   */
  readonly run: Effect.Effect<Report>
  /**
   * The sessions with unfinished work (an open Step, admitted input, a request waiting on a call, or
   * a conversation a Step may have to continue), from the same owner indexes as {@link run}, without
   * claiming or settling anything: for a host that comes to drive sessions while it runs (a runner
   * that acquires a shard), whose drains settle what they take over themselves.
   */
  readonly candidates: Effect.Effect<ReadonlyArray<Identifier.SessionID>>
}

/** What {@link Interface.session} settled in one session. */
export interface Settled {
  readonly stranded: number
  readonly tools: number
  readonly requests: number
}

/** `yield* Recovery.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/Recovery")<Service, Interface>() {}

/** The durable events that open and end text and reasoning blocks. */
const blockTypes = [
  "session.next.text.started",
  "session.next.text.ended",
  "session.next.reasoning.started",
  "session.next.reasoning.ended"
]

export const layer: Layer.Layer<
  Service,
  never,
  | SqlClient.SqlClient
  | EventLog.Service
  | SessionEvents.Service
  | PermissionRequests.Service
  | QuestionRequests.Service
  | SessionLeases.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const log = yield* EventLog.Service
    const events = yield* SessionEvents.Service
    const permissions = yield* PermissionRequests.Service
    const questions = yield* QuestionRequests.Service
    const leases = yield* SessionLeases.Service
    const context = yield* Effect.context<SqlClient.SqlClient>()

    /**
     * The text and reasoning blocks of `assistantMessageID` started and not ended: the projection does
     * not tell an ended block from an open one, the log does. Reads only the Step's own events (from
     * the one that created its message).
     */
    const openBlocks = Effect.fnUntraced(function* (
      sessionID: Identifier.SessionID,
      assistantMessageID: string,
      fromSeq: number
    ) {
      const open = new Set<string>()
      for (const envelope of yield* log.read(sessionID, { after: fromSeq - 1, types: blockTypes })) {
        const kind = blockKinds.get(envelope.type)
        if (kind === undefined) continue
        const data = decodeBlock(envelope.data)
        if (Option.isNone(data) || data.value.assistantMessageID !== assistantMessageID) continue
        const key = `${kind.block}:${kind.block === "text" ? data.value.textID : data.value.reasoningID}`
        if (kind.started) open.add(key)
        else open.delete(key)
      }
      return open
    })

    const session = Traced.fn("Recovery.session")(function* (sessionID: Identifier.SessionID) {
      const steps = yield* MessageProjection.openSteps(sessionID)
      let tools = 0
      for (const { message, seq } of steps) {
        if (message.type !== "assistant") continue
        const timestamp = yield* Clock.currentTimeMillis
        const at = { timestamp, sessionID, assistantMessageID: message.id }
        const open = yield* openBlocks(sessionID, message.id, seq)
        const drafts = message.content.flatMap((item) => {
          switch (item.type) {
            case "text":
              return open.has(`text:${item.id}`)
                ? [SessionEvents.draft("session.next.text.ended", { ...at, textID: item.id, text: item.text })]
                : []
            case "reasoning":
              return open.has(`reasoning:${item.id}`)
                ? [
                    SessionEvents.draft("session.next.reasoning.ended", {
                      ...at,
                      reasoningID: item.id,
                      text: item.text
                    })
                  ]
                : []
            case "tool":
              if (item.state.status !== "pending" && item.state.status !== "running") return []
              tools++
              return [
                SessionEvents.draft("session.next.tool.failed", {
                  ...at,
                  callID: item.id,
                  error: { type: "unknown", message: strandedToolMessage },
                  provider: { executed: item.provider?.executed ?? false }
                })
              ]
          }
        })
        yield* events
          .append(sessionID, [
            ...drafts,
            SessionEvents.draft("session.next.step.failed", {
              ...at,
              error: { type: "unknown", message: strandedMessage }
            })
          ])
          .pipe(Effect.orDie)
      }
      const requests = (yield* permissions.recover(sessionID)) + (yield* questions.recover(sessionID))
      if (steps.length > 0 || requests > 0) {
        yield* Effect.logInfo("settled what a stopped host left open", {
          failedSteps: steps.length,
          failedTools: tools,
          rejectedRequests: requests
        }).pipe(Effect.annotateLogs({ sessionID }))
      }
      return { stranded: steps.length, tools, requests }
    }, Effect.provide(context))

    const interrupted = Traced.fn("Recovery.interrupted")(function* (sessionID: Identifier.SessionID) {
      // The Clock the messages' times come from.
      yield* Sessions.markInterrupted(sessionID, yield* Clock.currentTimeMillis)
    }, Effect.provide(context))

    const continues = Traced.fn("Recovery.continues")(function* (sessionID: Identifier.SessionID) {
      const message = yield* MessageProjection.lastConversation(sessionID)
      if (message === undefined) return false
      const ended =
        message.type === "user" || message.type === "synthetic"
          ? message.time.created
          : message.type === "assistant" && message.finish === "tool-calls" && message.error === undefined
            ? message.time.completed
            : undefined
      if (ended === undefined) return false
      const interruptedAt = yield* Sessions.interruptedAt(sessionID)
      return interruptedAt === undefined || interruptedAt < ended
    }, Effect.provide(context))

    /** Each owner answers from an index over unfinished records; `true` marks admitted input to promote. */
    const unfinished = Effect.gen(function* () {
      const candidates = new Map<Identifier.SessionID, boolean>()
      const add = (ids: ReadonlyArray<Identifier.SessionID>, pending: boolean) => {
        for (const id of ids) candidates.set(id, pending || candidates.get(id) === true)
      }
      add(yield* MessageProjection.pendingWorkSessions(), false)
      add(yield* SessionInput.pendingSessions(), true)
      add(yield* permissions.strandedSessions(), false)
      add(yield* questions.strandedSessions(), false)
      return candidates
    })

    const run = Traced.fn("Recovery.run")(function* () {
      const candidates = yield* unfinished
      let stranded = 0
      let tools = 0
      let requests = 0
      const pending: Array<Identifier.SessionID> = []
      for (const sessionID of [...candidates.keys()].sort()) {
        const claim = yield* leases.claim(sessionID)
        if (claim._tag === "Held") continue
        const settled = yield* session(sessionID).pipe(
          Effect.zipWith(continues(sessionID), (settled, continuing) => ({ ...settled, continuing })),
          Effect.ensuring(leases.release(sessionID))
        )
        stranded += settled.stranded
        tools += settled.tools
        requests += settled.requests
        if (candidates.get(sessionID) === true || settled.continuing) pending.push(sessionID)
      }
      return { stranded, tools, requests, pending } satisfies Report
    }, Effect.provide(context))

    const candidates = unfinished.pipe(
      Effect.map((found) => [...found.keys()].sort()),
      Effect.provide(context),
      Traced.withSpan("Recovery.candidates")
    )

    return Service.of({ session, interrupted, continues, run: run(), candidates })
  })
)

/** The fields of a block event Recovery reads. */
const decodeBlock = Schema.decodeUnknownOption(
  Schema.Struct({
    assistantMessageID: Schema.String,
    textID: Schema.optional(Schema.String),
    reasoningID: Schema.optional(Schema.String)
  })
)

/** The block events Recovery pairs up: which block each is about and whether it starts it. */
const blockKinds: ReadonlyMap<string, { readonly block: "text" | "reasoning"; readonly started: boolean }> = new Map([
  ["session.next.text.started", { block: "text", started: true }],
  ["session.next.text.ended", { block: "text", started: false }],
  ["session.next.reasoning.started", { block: "reasoning", started: true }],
  ["session.next.reasoning.ended", { block: "reasoning", started: false }]
] as const)
