export * as Cli from "./cli.js"

import { CliConfig, Command, HelpDoc, ValidationError } from "@effect/cli"
import { Cause, Console, Effect } from "effect"
import { CliConsole } from "./cli/cli-console.js"
import { CliError } from "./cli/cli-error.js"
import { Colour } from "./cli/colour.js"
import { ExitCode } from "./cli/exit-code.js"
import { LogLevelOption } from "./cli/log-level-option.js"
import { RunCommand } from "./cli/run.js"
import { ServeCommand } from "./cli/serve-command.js"
import { SessionCommand } from "./cli/session.js"
import { ServerVersion } from "./server-version.js"

/**
 * `opencode`: the root command and its subcommands, each in its own file under `cli/` (add one to the
 * list). Options given before the subcommand: `--log-level` (see LogLevelOption). Without a
 * subcommand it prints its help.
 */
export const command = Command.make("opencode", { logLevel: LogLevelOption.option }).pipe(
  Command.withSubcommands([ServeCommand.command, RunCommand.command, SessionCommand.command]),
  // Every handler: at the level given before the subcommand, and with its own stderr kept (CliConsole).
  Command.transformHandler((effect, options) => CliConsole.inHandler(LogLevelOption.apply(options.logLevel)(effect)))
)

// @effect/cli's built-in options still work; the help hides them (its own `--log-level` would be listed
// next to ours) and this epilog describes the useful ones.
const epilog = HelpDoc.blocks([
  HelpDoc.h1("ALSO"),
  HelpDoc.p(
    [
      "-h, --help                        show the help of opencode or of a command",
      "--version                         print the version",
      "--completions sh|bash|fish|zsh    print a shell completion script"
    ].join("\n")
  ),
  ExitCode.help
])

/** Parses `argv` (`[node, script, ...args]`) and runs the command it names. */
export const run = Command.run(command, { name: "opencode", version: ServerVersion.current, footer: epilog })

/**
 * What a defect prints: each distinct error of the cause with its stack, once. (Start-up runs layers
 * in parallel, so one broken resource, such as a database file that is not one, can fail several
 * fibers with the same error.)
 */
const defectReport = (cause: Cause.Cause<unknown>): string => {
  const errors = [...new Set(Cause.prettyErrors(cause).map((error) => error.stack ?? String(error)))]
  return `opencode: unexpected failure: ${errors.join("\n")}`
}

/**
 * The program `bin.ts` runs: {@link run} with every outcome reported once, resolving to the exit
 * status (see ExitCode). A usage error or a command's `Failure` is one line on stderr; a defect prints
 * its cause once (status 1). Interruption (SIGINT/SIGTERM) is not caught: the runtime exits 0 after the
 * shutdown it triggers. Colour appears only on a terminal without `NO_COLOR` (see Colour).
 */
export const main = (argv: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const console = yield* Effect.console
    return yield* run(argv).pipe(
      Effect.as(ExitCode.ok),
      Effect.withConsole(CliConsole.make(console, Colour.ofProcess())),
      Effect.provide(CliConfig.layer({ showBuiltIns: false })),
      Effect.catchAll((error) => {
        const failure = ValidationError.isValidationError(error)
          ? CliError.usage(error)
          : error instanceof CliError.Failure
            ? error
            : undefined
        return failure === undefined
          ? Effect.failCause(Cause.die(error))
          : Effect.as(Console.error(CliError.line(failure)), failure.exitCode)
      }),
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause)
          : Effect.as(Console.error(defectReport(cause)), ExitCode.failed)
      )
    )
  })
