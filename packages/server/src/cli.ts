export * as Cli from "./cli.js"

import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Console, Effect, LogLevel, Option } from "effect"
import { RunCommand } from "./cli/run.js"
import { SessionCommand } from "./cli/session.js"
import { RequestOrigin } from "./middleware/request-origin.js"
import { Serve } from "./serve.js"
import { ServerVersion } from "./server-version.js"

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

const cors = Options.text("cors").pipe(
  Options.repeated,
  Options.mapEffect((origins) =>
    Effect.forEach(origins, (origin) =>
      Option.match(RequestOrigin.parse(origin), {
        onNone: () =>
          Effect.fail(
            ValidationError.invalidValue(
              HelpDoc.p(`--cors ${origin}: expected an origin such as http://localhost:3000 (scheme, host, port)`)
            )
          ),
        onSome: Effect.succeed
      })
    )
  ),
  Options.withDescription("Also allow this browser origin, with CORS (repeatable; adds to server.cors)")
)
const pure = Options.boolean("pure").pipe(
  Options.withDescription("Run without external plugins (accepted for compatibility: this server loads none)")
)
const mdns = Options.boolean("mdns").pipe(
  Options.withDescription("Accepted for compatibility and ignored: this server does not announce itself over mDNS")
)

const levels = { DEBUG: LogLevel.Debug, INFO: LogLevel.Info, WARN: LogLevel.Warning, ERROR: LogLevel.Error } as const

/**
 * `opencode serve`: runs until SIGINT or SIGTERM, then shuts down gracefully. `--cors <origin>`
 * (repeatable) allows a browser origin besides the server's own; `--pure` changes nothing (there are
 * no plugins to leave out) and `--mdns` is ignored with a warning; both exist so that upstream's
 * launch lines work unchanged. An invalid `opencode.json(c)` stops it before it listens: the file,
 * line and reason go to stderr and the process exits with status 1.
 */
export const serve = Command.make("serve", { port, hostname, printLogs, logLevel, cors, pure, mdns }, (options) =>
  Effect.zipRight(
    options.mdns ? Console.error("opencode: warning: --mdns is not supported and has no effect") : Effect.void,
    Serve.run({
      port: options.port,
      hostname: options.hostname,
      printLogs: options.printLogs,
      logLevel: levels[options.logLevel],
      cors: options.cors
    })
  ).pipe(
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

export const command = Command.make("opencode").pipe(
  Command.withSubcommands([serve, RunCommand.command, SessionCommand.command])
)

export const run = Command.run(command, { name: "opencode", version: ServerVersion.current })
