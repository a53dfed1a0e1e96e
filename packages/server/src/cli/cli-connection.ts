export * as CliConnection from "./cli-connection.js"

import * as os from "node:os"
import * as path from "node:path"
import { Options as CliOptions } from "@effect/cli"
import { FetchHttpClient, type FileSystem, HttpClient, HttpClientRequest } from "@effect/platform"
import { OpencodeClient } from "@opencode-ai/client/effect"
import { Paths, Traced } from "@opencode-ai/core"
import { Effect, FiberRef, HashSet, Option, type Scope } from "effect"
import { LogOutput } from "../log-output.js"
import { WebHandler } from "../web-handler.js"
import { CliError } from "./cli-error.js"
import { ExitCode } from "./exit-code.js"

/**
 * How a CLI command reaches sessions: over HTTP to a running `opencode serve` (`--attach URL`), or
 * embedded, with Server's router in memory over its own Core on the same data directory (no port
 * opened). Both use the same generated Effect client; only its HttpClient's `fetch` differs.
 *
 * ```
 *   --attach URL ──► OpencodeClient ─► fetch (network) ─► opencode serve ─► Core ─► opencode.db
 *   (none)       ──► OpencodeClient ─► fetch = WebHandler (in memory)    ─► Core ─► opencode.db
 * ```
 */

/** `--attach URL`: the server to talk to; embedded when absent. */
export const attach = CliOptions.text("attach").pipe(
  CliOptions.optional,
  CliOptions.withDescription("Talk to a running `opencode serve` at this URL instead of running embedded")
)

/** `--password`: the server's password (default `OPENCODE_SERVER_PASSWORD`); only with `--attach`. */
export const password = CliOptions.text("password").pipe(
  CliOptions.optional,
  CliOptions.withDescription("The server's password with --attach (default: OPENCODE_SERVER_PASSWORD)")
)

export interface Options {
  readonly attach: Option.Option<string>
  readonly password: Option.Option<string>
  /** Embedded only: the instance directory, the default Location of new sessions; default the working directory. */
  readonly directory?: string | undefined
  /** The environment (`OPENCODE_SERVER_*`, XDG dirs, `OPENCODE_DB`); default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
}

export interface Connection {
  readonly client: OpencodeClient.Service
  /** What the connection talks to, for messages: the URL, or `embedded (<database file>)`. */
  readonly target: string
  readonly embedded: boolean
}

/** The origin embedded requests are addressed to; it is never resolved or connected to. */
const embeddedBaseUrl = "http://opencode.embedded"

const clientOver = (baseUrl: string, fetch: typeof globalThis.fetch, auth: Option.Option<readonly [string, string]>) =>
  Effect.gen(function* () {
    const http = yield* HttpClient.HttpClient
    const authorized = Option.match(auth, {
      onNone: () => http,
      onSome: ([username, secret]) => http.pipe(HttpClient.mapRequest(HttpClientRequest.basicAuth(username, secret)))
    })
    return yield* OpencodeClient.make({ baseUrl }).pipe(Effect.provideService(HttpClient.HttpClient, authorized))
  }).pipe(Effect.provide(FetchHttpClient.layer), Effect.provideService(FetchHttpClient.Fetch, fetch))

/** `--attach` as a URL: `host:port` gets `http://`; anything but http(s) is a usage error. */
const parseUrl = (given: string) => {
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(given) ? given : `http://${given}`
  try {
    const url = new URL(text)
    if (url.protocol === "http:" || url.protocol === "https:") return Effect.succeed(url.toString().replace(/\/$/, ""))
  } catch {}
  return CliError.fail(ExitCode.usage, `--attach ${given}: expected a URL such as http://127.0.0.1:4096`)
}

/**
 * Embedded logs go to `<data>/log/opencode.log`, as `opencode serve`'s do, so that nothing but the
 * session reaches the terminal.
 */
const fileLogger = (env: Readonly<Record<string, string | undefined>>) => {
  const file = path.join(Paths.fromEnv({ ...env }, os.homedir()).dataDir, "log", "opencode.log")
  return LogOutput.fileLogger(file).pipe(
    Effect.flatMap((logger) => Effect.locallyScoped(FiberRef.currentLoggers, HashSet.make(logger))),
    Effect.catchAll((error) => CliError.fail(ExitCode.failed, `cannot open the log file ${file}: ${error.message}`))
  )
}

