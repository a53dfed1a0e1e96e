export * as OpenCode from "./opencode.js"

import * as os from "node:os"
import * as path from "node:path"
import { FetchHttpClient } from "@effect/platform"
import { OpencodeClient } from "@opencode-ai/client/effect"
import { type Config, Paths } from "@opencode-ai/core"
import { type EventStreams, type PtyEnvironment, WebHandler } from "@opencode-ai/server"
import { Effect, ExecutionStrategy, Exit, type Layer, Schema, Scope } from "effect"

export interface EmbeddedOptions {
  /** The SQLite file. Defaults to the XDG data dir's `opencode.db` (or `OPENCODE_DB`). */
  readonly databaseFile?: string
  /** The instance directory: the default Location of new sessions. Defaults to the working directory. */
  readonly directory?: string
  /** The global config directory. Defaults to `$XDG_CONFIG_HOME/opencode` (`~/.config/opencode`) of `env`. */
  readonly configDir?: string
  /** The environment for config lookup and `{env:…}` substitution. Defaults to `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** The configuration to use instead of reading `opencode.json(c)` (e.g. `Config.layerTest(...)`). */
  readonly config?: Layer.Layer<Config.Service, Config.ConfigError>
  /** The event streams' heartbeat period and live buffer size (defaults: 15 s, `LiveBus.defaultCapacity`). */
  readonly eventStreams?: EventStreams.Options
  /**
   * The host's PTY Environment: variables new PTYs get over the caller's `env` (and under the forced
   * `TERM` and `OPENCODE_TERMINAL`), asked for each PTY with its Location directory and working
   * directory. Default: none.
   */
  readonly ptyEnvironment?: PtyEnvironment.Interface
}

/**
 * Embedded OpenCode: the shared OpenCode Client capabilities (`sessions`, `health`, `location`)
 * on one object, plus what only a same-process host can offer.
 */
export interface Embedded extends OpencodeClient.Service {
  /**
   * A `fetch` served by this host's in-memory router, for fetch-based callers such as the Promise
   * client: `createOpencodeClient({ baseUrl: OpenCode.embeddedBaseUrl, fetch: host.fetch })`.
   */
  readonly fetch: typeof globalThis.fetch
}

/** Two live hosts on one database file would run two execution coordinators over the same sessions. */
export class StorageInUseError extends Schema.TaggedError<StorageInUseError>()("StorageInUseError", {
  databaseFile: Schema.String,
  message: Schema.String
}) {}

/** The origin embedded requests are addressed to; it is never resolved or connected to. */
export const embeddedBaseUrl = "http://opencode.embedded"

const openFiles = new Set<string>()

/** Claims a database file for this process's lifetime of the scope. */
const claim = (databaseFile: string) =>
  Effect.acquireRelease(
    Effect.suspend(() =>
      openFiles.has(databaseFile)
        ? Effect.fail(
            new StorageInUseError({
              databaseFile,
              message: `Another embedded OpenCode host in this process already uses ${databaseFile}`
            })
          )
        : Effect.sync(() => void openFiles.add(databaseFile))
    ),
    () => Effect.sync(() => void openFiles.delete(databaseFile))
  )

/**
 * Starts Embedded OpenCode: Core and Server's router in memory, behind the same Effect client the
 * network uses (only the HttpClient transport differs). No listener is opened.
 *
 * Resolves once the database is open and migrated. Fails with `StorageInUseError` when another host
 * of this process uses the same database file, and with the `ConfigError` of an invalid
 * `opencode.json(c)` (file, line, reason). Closing the Scope releases the database, the router
 * and its fibers.
 */
export const embedded = Effect.fn("OpenCode.embedded")(function* (
  options: EmbeddedOptions = {}
): Effect.fn.Return<Embedded, StorageInUseError | Config.ConfigError, Scope.Scope> {
  const env = options.env ?? process.env
  const databaseFile = path.resolve(options.databaseFile ?? Paths.fromEnv(env, os.homedir()).databaseFile)
  // The host lives in a child of the caller's scope, so that a host that fails to start (e.g. on an
  // invalid config) gives its database file back at once instead of when the caller's scope closes.
  const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
  const handler = yield* Effect.zipRight(
    claim(databaseFile),
    WebHandler.make({
      databaseFile,
      directory: path.resolve(options.directory ?? process.cwd()),
      env,
      ...(options.configDir === undefined ? {} : { configDir: options.configDir }),
      ...(options.config === undefined ? {} : { config: options.config }),
      ...(options.eventStreams === undefined ? {} : { eventStreams: options.eventStreams }),
      ...(options.ptyEnvironment === undefined ? {} : { ptyEnvironment: options.ptyEnvironment })
    })
  ).pipe(
    Scope.extend(scope),
    Effect.onError((cause) => Scope.close(scope, Exit.failCause(cause)))
  )
  const fetch: typeof globalThis.fetch = (input, init) => handler(new Request(input, init))
  const client = yield* OpencodeClient.make({ baseUrl: embeddedBaseUrl }).pipe(
    Effect.provide(FetchHttpClient.layer),
    Effect.provideService(FetchHttpClient.Fetch, fetch)
  )
  return { ...client, fetch }
})
