export * as SessionDeleteCommand from "./session-delete.js"

import { Command } from "@effect/cli"
import { Effect } from "effect"
import { CliConnection } from "./cli-connection.js"
import { CliError } from "./cli-error.js"
import { SessionShowCommand } from "./session-show.js"

/**
 * `opencode session delete ID`: deletes the session and its child sessions through the API's
 * `DELETE /api/session/{sessionID}` (a running one is interrupted first; its rows and managed files go,
 * see SessionDelete in core). Prints `deleted <id>` on stderr. An unknown id, including one already
 * deleted, exits with 2, so a repeated delete says so rather than succeeding silently.
 */
export const command = Command.make(
  "delete",
  { id: SessionShowCommand.sessionArg, attach: CliConnection.attach, password: CliConnection.password },
  (flags) =>
    CliError.report(
      Effect.gen(function* () {
        const sessionID = yield* SessionShowCommand.sessionID(flags.id)
        const connection = yield* CliConnection.open({ attach: flags.attach, password: flags.password })
        yield* connection.client.sessions.remove({ sessionID }).pipe(Effect.mapError(CliConnection.explain(connection)))
        process.stderr.write(`deleted ${sessionID}\n`)
      }).pipe(Effect.scoped)
    )
).pipe(Command.withDescription("Delete a session, its child sessions and their files"))
