export * as ExitCode from "./exit-code.js"

import { HelpDoc } from "@effect/cli"

/*
 * The exit statuses of `opencode`, one per kind of outcome, so that a script can tell them apart.
 * Every failure but a defect is reported in one line on stderr, `opencode: <what> (<hint>)`, with no
 * stack trace; a defect prints its cause once.
 */

/** Done: help or the version printed, or the server stopped by SIGINT or SIGTERM after a clean shutdown. */
export const ok = 0
/** An unexpected failure (a defect): its cause is printed once. */
export const defect = 1
/** A usage error: an unknown flag or subcommand, a missing or invalid value (e.g. `--port 99999`). */
export const usage = 2
/** An invalid configuration: `opencode.json(c)`, `$OPENCODE_CONFIG(_CONTENT)` or `auth.json`. */
export const config = 3
/** The server cannot listen: the port is in use, the address unavailable, or a privileged port. */
export const listen = 4
/** The data directory or the database file cannot be created, read or written. */
export const dataDir = 5

const table: ReadonlyArray<readonly [number, string]> = [
  [ok, "done (or stopped by SIGINT/SIGTERM after a clean shutdown)"],
  [defect, "unexpected failure; its cause is printed"],
  [usage, "usage error: unknown flag or command, bad value (e.g. --port outside 0-65535)"],
  [config, "invalid configuration (opencode.json(c), OPENCODE_CONFIG, auth.json)"],
  [listen, "cannot listen: port in use, address not available, or permission denied"],
  [dataDir, "the data directory or the database file cannot be created, read or written"]
]

/** The exit statuses as a help section (the help's epilog). */
export const help: HelpDoc.HelpDoc = HelpDoc.sequence(
  HelpDoc.h1("EXIT STATUS"),
  HelpDoc.p(table.map(([code, what]) => `${code}  ${what}`).join("\n"))
)
