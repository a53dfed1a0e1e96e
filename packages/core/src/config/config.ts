export * as Config from "./config.js"

/**
 * The configuration: `opencode.json(c)` documents read once at startup, merged, validated and
 * resolved into what the runtime needs (providers and models, the default model, agents, limits).
 * An invalid document fails the layer with a {@link ConfigError} naming the file, line and key, so a
 * bad config stops startup instead of failing a request later. An unknown key only logs a warning.
 *
 * Sources, in merge order (a later one overrides an earlier one):
 * 1. global: `<configDir>/opencode.json`, then `<configDir>/opencode.jsonc`;
 * 2. `$OPENCODE_CONFIG`: a file path (relative to the instance directory); it must exist;
 * 3. project: `opencode.json`, then `opencode.jsonc`, in each directory from the worktree root down
 *    to the instance directory (so the nearest wins). The worktree root is `worktreeRoot`, else the
 *    nearest ancestor holding `.git`, else the instance directory alone. Skipped entirely when
 *    `OPENCODE_DISABLE_PROJECT_CONFIG` is "1" or "true" (any case);
 * 4. `$OPENCODE_CONFIG_CONTENT`: an inline document (`{file:…}` relative to the instance directory).
 * A missing file is skipped (except `$OPENCODE_CONFIG`), and a file is read once even when two
 * sources name it.
 *
 * Merge ({@link merge}): objects merge key by key, recursively; anything else (strings, numbers,
 * arrays) is replaced by the later value; except `instructions`, which concatenates (duplicates
 * dropped, first occurrence kept), as upstream, and `reference.<name>`, which a later document
 * replaces whole (a reference is local or git by its keys).
 */

import * as nodePath from "node:path"
import { FileSystem } from "@effect/platform"
import type { Model as ModelSchema } from "@opencode-ai/schema"
import { Context, Effect, Layer, Option, Stream } from "effect"
import * as CredentialStore from "../credential/credential-store.js"
import { Upward } from "../location/upward.js"
import { Traced } from "../observability/traced.js"
import * as AgentCatalog from "./agent-catalog.js"
import * as Catalog from "./catalog.js"
import * as ConfigErrors from "./config-error.js"
import type * as ConfigInfo from "./config-info.js"
import * as ConfigSource from "./config-source.js"
import { EnvFlag } from "./env-flag.js"
import * as ModelDatabase from "./model-database.js"
import * as ModelsDev from "./models-dev.js"

export { ConfigError } from "./config-error.js"

export interface Options {
  /** The instance directory: where the project search starts. */
  readonly directory: string
  /** The environment: `OPENCODE_CONFIG`, `OPENCODE_CONFIG_CONTENT`, `OPENCODE_DISABLE_PROJECT_CONFIG`, `{env:…}`. */
  readonly env: Readonly<Record<string, string | undefined>>
  /** The global config directory (`Paths.configDir`). */
  readonly configDir: string
  /** Where the project search stops; see the module doc for the default. */
  readonly worktreeRoot?: string
  /** The data directory (`Paths.dataDir`), for the agents' managed-output and plan-file rules. */
  readonly dataDir?: string
}

/** `tool_output`, with defaults: 2000 lines, 50 KiB (upstream's truncation limits). */
export interface ToolOutput {
  readonly maxLines: number
  readonly maxBytes: number
}

/** `compaction`, with defaults: automatic compaction and pruning on. */
export interface Compaction {
  readonly auto: boolean
  readonly prune: boolean
  readonly reserved?: number
}

