export * as Serve from "./serve.js"

import { HttpApiBuilder, HttpServer, PlatformLogger } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Core, Paths } from "@opencode-ai/core"
import { Console, Effect, Layer, Logger, type LogLevel } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { BasicAuth } from "./middleware/basic-auth.js"
import { Router } from "./router.js"

export interface Options {
  readonly port: number
  readonly hostname: string
  /** Log to stderr; otherwise logs go to `<data>/log/opencode.log`. */
  readonly printLogs: boolean
  readonly logLevel: LogLevel.LogLevel
  /** The instance directory (default location of new sessions); defaults to the working directory. */
  readonly directory?: string
  readonly env?: Record<string, string | undefined>
}

/**
 * The network listener: Server's router over Core on `hostname:port`. The layer resolves once the
 * socket is listening. Closing it stops accepting connections, lets in-flight requests finish and
 * then closes the database.
 */
export const layer = (options: Options) => {
  const env = options.env ?? process.env
  const paths = Paths.fromEnv(env, os.homedir())
  const core = Core.layer({ databaseFile: paths.databaseFile, directory: options.directory ?? process.cwd() })
  return HttpApiBuilder.serve().pipe(
    Layer.provide(Router.layer({ auth: BasicAuth.fromEnv(env) })),
    Layer.provide(core),
    Layer.provideMerge(NodeHttpServer.layer(() => http.createServer(), { port: options.port, host: options.hostname }))
  )
}

/** Logs go to stderr with `--print-logs`, otherwise to `<data>/log/opencode.log`. */
const logger = (options: Options) => {
  if (options.printLogs) return Logger.replace(Logger.defaultLogger, Logger.withLeveledConsole(Logger.logfmtLogger))
  const file = path.join(Paths.fromEnv(options.env ?? process.env, os.homedir()).dataDir, "log", "opencode.log")
  return Layer.unwrapEffect(
    Effect.sync(() => {
      fs.mkdirSync(path.dirname(file), { recursive: true })
      return Logger.replaceScoped(Logger.defaultLogger, PlatformLogger.toFile(Logger.logfmtLogger, file))
    })
  )
}

/** Runs the server until interrupted, printing the URL it listens on to stdout. */
export const run = (options: Options) =>
  Effect.gen(function* () {
    const address = yield* HttpServer.HttpServer.pipe(Effect.map((server) => server.address))
    const url = address._tag === "TcpAddress" ? `http://${address.hostname}:${address.port}` : address.path
    yield* Console.log(`opencode server listening on ${url}`)
    return yield* Effect.never
  }).pipe(
    Effect.provide(layer(options)),
    Effect.provide(logger(options)),
    Logger.withMinimumLogLevel(options.logLevel),
    Effect.scoped
  )
