export * as SessionListCommand from "./session-list.js"

import { Command, Options } from "@effect/cli"
import { Session } from "@opencode-ai/schema"
import { Chunk, Effect, Schema, Stream } from "effect"
import { CliConnection } from "./cli-connection.js"
import { CliError } from "./cli-error.js"
import { SessionTranscript } from "./session-transcript.js"
import { ToolCallSummary } from "./tool-call-summary.js"

/**
 * `opencode session list`: every session, newest first (all pages of `GET /api/session`), as a table
 * (id, title, updated, status, cost, tokens) or, with `--json`, as a JSON array of the API's session
 * records, each with a `status` added: `running` when the server is running it now, else `idle`
 * (embedded, nothing else runs, so every session is idle).
 */

const json = Options.boolean("json").pipe(Options.withDescription("Print the sessions as a JSON array"))

const encodeSession = Schema.encodeSync(Session.SessionV2Info)

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

/** Rows of cells as left-aligned columns (numbers right-aligned), two spaces apart. */
const table = (rows: ReadonlyArray<ReadonlyArray<string>>, right: ReadonlySet<number>) => {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows
    .map((row) =>
      row
        .map((cell, column) => (right.has(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!)))
        .join("  ")
        .trimEnd()
    )
    .join("\n")
}

export const command = Command.make(
  "list",
  { json, attach: CliConnection.attach, password: CliConnection.password },
  (flags) =>
    CliError.report(
      Effect.gen(function* () {
        const connection = yield* CliConnection.open({ attach: flags.attach, password: flags.password })
        const { client } = connection
        const explain = CliConnection.explain(connection)
        const pages = yield* client.sessions.listPages().pipe(Stream.runCollect, Effect.mapError(explain))
        const sessions = Chunk.toReadonlyArray(pages).flatMap((page) => page.items)
        const active = yield* client.sessions.active().pipe(Effect.mapError(explain))
        const status = (id: string) => (id in active ? "running" : "idle")
        if (flags.json) {
          const records = sessions.map((info) => ({ ...encodeSession(info), status: status(info.id) }))
          process.stdout.write(`${JSON.stringify(records, null, 2)}\n`)
          return
        }
        if (sessions.length === 0) {
          process.stdout.write("no sessions\n")
          return
        }
        const rows = [
          ["ID", "TITLE", "UPDATED", "STATUS", "COST", "TOKENS IN", "TOKENS OUT"],
          ...sessions.map((info) => [
            info.id,
            cut(info.title, 48),
            SessionTranscript.localTime(info.time.updated),
            status(info.id),
            ToolCallSummary.cost(info.cost),
            ToolCallSummary.count(info.tokens.input + info.tokens.cache.read + info.tokens.cache.write),
            ToolCallSummary.count(info.tokens.output + info.tokens.reasoning)
          ])
        ]
        process.stdout.write(`${table(rows, new Set([4, 5, 6]))}\n`)
      }).pipe(Effect.scoped)
    )
).pipe(Command.withDescription("List sessions, newest first"))
