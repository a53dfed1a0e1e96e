export * as OpenCode from "./opencode.js"

import * as os from "node:os"
import * as path from "node:path"
import { FetchHttpClient } from "@effect/platform"
import { OpencodeClient } from "@opencode-ai/client/effect"
import { Config, ConfigErrors, ConfigInfo, type Core, Paths, Storage, ToolRegistry } from "@opencode-ai/core"
import { type EventStreams, type PtyEnvironment, WebHandler } from "@opencode-ai/server"
import { Context, Effect, ExecutionStrategy, Exit, Layer, ParseResult, Schema, Scope } from "effect"
import { HostTool } from "./host-tool.js"

export interface EmbeddedOptions {
  /** The SQLite file. Defaults to the XDG data dir's `opencode.db` (or `OPENCODE_DB`). */
  readonly databaseFile?: string
  /** The instance directory: the default Location of new sessions. Defaults to the working directory. */
  readonly directory?: string
  /** The global config directory. Defaults to `$XDG_CONFIG_HOME/opencode` (`~/.config/opencode`) of `env`. */
  readonly configDir?: string
  /** The environment for config lookup and `{env:…}` substitution. Defaults to `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>
  /**
   * The configuration to use instead of reading `opencode.json(c)`: no config file is read, and
   * `OPENCODE_CONFIG`, `OPENCODE_CONFIG_CONTENT` and the project's files are ignored.
   * - a document in the `opencode.json` shape (`ConfigInfo.Info`), already as values: it is checked
   *   against that shape and resolved against the bundled model database exactly as a file would be
   *   (no `{env:…}`/`{file:…}` substitution); an invalid one fails creation with a ConfigError whose
   *   `file` is `<embedded config>`;
   * - or a `Config` layer (e.g. `Config.layerTest(...)`), used as it is.
   */
  readonly config?: ConfigInfo.Info | Layer.Layer<Config.Service, Config.ConfigError>
  /** The event streams' heartbeat period and live buffer size (defaults: 15 s, `LiveBus.defaultCapacity`). */
  readonly eventStreams?: EventStreams.Options
  /**
   * Host Tools (see `HostTool`), registered for the host's whole life, before it resumes any session.
   * An invalid one fails creation with `InvalidHostToolError`.
   */
  readonly tools?: ReadonlyArray<HostTool.HostTool>
  /**
   * The host's PTY Environment: variables new PTYs get over the caller's `env` (and under the forced
   * `TERM` and `OPENCODE_TERMINAL`), asked for each PTY with its Location directory and working
   * directory. Default: none.
   */
  readonly ptyEnvironment?: PtyEnvironment.Interface
}

/** What `config` errors name as their file when the document was given as a value. */
export const embeddedConfigSource = "<embedded config>"

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
  /** Host Tools added while the host runs (see `HostTool`). */
  readonly tools: {
    /**
     * Offers `tool` to the model from the next Step on, until the caller's Scope closes (then the
     * previous tool of that name, if any, is offered again). A Step already running keeps its tools.
     */
    readonly register: (tool: HostTool.HostTool) => Effect.Effect<void, HostTool.InvalidHostToolError, Scope.Scope>
  }
  /**
   * The Core services behind this host (its event bus, tool registry, sessions, ...), for in-process
   * work the HTTP surface has no operation for. Same process only; valid while the host's Scope is
   * open. The client capabilities above are the stable surface: prefer them.
   */
  readonly services: Context.Context<Core.Services>
}

/** The Embedded OpenCode of the context: `yield* OpenCode.Service`, provided by {@link layer}. */
export class Service extends Context.Tag("@opencode-ai/sdk-next/OpenCode")<Service, Embedded>() {}

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

/** The `config` option as a Config layer: a document is checked against the `opencode.json` shape, then resolved. */
const configLayer = (
  config: NonNullable<EmbeddedOptions["config"]>,
  env: Readonly<Record<string, string | undefined>>
): Layer.Layer<Config.Service, Config.ConfigError> => {
  if (Layer.isLayer(config)) return config as Layer.Layer<Config.Service, Config.ConfigError>
  return Layer.unwrapEffect(
    Schema.decodeUnknown(ConfigInfo.Info, { errors: "all", onExcessProperty: "error" })(config).pipe(
      Effect.mapError((error) => {
        const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
        return ConfigErrors.at(
          { file: embeddedConfigSource, line: 0, column: 0 },
          issue?.message ?? error.message,
          issue?.path.map(String).join(".")
        )
      }),
      Effect.map((info) =>
        Config.layerTest(info, {
          env,
          dataDir: Paths.fromEnv(env, os.homedir()).dataDir,
          source: embeddedConfigSource
        })
      )
    )
  )
}

