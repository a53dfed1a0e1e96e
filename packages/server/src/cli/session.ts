export * as SessionCommand from "./session.js"

import { Command } from "@effect/cli"
import { SessionDeleteCommand } from "./session-delete.js"
import { SessionExportCommand } from "./session-export.js"
import { SessionListCommand } from "./session-list.js"
import { SessionShowCommand } from "./session-show.js"

/**
 * `opencode session <list|show|export|delete>`: read sessions from a running server (`--attach URL`) or
 * embedded over the data directory. Each subcommand lives in its own file.
 */
export const command = Command.make("session").pipe(
  Command.withDescription("List, show, export and delete sessions"),
  Command.withSubcommands([
    SessionListCommand.command,
    SessionShowCommand.command,
    SessionExportCommand.command,
    SessionDeleteCommand.command
  ])
)
