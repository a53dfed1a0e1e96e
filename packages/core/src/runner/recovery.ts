export * as Recovery from "./recovery.js"

import { SqlClient } from "@effect/sql"
import { Identifier } from "@opencode-ai/schema"
import { Clock, Effect } from "effect"
import { MessageProjection } from "../session/message-projection.js"
import { SessionEvents } from "../session/session-events.js"

/** What a restart found and settled. */
export interface Report {
  /** Steps that had begun but never settled, now failed. */
  readonly stranded: number
  /** Tool calls left pending or running, now failed. */
  readonly tools: number
  /** Sessions with admitted prompts still waiting for promotion: the caller resumes them. */
  readonly pending: ReadonlyArray<string>
}

export const strandedMessage = "The runtime stopped while this step was running"
export const strandedToolMessage = "interrupted: the runtime stopped while the tool was running"

/**
 * Settles what a crash left open, from durable state alone (no process-local execution survives a
 * restart): every tool call still pending or running is failed explicitly and the Step is failed,
 * in one durable transition per Step. Text and reasoning blocks still open are ended with what was
 * stored (their deltas were live-only, so usually nothing), as an interruption ends them: every
 * `*.started` block gets its `*.ended`. Admitted prompts are left pending; the sessions holding them
 * are returned so the host resumes them. Idempotent: a second run finds nothing open.
 *
 * Run it once at startup, before serving, while no drain of this database runs anywhere.
 */
export const run = Effect.fn("Recovery.run")(function* () {
  const sql = yield* SqlClient.SqlClient
  const events = yield* SessionEvents.Service
  const rows = yield* sql<{ readonly session_id: string; readonly info: string }>`
    SELECT session_id, info FROM message
    WHERE type = 'assistant' AND json_extract(info, '$.finish') IS NULL AND json_extract(info, '$.error') IS NULL
    ORDER BY seq`.pipe(Effect.orDie)
  let tools = 0
  for (const row of rows) {
    const message = yield* MessageProjection.decodeInfo(row.info)
    if (message.type !== "assistant") continue
    const timestamp = yield* Clock.currentTimeMillis
    const sessionID = row.session_id as Identifier.SessionID
    const at = { timestamp, sessionID, assistantMessageID: message.id }
    // The projection does not tell an ended text block from an open one: the log does.
    const blocks = yield* sql<{ readonly type: string; readonly id: string }>`
      SELECT type, coalesce(json_extract(data, '$.textID'), json_extract(data, '$.reasoningID')) AS id FROM event
      WHERE aggregate_id = ${sessionID} AND json_extract(data, '$.assistantMessageID') = ${message.id}
        AND type IN ('session.next.text.started', 'session.next.text.ended', 'session.next.reasoning.started', 'session.next.reasoning.ended')
      ORDER BY seq`.pipe(Effect.orDie)
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
            ? [SessionEvents.draft("session.next.reasoning.ended", { ...at, reasoningID: item.id, text: item.text })]
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
        SessionEvents.draft("session.next.step.failed", { ...at, error: { type: "unknown", message: strandedMessage } })
      ])
      .pipe(Effect.orDie)
  }
  const pending = yield* sql<{ readonly session_id: string }>`
    SELECT DISTINCT session_id FROM session_input WHERE promoted_seq IS NULL ORDER BY session_id`.pipe(Effect.orDie)
  return { stranded: rows.length, tools, pending: pending.map((row) => row.session_id) } satisfies Report
})