/** The configuration as the runtime uses it. */
export interface Resolved {
  /** The providers requests can go to: the model database merged under `provider` (see Catalog). */
  readonly providers: ReadonlyArray<Catalog.Provider>
  /** Providers offered but not usable here, each with the reason (see Catalog). */
  readonly unavailable: ReadonlyArray<Catalog.UnavailableProvider>
  /** `model`, checked; else the Catalog's default (see `Catalog.model`); none when no model is offered. */
  readonly model: Option.Option<ModelSchema.ModelRef>
  /** `small_model`, checked; none when absent. */
  readonly smallModel: Option.Option<ModelSchema.ModelRef>
  /** Every provider a credential could be connected to (see `Catalog.connectable`). */
  readonly connectable: ReadonlyArray<Catalog.Connectable>
  /** Enabled agents, built-ins first (see AgentCatalog). */
  readonly agents: ReadonlyArray<AgentCatalog.Agent>
  /** The primary agent a new session starts with. */
  readonly defaultAgent: string
  /** Extra instruction file paths or globs, as written, from every document in merge order. */
  readonly instructions: ReadonlyArray<string>
  readonly toolOutput: ToolOutput
  readonly compaction: Compaction
  readonly server: ConfigInfo.Server
}

/**
 * The loaded configuration. The fields of {@link Resolved} and the lookups follow the Model Database:
 * when a refresh installs a new database, the catalog is resolved again and, if the config still
 * resolves against it, every later read sees the new providers and models (a read never sees half of
 * one and half of the other). If it no longer resolves (e.g. `model` names a model the new database
 * dropped), the previous catalog stays and one warning is logged.
 */
export interface Interface extends Resolved {
  /** The merged documents (after substitution, unknown keys dropped), in the upstream shape. */
  readonly info: ConfigInfo.Info
  /** The documents read, in merge order: file paths, and `OPENCODE_CONFIG_CONTENT` for the inline one. */
  readonly sources: ReadonlyArray<string>
  readonly provider: (id: string) => Option.Option<Catalog.Provider>
  /** The provider and model a reference names. */
  readonly findModel: (
    ref: Pick<ModelSchema.ModelRef, "providerID" | "id">
  ) => Option.Option<{ readonly provider: Catalog.Provider; readonly model: Catalog.Model }>
  /** An enabled agent by name. */
  readonly agent: (name: string) => Option.Option<AgentCatalog.Agent>
  /**
   * Resolves the catalog again over the stored credentials as they are now, if they changed since it
   * was last resolved; completes once later reads see them. A writer of credentials calls it so that
   * its next request sees the change. Does nothing without a CredentialStore.
   */
  readonly resync: Effect.Effect<void>
}

/** The loaded configuration; `yield* Config.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/Config")<Service, Interface>() {}

/** The config file names, in the order they are read within one directory. */
export const fileNames = ["opencode.json", "opencode.jsonc"] as const

export const defaultToolOutput: ToolOutput = { maxLines: 2000, maxBytes: 50 * 1024 }

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const mergeValues = (target: unknown, source: unknown): unknown => {
  if (!isObject(target) || !isObject(source)) return source === undefined ? target : source
  const out: Record<string, unknown> = { ...target }
  for (const [key, value] of Object.entries(source)) out[key] = mergeValues(out[key], value)
  return out
}

/**
 * `source` over `target`: objects merge recursively, other values are replaced, `instructions`
 * concatenate (duplicates dropped) and `reference.<name>` entries are replaced whole. Pure.
 */
export const merge = (target: ConfigInfo.Info, source: ConfigInfo.Info): ConfigInfo.Info => {
  const merged = mergeValues(target, source) as ConfigInfo.Info
  // A reference is local or git by its keys: merging two definitions key by key could mix both.
  const references =
    target.reference === undefined || source.reference === undefined
      ? merged
      : { ...merged, reference: { ...target.reference, ...source.reference } }
  if (target.instructions === undefined || source.instructions === undefined) return references
  return { ...references, instructions: [...new Set([...target.instructions, ...source.instructions])] }
}

const isMissing = (error: unknown): boolean =>
  typeof error === "object" &&
  error !== null &&
  (error as { _tag?: unknown })._tag === "SystemError" &&
  (error as { reason?: unknown }).reason === "NotFound"

/**
 * Reads every source (see the module doc) into validated documents, in merge order. Fails with the
 * first invalid document's ConfigError.
 */
