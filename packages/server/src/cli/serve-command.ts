export * as ServeCommand from "./serve-command.js"

import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { type Config, RunnerOptions, type Storage } from "@opencode-ai/core"
import { Console, Effect, Option } from "effect"
import { RequestOrigin } from "../middleware/request-origin.js"
import { Serve } from "../serve.js"
import type { StartupError } from "../startup-error.js"
import { Failure } from "./cli-error.js"
import { ExitCode } from "./exit-code.js"
import { LogLevelOption } from "./log-level-option.js"

const invalid = (text: string) => Effect.fail(ValidationError.invalidValue(HelpDoc.p(text)))

// Text, checked here, rather than `Options.integer`: the error then names the flag and the range.
const port = Options.text("port").pipe(
  Options.withPseudoName("PORT"),
  Options.mapEffect((text) =>
    /^\d{1,5}$/.test(text) && Number(text) <= 65535
      ? Effect.succeed(Number(text))
      : invalid(`--port ${text}: expected a port number from 0 to 65535`)
  ),
  Options.withDefault(4096),
  Options.withDescription("Port to listen on, 0 to 65535 (0 picks a free one); default 4096")
)
const hostname = Options.text("hostname").pipe(
  Options.withPseudoName("ADDRESS"),
  Options.withDefault("127.0.0.1"),
  Options.withDescription("Interface to listen on (an IPv4 or IPv6 address, or a name); default 127.0.0.1")
)
const printLogs = Options.boolean("print-logs").pipe(
  Options.withDescription("Write logs to stderr instead of the log file")
)
const logFormats = ["logfmt", "json", "pretty"] as const
// Text, checked here, rather than `Options.choice`: the error then names the flag; any case is accepted.
const logFormat = Options.text("log-format").pipe(
  Options.withPseudoName("logfmt|json|pretty"),
  Options.mapEffect((text) => {
    const format = logFormats.find((name) => name === text.toLowerCase())
    return format === undefined
      ? invalid(`--log-format ${text}: expected logfmt, json or pretty`)
      : Effect.succeed(format)
  }),
  Options.optional,
  Options.withDescription("Format of the log lines: logfmt, json (one object per line) or pretty")
)
const noUi = Options.boolean("no-ui").pipe(Options.withDescription("Do not serve the session inspector page at /"))
const cors = Options.text("cors").pipe(
  Options.withPseudoName("ORIGIN"),
  Options.repeated,
  Options.mapEffect((origins) =>
    Effect.forEach(origins, (origin) =>
      Option.match(RequestOrigin.parse(origin), {
        onNone: () =>
          invalid(`--cors ${origin}: expected an origin such as http://localhost:3000 (scheme, host, port)`),
        onSome: Effect.succeed
      })
    )
  ),
  Options.withDescription("Also allow this browser origin, with CORS (repeatable; adds to server.cors)")
)
// Text, checked here: the error then names the flag and the expected form.
const runnerAddress = Options.text("runner-address").pipe(
  Options.withPseudoName("HOST:PORT"),
  Options.mapEffect((text) => {
    return RunnerOptions.parseAddress(text) === undefined
      ? invalid(`--runner-address ${text}: expected host:port, e.g. 10.0.0.5:4101`)
      : Effect.succeed(text)
  }),
  Options.optional,
  Options.withDescription(
    "Run as a cluster runner reachable by the other hosts at this address: sessions are placed on runners by shard (same as OPENCODE_RUNNER_ADDRESS)"
  )
)
const pure = Options.boolean("pure").pipe(
  Options.withDescription("Run without external plugins (accepted for compatibility: this server loads none)")
)
const mdns = Options.boolean("mdns").pipe(
  Options.withDescription("Accepted for compatibility and ignored: this server does not announce itself over mDNS")
)

