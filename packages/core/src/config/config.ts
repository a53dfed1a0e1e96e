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
import { Context, Effect, Layer, Option } from "effect"
import { Upward } from "../location/upward.js"
import * as AgentCatalog from "./agent-catalog.js"
import * as Catalog from "./catalog.js"
import * as ConfigErrors from "./config-error.js"
import type * as ConfigInfo from "./config-info.js"
import * as ConfigSource from "./config-source.js"
import { EnvFlag } from "./env-flag.js"

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
  readonly providers: ReadonlyArray<Catalog.Provider>
  /** `model`, checked; else the first configured model; none when no model is configured. */
  readonly model: Option.Option<ModelSchema.ModelRef>
  /** `small_model`, checked; none when absent. */
  readonly smallModel: Option.Option<ModelSchema.ModelRef>
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
export const read = Effect.fn("Config.read")(function* (options: Options) {
  const fs = yield* FileSystem.FileSystem
  const directory = nodePath.resolve(options.directory)
  const sources: Array<ConfigSource.Source> = []
  const seen = new Set<string>()

  const readFile = Effect.fn("Config.readFile")(function* (file: string, required: boolean) {
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
export const resolve = Effect.fn("Config.resolve")(function* (
  info: ConfigInfo.Info,
  options: {
    readonly env: Readonly<Record<string, string | undefined>>
    readonly locate: Catalog.Locate
    readonly dataDir?: string
    readonly worktreeRoot?: string
  }
) {
  const catalog = yield* Catalog.resolve(info, { env: options.env, locate: options.locate })
  const agents = yield* AgentCatalog.resolve(info, {
    catalog,
    locate: options.locate,
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    ...(options.worktreeRoot === undefined ? {} : { worktreeRoot: options.worktreeRoot })
  })
  const resolved: Resolved = {
    providers: catalog.providers,
    model: catalog.model,
    smallModel: catalog.smallModel,
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

const service = (info: ConfigInfo.Info, sources: ReadonlyArray<string>, resolved: Resolved): Interface => ({
  ...resolved,
  info,
  sources,
  provider: (id) => Option.fromNullable(resolved.providers.find((provider) => provider.id === id)),
  findModel: (ref) => Catalog.find(resolved, ref),
  agent: (name) => Option.fromNullable(resolved.agents.find((agent) => agent.name === name))
})

/** Reads, merges and resolves the configuration (see the module doc). */
export const load = Effect.fn("Config.load")(function* (options: Options) {
  const sources = yield* read(options)
  const info = sources.reduce<ConfigInfo.Info>((merged, source) => merge(merged, source.info), {})
  const resolved = yield* resolve(info, {
    env: options.env,
    locate: (path) => ConfigSource.nearest(sources, path),
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    ...(options.worktreeRoot === undefined ? {} : { worktreeRoot: nodePath.resolve(options.worktreeRoot) })
  })
  return service(
    info,
    sources.map((source) => source.file),
    resolved
  )
})

/**
 * The configuration of `options`, read once when the layer is built. Fails with a ConfigError when
 * any document is invalid.
 */
export const layer = (options: Options): Layer.Layer<Service, ConfigErrors.ConfigError, FileSystem.FileSystem> =>
  Layer.effect(Service, load(options))

/**
 * The configuration given as a literal document (already in the decoded shape; no files, no
 * substitution), resolved as {@link layer} would. Errors name the file `<test>` without position.
 */
export const layerTest = (
  info: ConfigInfo.Info,
  options: {
    readonly env?: Readonly<Record<string, string | undefined>>
    readonly dataDir?: string
    readonly worktreeRoot?: string
  } = {}
): Layer.Layer<Service, ConfigErrors.ConfigError> =>
  Layer.effect(
    Service,
    resolve(info, {
      env: options.env ?? {},
      locate: () => ({ file: "<test>", line: 0, column: 0 }),
      ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
      ...(options.worktreeRoot === undefined ? {} : { worktreeRoot: options.worktreeRoot })
    }).pipe(Effect.map((resolved) => service(info, ["<test>"], resolved)))
  )