export const read = Traced.fn("Config.read")(function* (options: Options) {
  const fs = yield* FileSystem.FileSystem
  const directory = nodePath.resolve(options.directory)
  const sources: Array<ConfigSource.Source> = []
  const seen = new Set<string>()

  const readFile = Traced.fn("Config.readFile")(function* (file: string, required: boolean) {
    if (seen.has(file)) return
    const text = yield* fs.readFileString(file).pipe(
      Effect.map(Option.some),
      Effect.catchAll((error) =>
        isMissing(error) && !required
          ? Effect.succeed(Option.none<string>())
          : Effect.fail(
              ConfigErrors.at(
                { file, line: 0, column: 0 },
                isMissing(error) ? "file not found" : `cannot be read: ${error.message}`
              )
            )
      )
    )
    if (Option.isNone(text)) return
    seen.add(file)
    sources.push(
      yield* ConfigSource.parse({ file, directory: nodePath.dirname(file), text: text.value, env: options.env })
    )
  })

  // 1. global
  for (const name of fileNames) yield* readFile(nodePath.join(nodePath.resolve(options.configDir), name), false)

  // 2. $OPENCODE_CONFIG
  const explicit = options.env.OPENCODE_CONFIG
  if (explicit !== undefined && explicit !== "") yield* readFile(nodePath.resolve(directory, explicit), true)

  // 3. project, root first so that the nearest directory wins
  if (!EnvFlag.isOn(options.env.OPENCODE_DISABLE_PROJECT_CONFIG)) {
    let root = options.worktreeRoot === undefined ? undefined : nodePath.resolve(options.worktreeRoot)
    if (root === undefined) {
      for (const candidate of Upward.directories(directory, nodePath.parse(directory).root)) {
        if (yield* fs.exists(nodePath.join(candidate, ".git")).pipe(Effect.orElseSucceed(() => false))) {
          root = candidate
          break
        }
      }
    }
    for (const dir of [...Upward.directories(directory, root ?? directory)].reverse()) {
      for (const name of fileNames) yield* readFile(nodePath.join(dir, name), false)
    }
  }

  // 4. $OPENCODE_CONFIG_CONTENT
  const inline = options.env.OPENCODE_CONFIG_CONTENT
  if (inline !== undefined && inline !== "") {
    sources.push(
      yield* ConfigSource.parse({ file: ConfigSource.inlineName, directory, text: inline, env: options.env })
    )
  }

  yield* Effect.logDebug(`Config read from: ${sources.map((source) => source.file).join(", ") || "(none)"}`)
  return sources as ReadonlyArray<ConfigSource.Source>
})

/**
 * Resolves merged documents for the runtime: the provider catalog and model references, the agents,
 * and the defaults of the limits. `locate` says where a key path was written, for errors.
 */
export const resolve = Traced.fn("Config.resolve")(function* (
  info: ConfigInfo.Info,
  options: {
    readonly env: Readonly<Record<string, string | undefined>>
    readonly locate: Catalog.Locate
    /** The model database the config's `provider` merges over. */
    readonly database: ModelsDev.Database
    readonly dataDir?: string
    readonly worktreeRoot?: string
    /** Stored credentials' secrets by provider ID (see `CredentialStore`). */
    readonly stored?: Catalog.StoredKeys
  }
) {
  const catalog = yield* Catalog.resolve(info, {
    env: options.env,
    locate: options.locate,
    database: options.database,
    ...(options.stored === undefined ? {} : { stored: options.stored })
  })
  const agents = yield* AgentCatalog.resolve(info, {
    catalog,
    locate: options.locate,
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    ...(options.worktreeRoot === undefined ? {} : { worktreeRoot: options.worktreeRoot })
  })
  const resolved: Resolved = {
    providers: catalog.providers,
    unavailable: catalog.unavailable,
    model: catalog.model,
    smallModel: catalog.smallModel,
    connectable: catalog.connectable,
    agents: agents.agents,
    defaultAgent: agents.defaultAgent,
    instructions: info.instructions ?? [],
    toolOutput: {
      maxLines: info.tool_output?.max_lines ?? defaultToolOutput.maxLines,
      maxBytes: info.tool_output?.max_bytes ?? defaultToolOutput.maxBytes
    },
    compaction: {
      auto: info.compaction?.auto ?? true,
      prune: info.compaction?.prune ?? true,
      ...(info.compaction?.reserved === undefined ? {} : { reserved: info.compaction.reserved })
    },
    server: info.server ?? {}
  }
  return resolved
})

