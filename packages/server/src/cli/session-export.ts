export * as SessionExportCommand from "./session-export.js"

import * as fs from "node:fs"
import * as path from "node:path"
import { Command, Options } from "@effect/cli"
import { Event, Session, SessionMessages } from "@opencode-ai/schema"
import { Chunk, Effect, Option, Schema, Stream } from "effect"
import { CliConnection } from "./cli-connection.js"
import { CliError } from "./cli-error.js"
import { ExitCode } from "./exit-code.js"
import { SessionShowCommand } from "./session-show.js"

/**
 * `opencode session export ID [--output FILE]`: the session as one JSON document,
 * `{session, messages, events}`: its record (`GET /api/session/{id}`), every message oldest first
 * (all pages of `.../message`), and its whole durable log (all pages of `.../history`, seq 1 on), each
 * in its wire encoding. Written to FILE (replaced whole) or to stdout.
 */

const output = Options.file("output").pipe(
  Options.withAlias("o"),
  Options.optional,
  Options.withDescription("Write the JSON to this file instead of stdout")
)

const encodeSession = Schema.encodeSync(Session.SessionV2Info)
const encodeMessage = Schema.encodeSync(SessionMessages.SessionMessage)
const encodeEvent = Schema.encodeSync(Event.SessionDurableEvent)

export const command = Command.make(
  "export",
  { id: SessionShowCommand.sessionArg, output, attach: CliConnection.attach, password: CliConnection.password },
  (flags) =>
    CliError.report(
      Effect.gen(function* () {
        const sessionID = yield* SessionShowCommand.sessionID(flags.id)
        const connection = yield* CliConnection.open({ attach: flags.attach, password: flags.password })
        const { client } = connection
        const explain = CliConnection.explain(connection)
        const info = yield* client.sessions.get({ sessionID }).pipe(Effect.mapError(explain))
        const pages = yield* client.sessions
          .messagesPages({ sessionID, order: "asc" })
          .pipe(Stream.runCollect, Effect.mapError(explain))
        const messages = Chunk.toReadonlyArray(pages).flatMap((page) => page.items)
        const events: Array<Event.SessionDurableEvent> = []
        let after = 0
        while (true) {
          const page = yield* client.sessions.history({ sessionID, after, limit: 1000 }).pipe(Effect.mapError(explain))
          events.push(...page.data)
          const last = page.data[page.data.length - 1]
          if (!page.hasMore || last?.durable === undefined) break
          after = last.durable.seq
        }
        const document = {
          session: encodeSession(info),
          messages: messages.map((message) => encodeMessage(message)),
          events: events.map((event) => encodeEvent(event))
        }
        const text = `${JSON.stringify(document, null, 2)}\n`
        if (Option.isNone(flags.output)) {
          process.stdout.write(text)
          return
        }
        const file = path.resolve(flags.output.value)
        yield* Effect.try({
          try: () => fs.writeFileSync(file, text),
          catch: (error) =>
            new CliError.Failure({
              exitCode: ExitCode.failed,
              message: `cannot write ${file}: ${error instanceof Error ? error.message : String(error)}`
            })
        })
        process.stderr.write(
          `exported ${sessionID} (${messages.length} messages, ${events.length} events) to ${file}\n`
        )
      }).pipe(Effect.scoped)
    )
).pipe(Command.withDescription("Write a session's record, messages and durable log as JSON"))
