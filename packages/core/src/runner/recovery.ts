export * as Recovery from "./recovery.js"

import { SqlClient } from "@effect/sql"
import type { Identifier } from "@opencode-ai/schema"
import { Clock, Context, Effect, Layer } from "effect"
import { EventLog } from "../event/event-log.js"
import { PermissionRequests } from "../permission/permission-requests.js"
import { QuestionRequests } from "../question/question-requests.js"
import { MessageProjection } from "../session/message-projection.js"
import { SessionEvents } from "../session/session-events.js"
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
  readonly pending: ReadonlyArray<string>
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
  readonly session: (sessionID: string) => Effect.Effect<Settled>
  /**
   * Records that the session was interrupted, now (the Clock the messages' times come from): a later
   * Recovery does not continue what its history ended with before this (see {@link continues}).
   * Idempotent.
   */
  readonly interrupted: (sessionID: string) => Effect.Effect<void>
  /**
   * Whether a drain of the session that stopped had more to do without any new input: its
   * conversation (user, synthetic and assistant messages) ends with promoted user input or a
   * synthetic continuation (written after an automatic compaction) that no Step answered, or with a
   * Step that called tools, and the session was not interrupted after that. A host that
   * stopped between two Steps leaves exactly this behind; it is resumed as a continuation. Reads only.
   */
  readonly continues: (sessionID: string) => Effect.Effect<boolean>
  /**
   * Startup: settles ({@link session}) every session that has an open Step, admitted input, a request
   * waiting on a call or a conversation a Step should continue, unless another live host holds its
   * lease (that host is running it). Each is claimed while it is settled and released after. Resolves
   * with what was settled and the sessions to resume.
   */
  readonly run: Effect.Effect<Report>
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
  | SessionEvents.Service
  | EventLog.Service
  | PermissionRequests.Service
  | QuestionRequests.Service
  | SessionLeases.Service
> = Layer.effect(
  Service,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const events = yield* SessionEvents.Service
    const log = yield* EventLog.Service
    const permissions = yield* PermissionRequests.Service
    const questions = yield* QuestionRequests.Service
    const leases = yield* SessionLeases.Service

    const session = Effect.fn("Recovery.session")(function* (sessionID: string) {
      const rows = yield* sql<{ readonly info: string }>`
        SELECT info FROM message
        WHERE session_id = ${sessionID} AND type = 'assistant'
          AND json_extract(info, '$.finish') IS NULL AND json_extract(info, '$.error') IS NULL
        ORDER BY seq`.pipe(Effect.orDie)
      let tools = 0
      for (const row of rows) {
        const message = yield* MessageProjection.decodeInfo(row.info)
        if (message.type !== "assistant") continue
        const timestamp = yield* Clock.currentTimeMillis
        const at = { timestamp, sessionID: sessionID as Identifier.SessionID, assistantMessageID: message.id }
        // The projection does not tell an ended text block from an open one: the log does.
        const blocks = (yield* log.read(sessionID, { types: blockTypes })).flatMap((event) => {
          const data = event.data as {
            readonly assistantMessageID?: unknown
            readonly textID?: unknown
            readonly reasoningID?: unknown
          }
          const id = data.textID ?? data.reasoningID
          return data.assistantMessageID === message.id && typeof id === "string" ? [{ type: event.type, id }] : []
        })
        const open = new Set<string>()
        for (const block of blocks) {
          const key = `${block.type.includes(".text.") ? "text" : "reasoning"}:${block.id}`
          if (block.type.endsWith(".started")) open.add(key)
          else open.delete(key)
        }
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
      if (rows.length > 0 || requests > 0) {
        yield* Effect.logInfo("settled what a stopped host left open", {
          failedSteps: rows.length,
          failedTools: tools,
          rejectedRequests: requests
        }).pipe(Effect.annotateLogs({ sessionID }))
      }
      return { stranded: rows.length, tools, requests }
    })

    const interrupted = Effect.fn("Recovery.interrupted")(function* (sessionID: string) {
      // The Clock the messages' times come from.
      const now = yield* Clock.currentTimeMillis
      yield* sql`UPDATE session SET time_interrupted = ${now} WHERE id = ${sessionID}`.pipe(Effect.orDie)
    })

    const continues = Effect.fn("Recovery.continues")(function* (sessionID: string) {
      const [last] = yield* sql<{ readonly info: string; readonly time_interrupted: number | null }>`
        SELECT m.info, s.time_interrupted FROM message m JOIN session s ON s.id = m.session_id
        WHERE m.session_id = ${sessionID} AND m.type IN ('user', 'synthetic', 'assistant')
        ORDER BY m.seq DESC LIMIT 1`.pipe(Effect.orDie)
      if (last === undefined) return false
      const message = yield* MessageProjection.decodeInfo(last.info)
      const ended =
        message.type === "user" || message.type === "synthetic"
          ? message.time.created
          : message.type === "assistant" && message.finish === "tool-calls" && message.error === undefined
            ? message.time.completed
            : undefined
      return ended !== undefined && (last.time_interrupted === null || last.time_interrupted < ended)
    })

    const run = Effect.fn("Recovery.run")(function* () {
      const candidates = yield* sql<{ readonly session_id: string; readonly pending: number }>`
        SELECT session_id, max(pending) AS pending FROM (
          SELECT session_id, 0 AS pending FROM message
          WHERE type = 'assistant' AND json_extract(info, '$.finish') IS NULL AND json_extract(info, '$.error') IS NULL
          UNION ALL SELECT session_id, 1 FROM session_input WHERE promoted_seq IS NULL
          UNION ALL SELECT session_id, 0 FROM permission_request WHERE status = 'pending' AND origin = 'runner'
          UNION ALL SELECT session_id, 0 FROM question_request WHERE status = 'pending' AND origin = 'runner'
          UNION ALL SELECT m.session_id, 0 FROM message m
          JOIN (SELECT session_id, max(seq) AS seq FROM message WHERE type IN ('user', 'assistant') GROUP BY session_id) last
            ON last.session_id = m.session_id AND last.seq = m.seq
          JOIN session s ON s.id = m.session_id
          WHERE (m.type = 'user' OR json_extract(m.info, '$.finish') = 'tool-calls')
            AND (s.time_interrupted IS NULL
              OR s.time_interrupted < coalesce(json_extract(m.info, '$.time.completed'), json_extract(m.info, '$.time.created')))
        ) GROUP BY session_id ORDER BY session_id`.pipe(Effect.orDie)
      let stranded = 0
      let tools = 0
      let requests = 0
      const pending: Array<string> = []
      for (const candidate of candidates) {
        const claim = yield* leases.claim(candidate.session_id)
        if (claim._tag === "Held") continue
        const settled = yield* session(candidate.session_id).pipe(
          Effect.zipWith(continues(candidate.session_id), (settled, continuing) => ({ ...settled, continuing })),
          Effect.ensuring(leases.release(candidate.session_id))
        )
        stranded += settled.stranded
        tools += settled.tools
        requests += settled.requests
        if (candidate.pending === 1 || settled.continuing) pending.push(candidate.session_id)
      }
      return { stranded, tools, requests, pending } satisfies Report
    })

    return Service.of({ session, interrupted, continues, run: run() })
  })
)
