export * as SessionShowCommand from "./session-show.js"

import { Args, Command } from "@effect/cli"
import { Identifier } from "@opencode-ai/schema"
import { Chunk, Effect, Schema, Stream } from "effect"
import { CliConnection } from "./cli-connection.js"
import { CliError } from "./cli-error.js"
import { ExitCode } from "./exit-code.js"
import { SessionTranscript } from "./session-transcript.js"
import { TerminalStyle } from "./terminal-style.js"

/**
 * `opencode session show ID`: the session's transcript as text (see SessionTranscript), from every
 * page of its messages, oldest first. An unknown id exits with 2.
 */

export const sessionArg = Args.text({ name: "id" }).pipe(Args.withDescription("The session id (ses_…)"))

const decodeSessionID = Schema.decodeUnknown(Identifier.SessionID)

/** The argument as a SessionID, or a usage failure. */
export const sessionID = (given: string) =>
  decodeSessionID(given).pipe(
    Effect.mapError(() => new CliError.Failure({ exitCode: ExitCode.usage, message: `${given}: not a session id` }))
  )

export const command = Command.make(
  "show",
  { id: sessionArg, attach: CliConnection.attach, password: CliConnection.password },
  (flags) =>
    CliError.report(
      Effect.gen(function* () {
        const id = yield* sessionID(flags.id)
        const connection = yield* CliConnection.open({ attach: flags.attach, password: flags.password })
        const { client } = connection
        const explain = CliConnection.explain(connection)
        const info = yield* client.sessions.get({ sessionID: id }).pipe(Effect.mapError(explain))
        const pages = yield* client.sessions
          .messagesPages({ sessionID: id, order: "asc" })
          .pipe(Stream.runCollect, Effect.mapError(explain))
        const messages = Chunk.toReadonlyArray(pages).flatMap((page) => page.items)
        const style = TerminalStyle.make(TerminalStyle.enabled(process.stdout, process.env))
        process.stdout.write(SessionTranscript.render(info, messages, style))
      }).pipe(Effect.scoped)
    )
).pipe(Command.withDescription("Print a session's transcript"))
