export * as InstructionDiscovery from "./instruction-discovery.js"

/**
 * InstructionDiscovery's Instruction Source (`core/instruction-discovery`): the ambient global and
 * upward-project AGENTS.md files, then the files of the `instructions` config key (see
 * {@link ConfiguredInstructions}), as ONE ordered aggregate value. This module holds the value, the pure
 * renderers and the source constructor, and the Location-scoped {@link Service} that reads the files
 * (see {@link Interface.paths} for which files, in which order) and supplies the loader.
 *
 * Because the set is one value, any change re-sends the complete current ordered set, stating that it
 * supersedes the earlier one; an empty set says the earlier files no longer apply.
 */

import * as os from "node:os"
import * as nodePath from "node:path"
import type { Location } from "@opencode-ai/schema"
import { Context, Effect, Layer, Schema } from "effect"
import { EnvFlag } from "../config/env-flag.js"
import { Upward } from "../location/upward.js"
import { Traced } from "../observability/traced.js"
import { ConfiguredInstructions } from "./configured-instructions.js"
import { InstructionFile } from "./instruction-file.js"
import { Instructions } from "./instructions.js"

export const key: Instructions.Key = Instructions.key("core/instruction-discovery")

export const File = Schema.Struct({
  /** Absolute path of the file, as shown to the model. */
  path: Schema.String,
  content: Schema.String
}).annotations({ identifier: "DiscoveredInstructionFile" })
export interface File extends Schema.Schema.Type<typeof File> {}

/** The discovered files in precedence order (the order the model reads them). */
export const Value = Schema.Array(File).annotations({ identifier: "DiscoveredInstructions" })
export type Value = typeof Value.Type

const files = (value: Value): string =>
  value.map((file) => [`Instructions loaded from ${file.path}:`, file.content.trimEnd()].join("\n")).join("\n\n")

const noLongerApply = "The instruction files loaded earlier no longer apply; no instruction files are in effect now."

/** The files, in order; empty when none were found (the baseline then says nothing). */
export const baseline = (value: Value): string => files(value)

/**
 * The complete current set, superseding the prior one; or that none apply any more. When the model
 * was told of no files before, the set is simply stated.
 */
export const update = (value: Value, previous: Value): string =>
  value.length === 0
    ? noLongerApply
    : previous.length === 0
      ? files(value)
      : ["The instruction files below replace all instruction files loaded earlier:", files(value)].join("\n\n")

/** Said when the discovery source stops being composed or reports absence. */
export const removed = (previous: Value): string => (previous.length === 0 ? "" : noLongerApply)

/** The discovery source, observed with `load` (`immediate`: see `Instructions.Spec`). */
export const make = <R>(
  load: Effect.Effect<Instructions.Observation<Value>, never, R>,
  options?: { readonly immediate?: boolean }
): Instructions.Instructions<R> =>
  Instructions.make({ key, codec: Value, load, baseline, update, removed, immediate: options?.immediate === true })

// ---------------------------------------------------------------------------------------------------
// The Location-scoped service

/** The instruction file name looked for, globally and in each project directory. */
export const fileName = "AGENTS.md"

export interface Options {
  /** The global config directory (`Paths.configDir`: `$XDG_CONFIG_HOME/opencode`, default `~/.config/opencode`). */
  readonly configDir: string
  /** The environment: `OPENCODE_DISABLE_PROJECT_CONFIG` ("1" or "true", any case) turns project files off. */
  readonly env: Readonly<Record<string, string | undefined>>
  /** The `instructions` config key: extra instruction files and globs (see {@link ConfiguredInstructions}). */
  readonly instructions?: ReadonlyArray<string> | undefined
  /** The home directory `~/` in {@link Options.instructions} expands to (default `os.homedir()`). */
  readonly home?: string | undefined
}

export interface Interface {
  /**
   * The candidate files for `location`, in the order the model reads them:
   * 1. the global `<configDir>/AGENTS.md`;
   * 2. unless `OPENCODE_DISABLE_PROJECT_CONFIG` is set, `AGENTS.md` in the Location directory and then
   *    in each parent up to and including the project (worktree) root: nearest first, the order in
   *    which upstream's upward search finds them. A directory outside its project root is searched
   *    alone;
   * 3. the files of the `instructions` config key, in config order (ConfiguredInstructions.resolve:
   *    relative entries against the Location and its parents up to the project root, absolute and
   *    `~/` entries as given, globs expanded; relative ones skipped like the project files above).
   * A path is listed once, at its first place.
   * (Upstream lists the global file after the project files; the global file leads here, as the
   * specification lists it, so the most general rule is read first.)
   * Reads directories only to expand the config's globs; no file is read.
   */
  readonly paths: (location: Location.LocationInfo) => ReadonlyArray<string>
  /**
   * Observes the candidates once (concurrently) as one aggregate value, in {@link Interface.paths}
   * order. A missing file (or a path that is not a regular file) is simply not in the set, so no files
   * at all is the empty set (a loaded value, not an absence). Any other read failure, e.g. a
   * permission error, makes the whole aggregate unavailable: the model keeps what it was told before
   * (stale-while-revalidate), and a first baseline waits. Never fails.
   */
  readonly load: (location: Location.LocationInfo) => Effect.Effect<Instructions.Observation<Value>>
  /** The discovery source of `location`, observed with {@link Interface.load} at each prepare. */
  readonly instructions: (location: Location.LocationInfo) => Instructions.Instructions<never>
}

/** InstructionDiscovery; `yield* InstructionDiscovery.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/InstructionDiscovery")<Service, Interface>() {}

export const layer = (options: Options): Layer.Layer<Service> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const projectDisabled = EnvFlag.isOn(options.env.OPENCODE_DISABLE_PROJECT_CONFIG)
      const globalFile = nodePath.join(nodePath.resolve(options.configDir), fileName)

      const paths = (location: Location.LocationInfo): ReadonlyArray<string> => {
        const project = projectDisabled
          ? []
          : Upward.directories(nodePath.resolve(location.directory), nodePath.resolve(location.project.directory)).map(
              (directory) => nodePath.join(directory, fileName)
            )
        const configured = ConfiguredInstructions.resolve(options.instructions ?? [], {
          directory: location.directory,
          projectRoot: location.project.directory,
          home: options.home ?? os.homedir(),
          projectDisabled
        })
        return [...new Set([globalFile, ...project, ...configured])]
      }

      /** One file, `undefined` when there is none; a failure makes the set unavailable (see InstructionFile.read). */
      const read = (path: string) =>
        Effect.map(InstructionFile.read(path), (content): File | undefined =>
          content === undefined ? undefined : { path, content }
        )

      const load = Traced.fn("InstructionDiscovery.load")(
        function* (location: Location.LocationInfo) {
          const files = yield* Effect.forEach(paths(location), read)
          return files.filter((file): file is File => file !== undefined) as Value
        },
        Instructions.orUnavailable,
        (effect, location) => Effect.annotateLogs(effect, { directory: location.directory })
      )

      // Its reads are synchronous (see InstructionFile.read): it never waits.
      const instructions = (location: Location.LocationInfo) => make(load(location), { immediate: true })

      return Service.of({ paths, load, instructions })
    })
  )
