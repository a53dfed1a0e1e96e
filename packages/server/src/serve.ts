export * as Serve from "./serve.js"

import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { HttpApiBuilder, HttpMiddleware, HttpServer } from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Config, Core, EnvFlag, MessageProjection, ModelDatabase, Paths, Storage } from "@opencode-ai/core"
import { Console, Context, Effect, Layer, Logger, type LogLevel, Option, Scope } from "effect"
import { DataDirCheck } from "./data-dir-check.js"
import { IdleCollection } from "./idle-collection.js"
import { LogOutput } from "./log-output.js"
import { BasicAuth } from "./middleware/basic-auth.js"
import { RequestLog } from "./middleware/request-log.js"
import { RequestOrigin } from "./middleware/request-origin.js"
import { MetricsRoute } from "./observability/metrics-route.js"
import { TraceExport } from "./observability/trace-export.js"
import type { PtyTickets } from "./pty-tickets.js"
import { RequestContext } from "./request-context.js"
import { Router } from "./router.js"
import { ServerVersion } from "./server-version.js"
import type { EventStreams } from "./sse/event-streams.js"
import { StartupError } from "./startup-error.js"
import { StartupSummary } from "./startup-summary.js"

export interface Options {
  readonly port: number
  readonly hostname: string
  /** Log to stderr; otherwise logs go to `<data>/log/opencode.log`. */
  readonly printLogs: boolean
  readonly logLevel: LogLevel.LogLevel
  /**
   * How log lines look (`--log-format`, see LogOutput): default `logfmt` in the log file, and on
   * stderr `pretty` when it is a terminal, `logfmt` otherwise.
   */
  readonly logFormat?: LogOutput.Format | undefined
  /** The log file's rotation (default `LogOutput.defaultRotation`: 10 MiB, 5 rotated files kept). */
  readonly logRotation?: LogOutput.Rotation | undefined
  /** The instance directory (default location of new sessions); defaults to the working directory. */
  readonly directory?: string
  /**
   * The environment (XDG dirs, `OPENCODE_*`, `{env:…}` in the config, `OPENCODE_MODELS_URL` and
   * `OPENCODE_DISABLE_MODELS_FETCH` for the model database); defaults to `process.env`.
   */
  readonly env?: Record<string, string | undefined>
  /** The configuration to serve with instead of reading `opencode.json(c)` (e.g. `Config.layerTest`). */
  readonly config?: Layer.Layer<Config.Service, Config.ConfigError>
  /** The SSE streams' heartbeat period and live buffer size (defaults: 15 s, `LiveBus.defaultCapacity`). */
  readonly eventStreams?: EventStreams.Options
  /** Origins allowed to call the server from a browser besides its own (`--cors`), added to `server.cors`. */
  readonly cors?: ReadonlyArray<string>
  /**
   * Run as a cluster runner at this `host:port` (`--runner-address`; see ClusterRunner): it stands
   * for `OPENCODE_RUNNER_ADDRESS`. Default: a runner only when that variable is set.
   */
  readonly runnerAddress?: string | undefined
  /** The PTY connect tickets' lifetime (default `PtyTickets.defaultLifetime`, 60 s). */
  readonly ptyTickets?: PtyTickets.Options
  /** Whether the session inspector page is served at `/`; `--no-ui` turns it off. Default true. */
  readonly ui?: boolean
}

/**
 * The network listener: Server's router over Core on `hostname:port`. The layer resolves once the
 * socket is listening. Closing it stops accepting connections, lets in-flight requests finish and
 * then closes the database. An invalid `opencode.json(c)` fails the layer with a ConfigError (file,
 * line, reason) before the database is opened or the port is bound.
 */
export const layer = (options: Options) => {
  const env =
    options.runnerAddress === undefined
      ? (options.env ?? process.env)
      : { ...(options.env ?? process.env), OPENCODE_RUNNER_ADDRESS: options.runnerAddress }
  const paths = Paths.fromEnv(env, os.homedir())
  const core = Core.layer({
    databaseFile: paths.databaseFile,
    directory: options.directory ?? process.cwd(),
    env,
    // The server stays current: the cached model database at start, refreshed in the background.
    models: ModelDatabase.fromEnv(env, os.homedir()),
    ...(options.config === undefined ? {} : { config: options.config })
  })
  // Core is provided last so it is built first and released last: on shutdown the listener stops
  // accepting and drains in-flight requests while the database is still open.
  const listener = Layer.unwrapEffect(
    Effect.sync(() => {
      const server = http.createServer()
      return Layer.scopedDiscard(closeDrainedConnections(server)).pipe(
        Layer.provideMerge(NodeHttpServer.layer(() => server, { port: options.port, host: options.hostname }))
      )
    })
  )
  // The router learns the bound address (the port may have been 0) for its Host and Origin rules.
  const router = Layer.unwrapEffect(
    Effect.map(HttpServer.HttpServer, ({ address }) =>
      Router.layer({
        auth: BasicAuth.fromEnv(env),
        eventStreams: options.eventStreams,
        ptyTickets: options.ptyTickets,
        ui: options.ui ?? true,
        origin: {
          cors: options.cors,
          ...(address._tag === "TcpAddress" ? { listener: { hostname: address.hostname, port: address.port } } : {})
        }
      })
    )
  )
  // Shutdown's first and last log lines: released first and last (built last and first).
  const stopping = Layer.scopedDiscard(Effect.addFinalizer(() => Effect.logInfo("opencode server shutting down")))
  const stopped = Layer.scopedDiscard(Effect.addFinalizer(() => Effect.logInfo("opencode server stopped")))
  return stopping.pipe(
    Layer.provideMerge(
      served.pipe(
        Layer.provide(router),
        Layer.provideMerge(listener),
        // Core's services stay in the output: `run` reads the configuration for its start-up summary.
        Layer.provideMerge(core),
        // Requests are traced only when spans are exported (an OTLP endpoint is configured): otherwise
        // nothing reads a request's span, and building it (its URL, its headers as attributes) is a
        // sizeable share of a small request's CPU. Scrapes of /metrics are never traced. The OTLP
        // tracer (when configured) is built first and closed last.
        HttpMiddleware.withTracerDisabledWhen(
          Option.isSome(TraceExport.fromEnv(env)) ? MetricsRoute.isScrape : () => true
        )
      )
    ),
    Layer.provide(stopped),
    Layer.provide(TraceExport.layer({ env, serviceVersion: ServerVersion.current }))
  )
}