/** Why a listen failed, and what to do, in the user's terms; the system's message when the code is unknown. */
const listenProblem = (error: StartupError.ListenError): readonly [reason: string, hint: string] => {
  switch (error.code) {
    case "EADDRINUSE":
      return [
        "the port is already in use",
        "stop what holds it, or choose another with --port; --port 0 picks a free one"
      ]
    case "EACCES":
      return ["permission denied", "ports below 1024 need privileges: choose another with --port"]
    case "EADDRNOTAVAIL":
      return [
        "no interface of this machine has that address",
        "use one it has with --hostname, e.g. 127.0.0.1 or 0.0.0.0"
      ]
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return ["the hostname does not resolve", "check --hostname"]
    default:
      return [error.message, "check --hostname and --port"]
  }
}

/** A start-up failure of the server in the user's terms, with its exit status (see ExitCode). */
export const failure = (error: Config.ConfigError | Storage.DatabaseUnavailable | StartupError.Any): Failure => {
  switch (error._tag) {
    case "ConfigError":
      return new Failure({
        message: `invalid configuration: ${error.message}`,
        hint: "fix it and start again; opencode.json(c) is read from the config dir, OPENCODE_CONFIG and the project",
        exitCode: ExitCode.config
      })
    case "Server/ListenError": {
      const where = error.hostname.includes(":")
        ? `[${error.hostname}]:${error.port}`
        : `${error.hostname}:${error.port}`
      const [reason, hint] = listenProblem(error)
      return new Failure({
        message: `cannot listen on ${where}: ${reason}`,
        hint,
        exitCode: ExitCode.network
      })
    }
    case "Storage/DatabaseUnavailable":
      return new Failure({
        message: error.message,
        hint: "check that the PostgreSQL server is up and the URL (OPENCODE_DATABASE_URL or server.database) is right",
        exitCode: ExitCode.network
      })
    case "Server/DataDirError":
      return new Failure({
        message: error.message,
        hint:
          error.kind === "directory"
            ? "set XDG_DATA_HOME to a directory this user can read and write"
            : "set OPENCODE_DB to a file this user can read and write, in a writable directory",
        exitCode: ExitCode.dataDir
      })
  }
}

/**
 * `opencode serve`: runs until SIGINT or SIGTERM, then shuts down gracefully (exit 0). Once listening
 * it prints the start-up summary to stdout, its first line `opencode server listening on <url>`.
 * `--cors <origin>` (repeatable) allows a browser origin besides the server's own; `--pure` changes
 * nothing (there are no plugins to leave out) and `--mdns` is ignored with a warning; both exist so
 * that upstream's launch lines work unchanged. `--runner-address <host:port>` makes the server a
 * cluster runner reachable there (see ClusterRunner): every host sharing its database must be one.
 * `--log-level` (here or before `serve`), `--log-format` and `--print-logs` shape the logs; `--no-ui` leaves out the inspector page. An expected start-up
 * failure fails the command with a `Failure` (one line, its exit status): a usable data directory
 * (5), a valid configuration (3), a reachable PostgreSQL database when one is selected (4) and a
 * free address (4) are checked in that order, before listening.
 */
export const command = Command.make(
  "serve",
  { port, hostname, printLogs, logLevel: LogLevelOption.option, logFormat, noUi, cors, runnerAddress, pure, mdns },
  (options) =>
    Effect.gen(function* () {
      if (options.mdns) yield* Console.error("opencode: warning: --mdns is not supported and has no effect")
      const logLevel = yield* LogLevelOption.apply(options.logLevel)(LogLevelOption.current)
      return yield* Serve.run({
        port: options.port,
        hostname: options.hostname,
        printLogs: options.printLogs,
        logLevel,
        ...(Option.isSome(options.logFormat) ? { logFormat: options.logFormat.value } : {}),
        ui: !options.noUi,
        cors: options.cors,
        ...(Option.isSome(options.runnerAddress) ? { runnerAddress: options.runnerAddress.value } : {})
      }).pipe(
        Effect.catchAll((error) =>
          error._tag === "ConfigError" ||
          error._tag === "Storage/DatabaseUnavailable" ||
          error._tag === "Server/ListenError" ||
          error._tag === "Server/DataDirError"
            ? Effect.fail(failure(error))
            : // Anything else (e.g. a log file that cannot be opened after the data directory passed its check).
              Effect.die(error)
        )
      )
    })
).pipe(Command.withDescription("Start the OpenCode HTTP server"))
