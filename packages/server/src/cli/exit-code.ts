export * as ExitCode from "./exit-code.js"

import { HelpDoc } from "@effect/cli"
import { Effect } from "effect"

/*
 * The exit statuses of `opencode`, one per kind of outcome, so that a script can tell them apart.
 * Every failure but a defect is reported in one line on stderr, `opencode: <what> (<hint>)`, with no
 * stack trace; a defect prints its cause once.
 */

/** Done: help or the version printed, a command finished, or the server stopped by SIGINT or SIGTERM after a clean shutdown. */
export const ok = 0
/** A failure: an unexpected one (a defect) prints its cause once; `run`'s failed turn prints one line. */
export const failed = 1
/** A usage error: an unknown flag or subcommand, a missing or invalid value (e.g. `--port 99999`), an unknown session. */
export const usage = 2
/** An invalid configuration: `opencode.json(c)`, `$OPENCODE_CONFIG(_CONTENT)`, `auth.json`, or a database URL that is not a PostgreSQL URL. */
export const config = 3
/**
 * The network: `serve` cannot listen (the port is in use, the address unavailable, a privileged port),
 * `--attach` cannot reach the server or the server refuses the credentials, or the selected PostgreSQL
 * database (`OPENCODE_DATABASE_URL`, `server.database`) cannot be reached or refuses the connection.
 */
export const network = 4
/** The data directory or the database file cannot be created, read or written. */
export const dataDir = 5
/** `run`: a permission was refused (`--deny`, answered no, no terminal to ask on, or rejected elsewhere). */
export const denied = 6
/** Interrupted by Ctrl-C while `run` drove a turn (the session's Step was interrupted first). */
export const interrupted = 130

const table: ReadonlyArray<readonly [number, string]> = [
  [ok, "done (or stopped by SIGINT/SIGTERM after a clean shutdown)"],
  [failed, "failure: an unexpected one prints its cause; for run, the turn failed"],
  [usage, "usage error: unknown flag or command, bad value (e.g. --port outside 0-65535), unknown session"],
  [config, "invalid configuration (opencode.json(c), OPENCODE_CONFIG, auth.json)"],
  [
    network,
    "cannot listen (port in use, address not available), or cannot reach the --attach server or the PostgreSQL database"
  ],
  [dataDir, "the data directory or the database file cannot be created, read or written"],
  [denied, "run: a permission was refused"],
  [interrupted, "run: interrupted with Ctrl-C"]
]

/** The exit statuses as a help section (the help's epilog). */
export const help: HelpDoc.HelpDoc = HelpDoc.sequence(
  HelpDoc.h1("EXIT STATUS"),
  HelpDoc.p(table.map(([code, what]) => `${code}  ${what}`).join("\n"))
)

/**
 * Sets the status the process exits with when the command ends by interruption (Ctrl-C): the entry
 * point exits with `process.exitCode` then, and with 0 when it is unset.
 */
export const setOnInterrupt = (code: number) =>
  Effect.sync(() => {
    process.exitCode = code
  })
