export * as Cli from "./cli.js"

import { Command, Options } from "@effect/cli"
import { Console, Effect, LogLevel } from "effect"
import { Serve } from "./serve.js"

const port = Options.integer("port").pipe(
  Options.withDefault(4096),
  Options.withDescription("Port to listen on (0 picks a free one)")
)
const hostname = Options.text("hostname").pipe(
  Options.withDefault("127.0.0.1"),
  Options.withDescription("Interface to listen on")
)
const printLogs = Options.boolean("print-logs").pipe(
  Options.withDescription("Write logs to stderr instead of the log file")
)
const logLevel = Options.choice("log-level", ["DEBUG", "INFO", "WARN", "ERROR"]).pipe(
  Options.withDefault("INFO" as const),
  Options.withDescription("Minimum level of log lines")
)

const levels = { DEBUG: LogLevel.Debug, INFO: LogLevel.Info, WARN: LogLevel.Warning, ERROR: LogLevel.Error } as const

/**
 * `opencode serve`: runs until SIGINT or SIGTERM, then shuts down gracefully. An invalid
 * `opencode.json(c)` stops it before it listens: the file, line and reason go to stderr and the
 * process exits with status 1.
 */
export const serve = Command.make("serve", { port, hostname, printLogs, logLevel }, (options) =>
  Serve.run({
    port: options.port,
    hostname: options.hostname,
    printLogs: options.printLogs,
    logLevel: levels[options.logLevel]
  }).pipe(
    Effect.catchTag("ConfigError", (error) =>
      Console.error(`opencode: invalid configuration: ${error.message}`).pipe(
        // Reported here in the user's terms; exiting through a failure would print it again as a cause.
        Effect.zipRight(
          Effect.sync(() => {
            process.exitCode = 1
          })
        )
      )
    )
  )
).pipe(Command.withDescription("Start the OpenCode HTTP server"))

export const command = Command.make("opencode").pipe(Command.withSubcommands([serve]))

export const run = Command.run(command, { name: "opencode", version: "0.1.0" })