/** The service over `current`, read at every access (so a swapped catalog shows in later reads). */
const service = (
  info: ConfigInfo.Info,
  sources: ReadonlyArray<string>,
  current: () => Resolved,
  resync: Effect.Effect<void> = Effect.void
): Interface => ({
  resync,
  get providers() {
    return current().providers
  },
  get unavailable() {
    return current().unavailable
  },
  get model() {
    return current().model
  },
  get smallModel() {
    return current().smallModel
  },
  get connectable() {
    return current().connectable
  },
  get agents() {
    return current().agents
  },
  get defaultAgent() {
    return current().defaultAgent
  },
  get instructions() {
    return current().instructions
  },
  get toolOutput() {
    return current().toolOutput
  },
  get compaction() {
    return current().compaction
  },
  get server() {
    return current().server
  },
  info,
  sources,
  provider: (id) => Option.fromNullable(current().providers.find((provider) => provider.id === id)),
  findModel: (ref) => Catalog.find(current(), ref),
  agent: (name) => Option.fromNullable(current().agents.find((agent) => agent.name === name))
})

/** Logs each unavailable provider once per process of this config (a new reason logs again). */
const reportUnavailable = (logged: Set<string>, resolved: Resolved) =>
  Effect.forEach(
    resolved.unavailable.filter((provider) => !logged.has(`${provider.id}\u0000${provider.reason}`)),
    (provider) => {
      logged.add(`${provider.id}\u0000${provider.reason}`)
      return Effect.logInfo(`Provider ${provider.id} is unavailable: ${provider.reason}`)
    },
    { discard: true }
  )

const readAndMerge = Traced.fn("Config.readAndMerge")(function* (options: Options) {
  const sources = yield* read(options)
  const info = sources.reduce<ConfigInfo.Info>((merged, source) => merge(merged, source.info), {})
  const resolveOver = (database: ModelsDev.Database, stored?: Catalog.StoredKeys) =>
    resolve(info, {
      env: options.env,
      locate: (path) => ConfigSource.nearest(sources, path),
      database,
      ...(stored === undefined ? {} : { stored }),
      ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
      ...(options.worktreeRoot === undefined ? {} : { worktreeRoot: nodePath.resolve(options.worktreeRoot) })
    })
  return { info, files: sources.map((source) => source.file), resolveOver }
})

/**
 * Reads, merges and resolves the configuration (see the module doc) over a fixed model database
 * (default: the bundled snapshot). The result does not change afterwards.
 */
export const load = Traced.fn("Config.load")(function* (
  options: Options & { readonly database?: ModelsDev.Database | undefined }
) {
  const { info, files, resolveOver } = yield* readAndMerge(options)
  const resolved = yield* resolveOver(options.database ?? ModelsDev.snapshot())
  yield* reportUnavailable(new Set(), resolved)
  return service(info, files, () => resolved)
})

/** The secrets of stored credentials by provider ID, as the Catalog takes them. */
const storedKeys = (entries: CredentialStore.Entries): Catalog.StoredKeys =>
  Object.fromEntries(Object.entries(entries).map(([id, entry]) => [id, CredentialStore.secretOf(entry)]))