/**
 * Opens the connection for the caller's Scope. With `--attach`, checks the server answers
 * (`GET /api/health`) first: a server that cannot be reached, or refuses the credentials, fails with
 * exit code 4. Embedded, it opens Core on the data directory (`OPENCODE_DB` or the XDG data dir) with
 * the cached model database (never fetched) and without Recovery: the command drives only the session
 * it was asked about, never other sessions found waiting in the database. An invalid
 * `opencode.json(c)` fails with exit code 2. Closing the Scope closes the database (embedded).
 */
export const open = Traced.fn("CliConnection.open")(function* (
  options: Options
): Effect.fn.Return<Connection, CliError.Failure, Scope.Scope | FileSystem.FileSystem> {
  const env = options.env ?? process.env
  if (Option.isSome(options.attach)) {
    const url = yield* parseUrl(options.attach.value)
    const secret = Option.orElse(options.password, () => Option.fromNullable(env.OPENCODE_SERVER_PASSWORD || undefined))
    const auth = Option.map(secret, (value) => [env.OPENCODE_SERVER_USERNAME || "opencode", value] as const)
    const client = yield* clientOver(url, globalThis.fetch, auth)
    const connection = { client, target: url, embedded: false }
    yield* client.health.get().pipe(Effect.mapError(explain(connection)))
    return connection
  }
  if (Option.isSome(options.password)) {
    return yield* CliError.fail(ExitCode.usage, "--password is only used with --attach")
  }
  const paths = Paths.fromEnv({ ...env }, os.homedir())
  const databaseFile = path.resolve(paths.databaseFile)
  yield* fileLogger(env)
  const host = yield* WebHandler.start({
    databaseFile,
    directory: path.resolve(options.directory ?? process.cwd()),
    env,
    models: { cacheFile: paths.modelsFile },
    recover: false,
    // An embedded one-shot host opens no port: never a cluster runner, whatever the environment says.
    runner: false
  }).pipe(
    Effect.catchTags({
      ConfigError: (error) => CliError.fail(ExitCode.config, `invalid configuration: ${error.message}`),
      "Storage/DatabaseUnavailable": (error) => CliError.fail(ExitCode.network, error.message)
    })
  )
  const fetch: typeof globalThis.fetch = (input, init) => host.handler(new Request(input, init))
  const client = yield* clientOver(embeddedBaseUrl, fetch, Option.none())
  return { client, target: `embedded (${databaseFile})`, embedded: true }
})

/** Fields of the client's failures this module reads (they are tagged errors, HttpClientErrors or ParseErrors). */
interface ClientFailure {
  readonly _tag: string
  readonly message?: unknown
  readonly reason?: unknown
  readonly cause?: unknown
  readonly response?: { readonly status: number }
}

/** The innermost message of a transport failure (`fetch failed` hides `connect ECONNREFUSED …`). */
const rootMessage = (error: unknown): string => {
  let current = error
  let message = ""
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const candidate = (current as { message?: unknown }).message
    if (typeof candidate === "string" && candidate !== "") message = candidate
    current = (current as { cause?: unknown }).cause
  }
  return message
}

/**
 * A client failure as a CliFailure: transport failures and refused credentials are code 4, the
 * API's not-found and bad-input answers code 2, anything else code 1. The message is one line.
 */
export const explain =
  (connection: Pick<Connection, "target" | "embedded">) =>
  (error: unknown): CliError.Failure => {
    const failure = (typeof error === "object" && error !== null ? error : { _tag: "Unknown" }) as ClientFailure
    const message = typeof failure.message === "string" ? failure.message.split("\n")[0] : String(error)
    switch (failure._tag) {
      case "RequestError":
        return new CliError.Failure({
          exitCode: ExitCode.network,
          message: `cannot reach the server at ${connection.target}: ${rootMessage(failure.cause) || message}`
        })
      case "UnauthorizedError":
        return new CliError.Failure({
          exitCode: ExitCode.network,
          message: `the server at ${connection.target} refused the credentials: set OPENCODE_SERVER_PASSWORD or pass --password`
        })
      case "SessionNotFoundError":
      case "MessageNotFoundError":
      case "InvalidRequestError":
      case "InvalidCursorError":
      case "ConflictError":
        return new CliError.Failure({ exitCode: ExitCode.usage, message: message ?? failure._tag })
      case "ResponseError":
        return new CliError.Failure({
          exitCode: failure.response?.status === 401 ? ExitCode.network : ExitCode.failed,
          message: `unexpected answer from ${connection.target}: ${message}`
        })
      default:
        return new CliError.Failure({ exitCode: ExitCode.failed, message: message ?? failure._tag })
    }
  }