/**
 * The API on the listener, as `HttpApiBuilder.serve(RequestLog.middleware)` serves it, except that
 * each request's fiber starts from the platform's services only (RequestContext) rather than every
 * service of the host.
 */
const served = Layer.scopedDiscard(
  Effect.gen(function* () {
    const app = yield* HttpApiBuilder.httpApp
    const server = yield* HttpServer.HttpServer
    yield* Effect.mapInputContext(
      server.serve(app, RequestLog.middleware),
      (context: Context.Context<RequestContext.Services | Scope.Scope>) =>
        Context.add(RequestContext.pick(context), Scope.Scope, Context.get(context, Scope.Scope))
    )
  })
).pipe(Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]))

/**
 * `server.close()` stops accepting and waits for open connections, but a keep-alive connection whose
 * request finishes after close began would linger until its idle timeout. While shutting down, idle
 * connections are closed as soon as their in-flight request completes.
 */
const closeDrainedConnections = (server: http.Server) =>
  Effect.addFinalizer(() =>
    Effect.sync(() => {
      const timer = setInterval(() => server.closeIdleConnections(), 25)
      server.once("close", () => clearInterval(timer))
    })
  )

/** Logs go to stderr with `--print-logs`, otherwise to `<data>/log/opencode.log` (see LogOutput). */
const logger = (options: Options) => {
  const env = options.env ?? process.env
  return LogOutput.layer({
    destination: options.printLogs
      ? "stderr"
      : { file: path.join(Paths.fromEnv(env, os.homedir()).dataDir, "log", "opencode.log") },
    format: options.logFormat,
    rotation: options.logRotation,
    env
  })
}

/**
 * Runs the server until interrupted (interruption closes the listener, lets in-flight requests finish,
 * then closes the database). Before anything is opened it checks the data directory and, unless
 * `OPENCODE_DATABASE_URL` selects PostgreSQL, the SQLite file (`DataDirCheck`). Once listening it prints the start-up summary (`StartupSummary`) to stdout,
 * its first line `opencode server listening on <url>`, and warns on stderr when it listens beyond
 * loopback without a password. Fails, before listening, with the expected start-up failures: a
 * `DataDirError`, a `ConfigError` (an invalid `opencode.json(c)`, `auth.json` or database URL), a
 * `DatabaseUnavailable` (the selected PostgreSQL cannot be reached or migrated), or a `ListenError`
 * (the port is taken, the address is unavailable…); the CLI reports each in one line. While it
 * serves, a quiet spell after a busy one gives V8's unused heap back (`IdleCollection`), the read
 * caches' memory included, unless `OPENCODE_DISABLE_IDLE_COLLECTION` is `1` or `true`.
 */
export const run = (options: Options) => {
  const env = options.env ?? process.env
  const paths = Paths.fromEnv(env, os.homedir())
  const serving = Effect.gen(function* () {
    const address = yield* HttpServer.HttpServer.pipe(Effect.map((server) => server.address))
    const url = address._tag === "TcpAddress" ? StartupSummary.url(address) : address.path
    const config = yield* Config.Service
    const database = yield* Storage.Selected
    const auth = BasicAuth.fromEnv(env)
    const summary = StartupSummary.lines({
      version: ServerVersion.current,
      url,
      dataDir: paths.dataDir,
      database: Storage.describe(
        database._tag === "Sqlite" ? Storage.Selection.Sqlite({ filename: path.resolve(database.filename) }) : database
      ),
      configSources: config.sources,
      providers: config.providers.map((provider) => ({ id: provider.id, models: provider.models.length })),
      authUser: Option.getOrUndefined(Option.map(auth, (credentials) => credentials.username))
    })
    yield* Console.log(summary.join("\n"))
    yield* Effect.logInfo("opencode server listening").pipe(Effect.annotateLogs({ url }))
    if (address._tag === "TcpAddress" && !RequestOrigin.isLoopback(address.hostname) && Option.isNone(auth)) {
      const warning = `opencode: warning: listening on ${url}, which is not a loopback address, with no password: anyone who can reach it can run commands as this user. Set OPENCODE_SERVER_PASSWORD.`
      yield* Console.error(warning)
      yield* Effect.logWarning(warning)
    }
    if (!EnvFlag.isOn(env.OPENCODE_DISABLE_IDLE_COLLECTION))
      yield* Effect.forkScoped(
        // Caches holding under a million characters are dropped without a collection of their own.
        IdleCollection.run({ release: () => MessageProjection.releaseCaches() >= 1_000_000 })
      )
    return yield* Effect.never
  }).pipe(
    Effect.provide(layer(options)),
    Effect.catchTag("ServeError", (error) => Effect.fail(StartupError.listenFailed(error, options))),
    Effect.provide(logger(options)),
    Logger.withMinimumLogLevel(options.logLevel),
    Effect.scoped
  )
  // The check comes first: the logger writes under the data directory.
  return Effect.zipRight(DataDirCheck.run(paths, { databaseFile: !Storage.postgresFromEnv(env) }), serving)
}