/**
 * The configuration of `options`, read once when the layer is built over the Model Database's
 * current database, then resolved again whenever the Model Database changes (see {@link Interface}).
 * When a `CredentialStore` is in the layer's context, its credentials join the catalog (a provider
 * with a stored credential is offered, see Catalog) and every change to them resolves the catalog
 * again, so a connected or removed credential shows in the next read without a restart.
 * Fails with a ConfigError when any document is invalid or a model reference does not resolve
 * against the database in use at start.
 */
export const layer = (
  options: Options
): Layer.Layer<Service, ConfigErrors.ConfigError, FileSystem.FileSystem | ModelDatabase.Service> =>
  Layer.scoped(
    Service,
    Effect.gen(function* () {
      const models = yield* ModelDatabase.Service
      const credentials = yield* Effect.serviceOption(CredentialStore.Service)
      const { info, files, resolveOver } = yield* readAndMerge(options)
      const start = yield* models.current
      const stored = Option.isSome(credentials) ? storedKeys(yield* credentials.value.entries) : undefined
      const logged = new Set<string>()
      // One cell, swapped whole: a reader sees one catalog or the next, never a mix.
      const cell = { database: start.database, stored, resolved: yield* resolveOver(start.database, stored) }
      yield* reportUnavailable(logged, cell.resolved)
      // Resolves again over a new database or new credentials; one change at a time.
      const lock = yield* Effect.makeSemaphore(1)
      const apply = (database: ModelsDev.Database, keys: Catalog.StoredKeys | undefined, change: string) =>
        lock.withPermits(1)(
          resolveOver(database, keys).pipe(
            Effect.tap((resolved) =>
              Effect.zipRight(
                Effect.sync(() => {
                  cell.database = database
                  cell.stored = keys
                  cell.resolved = resolved
                }),
                reportUnavailable(logged, resolved)
              )
            ),
            Effect.catchAll((error) =>
              Effect.sync(() => {
                // Not retried for this input: the next change is tried afresh.
                cell.database = database
                cell.stored = keys
              }).pipe(
                Effect.zipRight(
                  Effect.logWarning(
                    `${change} does not fit the configuration (${error.message}); keeping the previous catalog`
                  )
                )
              )
            )
          )
        )
      const follow = Stream.runForEach(models.changes, (state) =>
        state.database === cell.database
          ? Effect.void
          : apply(state.database, cell.stored, "The refreshed model database")
      )
      yield* Effect.forkScoped(follow)
      if (Option.isNone(credentials)) return service(info, files, () => cell.resolved)
      const store = credentials.value
      const sync = (entries: CredentialStore.Entries) => {
        const keys = storedKeys(entries)
        return JSON.stringify(keys) === JSON.stringify(cell.stored)
          ? Effect.void
          : apply(cell.database, keys, "The changed credentials")
      }
      yield* Effect.forkScoped(Stream.runForEach(store.changes, sync))
      return service(info, files, () => cell.resolved, Effect.flatMap(store.entries, sync))
    })
  )

/**
 * The configuration given as a literal document (already in the decoded shape; no files, no
 * substitution), resolved as {@link layer} would over `database` (default: the bundled snapshot; no
 * refresh). Errors name the file `source` (default `<test>`) without position.
 */
export const layerTest = (
  info: ConfigInfo.Info,
  options: {
    readonly env?: Readonly<Record<string, string | undefined>>
    readonly dataDir?: string
    readonly worktreeRoot?: string
    readonly database?: ModelsDev.Database
    /** What errors and `sources` call the document; default `<test>`. */
    readonly source?: string
  } = {}
): Layer.Layer<Service, ConfigErrors.ConfigError> =>
  Layer.effect(
    Service,
    resolve(info, {
      env: options.env ?? {},
      locate: () => ({ file: options.source ?? "<test>", line: 0, column: 0 }),
      database: options.database ?? ModelsDev.snapshot(),
      ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
      ...(options.worktreeRoot === undefined ? {} : { worktreeRoot: options.worktreeRoot })
    }).pipe(Effect.map((resolved) => service(info, [options.source ?? "<test>"], () => resolved)))
  )