/**
 * Starts Embedded OpenCode: Core and Server's router in memory, behind the same Effect client the
 * network uses (only the HttpClient transport differs). No listener is opened.
 *
 * Resolves once the database is open and migrated and the Host Tools are registered. Fails with
 * `StorageInUseError` when another host of this process uses the same database file, with the
 * `ConfigError` of an invalid `opencode.json(c)` (file, line, reason) or `config` document, and with
 * `InvalidHostToolError` for a tool a provider would refuse. Closing the Scope releases the database,
 * the router, the tools and its fibers. A streamed response (`events.subscribe`, `sessions.events`)
 * keeps its request alive after the effect that opened it returned, until the stream ends or its
 * consumer stops; closing the host's Scope ends it.
 */
export const embedded = Effect.fn("OpenCode.embedded")(function* (
  options: EmbeddedOptions = {}
): Effect.fn.Return<Embedded, StorageInUseError | Config.ConfigError | HostTool.InvalidHostToolError, Scope.Scope> {
  const env = options.env ?? process.env
  const databaseFile = path.resolve(options.databaseFile ?? Paths.fromEnv(env, os.homedir()).databaseFile)
  const tools = yield* Effect.forEach(options.tools ?? [], HostTool.validate)
  // The host lives in a child of the caller's scope, so that a host that fails to start (e.g. on an
  // invalid config) gives its database file back at once instead of when the caller's scope closes.
  const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
  const host = yield* Effect.zipRight(
    claim(databaseFile),
    WebHandler.start({
      databaseFile,
      // The embedded default: this SQLite file, whatever OPENCODE_DATABASE_URL says.
      database: Storage.Selection.Sqlite({ filename: databaseFile }),
      // And first-come leases, whatever OPENCODE_RUNNER_ADDRESS says: it opens no port.
      runner: false,
      directory: path.resolve(options.directory ?? process.cwd()),
      env,
      tools: tools.map((tool) => tool.tool),
      ...(options.configDir === undefined ? {} : { configDir: options.configDir }),
      ...(options.config === undefined ? {} : { config: configLayer(options.config, env) }),
      ...(options.eventStreams === undefined ? {} : { eventStreams: options.eventStreams }),
      ...(options.ptyEnvironment === undefined ? {} : { ptyEnvironment: options.ptyEnvironment })
    })
  ).pipe(
    // Only PostgreSQL fails this way, and the embedded host always opens its SQLite file.
    Effect.catchTag("Storage/DatabaseUnavailable", Effect.die),
    Scope.extend(scope),
    Effect.onError((cause) => Scope.close(scope, Exit.failCause(cause)))
  )
  const fetch: typeof globalThis.fetch = (input, init) => host.handler(new Request(input, init))
  const client = yield* OpencodeClient.make({ baseUrl: embeddedBaseUrl }).pipe(
    Effect.provide(FetchHttpClient.layer),
    Effect.provideService(FetchHttpClient.Fetch, fetch)
  )
  const registry = Context.get(host.services, ToolRegistry.Service)
  const register = (tool: HostTool.HostTool) =>
    Effect.flatMap(HostTool.validate(tool), (valid) => registry.register(valid.tool))
  return { ...client, fetch, tools: { register }, services: host.services }
})

/**
 * Embedded OpenCode as a Layer providing {@link Service}: {@link embedded} with the same options,
 * built in the layer's scope (the host runs until the layer's scope closes) and failing as it does.
 *
 * ```ts
 * const program = Effect.gen(function* () {
 *   const opencode = yield* OpenCode.Service
 *   return yield* opencode.sessions.create()
 * })
 * Effect.runPromise(program.pipe(Effect.provide(OpenCode.layer({ databaseFile: "/tmp/opencode.db" }))))
 * ```
 */
export const layer = (
  options: EmbeddedOptions = {}
): Layer.Layer<Service, StorageInUseError | Config.ConfigError | HostTool.InvalidHostToolError> =>
  Layer.scoped(Service, embedded(options))
