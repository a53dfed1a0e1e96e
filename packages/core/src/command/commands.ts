export * as Commands from "./commands.js"

/**
 * Commands: the custom commands of a Location, named prompt templates a user runs by starting a
 * prompt with `/name` (see {@link SessionCommand}, and {@link CommandTemplate} for the expansion).
 *
 * Where, in precedence order (a later definition of a name replaces an earlier one whole):
 * 1. the global config directory: `<configDir>/command/**.md`, then `<configDir>/commands/**.md`;
 * 2. the config's `command` entries (`opencode.json`: `command.<name>: {template, description?,
 *    agent?, model?, subtask?}`, merged across config documents);
 * 3. unless `OPENCODE_DISABLE_PROJECT_CONFIG` is set: `.opencode/command/**.md` then
 *    `.opencode/commands/**.md` in each directory from the project (worktree) root down to the
 *    Location directory.
 * So the nearest project file wins over a farther one, over the config and over a global file. A
 * file's command name is its path below the `command(s)` folder without `.md`, with `/` between
 * folders (`commands/git/commit.md` is `git/commit`). Folders are searched at any depth, following
 * symbolic links (each real directory once); within one folder, files are taken in path order.
 *
 * A file that is not a valid command file (see {@link CommandFile}), or whose `model` is not
 * `provider/model`, is skipped with a warning (once per file and problem), as are config entries
 * with such a `model`; the other commands are still listed. Nothing is cached: every look-up reads
 * the files again, so an edit applies at the next prompt.
 */

import type { FileSystem } from "@effect/platform"
import type { Location, Model } from "@opencode-ai/schema"
import { Context, Effect, Either, Layer, Option, Schema } from "effect"
import { parseModelRef } from "../config/catalog.js"
import { Config } from "../config/config.js"
import { ConfigFolders } from "../config/config-folders.js"
import type { ConfigInfo } from "../config/config-info.js"
import { EnvFlag } from "../config/env-flag.js"
import { Traced } from "../observability/traced.js"
import { CommandFile } from "./command-file.js"

/** A discovered command. */
export interface Info {
  readonly name: string
  readonly template: string
  readonly description?: string
  readonly agent?: string
  readonly model?: Model.ModelRef
  readonly subtask?: boolean
  /** Where it is defined: the file's absolute path, or `config` for a config entry. */
  readonly source: string
}

/** A command folder could not be searched (e.g. it is not readable); not raised for a missing folder. */
export class CommandDiscoveryError extends Schema.TaggedError<CommandDiscoveryError>()("CommandDiscoveryError", {
  directory: Schema.String,
  message: Schema.String
}) {}

export interface Options {
  /** The global config directory (`Paths.configDir`). */
  readonly configDir: string
  /** The environment: `OPENCODE_DISABLE_PROJECT_CONFIG` ("1" or "true", any case) turns project commands off. */
  readonly env: Readonly<Record<string, string | undefined>>
}

/** The command folder names looked for, in precedence order within one directory. */
export const folderNames = ["command", "commands"] as const

export interface Interface {
  /** The command folders searched for `location`, as [global, project] lists, lowest precedence first. Pure. */
  readonly folders: (location: Location.LocationInfo) => {
    readonly global: ReadonlyArray<string>
    readonly project: ReadonlyArray<string>
  }
  /** Every command of `location`, one per name (the winning definition), in name order. */
  readonly list: (location: Location.LocationInfo) => Effect.Effect<ReadonlyArray<Info>, CommandDiscoveryError>
  /** The command `name` of `location`, if there is one. */
  readonly get: (
    location: Location.LocationInfo,
    name: string
  ) => Effect.Effect<Option.Option<Info>, CommandDiscoveryError>
}

/** Command discovery; `yield* Commands.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/Commands")<Service, Interface>() {}

/** How deep below a command folder files are looked for. */
const maxDepth = 8

/** The model of a definition, parsed; `undefined` when absent, a reason when malformed. */
const modelOf = (value: string | undefined): Either.Either<Model.ModelRef | undefined, string> =>
  value === undefined ? Either.right(undefined) : parseModelRef(value)

const definition = (
  name: string,
  source: string,
  fields: {
    readonly template: string
    readonly description?: string | undefined
    readonly agent?: string | undefined
    readonly model?: string | undefined
    readonly subtask?: boolean | undefined
  }
): Either.Either<Info, string> =>
  Either.map(
    modelOf(fields.model),
    (model): Info => ({
      name,
      template: fields.template,
      ...(fields.description === undefined ? {} : { description: fields.description }),
      ...(fields.agent === undefined ? {} : { agent: fields.agent }),
      ...(model === undefined ? {} : { model }),
      ...(fields.subtask === undefined ? {} : { subtask: fields.subtask }),
      source
    })
  )

export const layer = (options: Options): Layer.Layer<Service, never, FileSystem.FileSystem | Config.Service> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const config = yield* Config.Service
      const projectDisabled = EnvFlag.isOn(options.env.OPENCODE_DISABLE_PROJECT_CONFIG)
      const folderOf = { configDir: options.configDir, names: folderNames, projectDisabled }
      const reader = yield* ConfigFolders.reader({ kind: "command", maxDepth })
      const warnOnce = reader.warnOnce

      const folders = (location: Location.LocationInfo) => ConfigFolders.folders(folderOf, location)

      /**
       * The `.md` files below the folders with their command names (their path below their folder), in
       * folder then path order.
       */
      const commandFiles = (folders: ReadonlyArray<string>) =>
        reader
          .filesIn(folders, (entry) => entry.endsWith(CommandFile.extension) && entry !== CommandFile.extension)
          .pipe(
            Effect.map((found) =>
              found.map((file) => ({
                path: file.path,
                name: [...file.subfolders, file.entry.slice(0, -CommandFile.extension.length)].join("/")
              }))
            ),
            Effect.mapError(
              (error) => new CommandDiscoveryError({ directory: error.directory, message: error.message })
            )
          )

      /** One file as a command, or `undefined` (with a warning) when it cannot be read or is invalid. */
      const load = (file: { readonly path: string; readonly name: string }) =>
        reader.load(file.path, (text) =>
          Either.flatMap(
            Either.mapLeft(CommandFile.parse(text), (invalid) => invalid.message),
            (parsed) => Either.mapLeft(definition(file.name, file.path, parsed), (reason) => `\`model\`: ${reason}`)
          )
        )

      const fromConfig = (entries: Readonly<Record<string, ConfigInfo.Command>>) =>
        Effect.forEach(Object.entries(entries), ([name, entry]) =>
          Either.match(definition(name, "config", entry), {
            onRight: (info) => Effect.succeed<Info | undefined>(info),
            onLeft: (reason) =>
              warnOnce(`config:${name}:${reason}`, `config command "${name}" skipped: \`model\`: ${reason}`, {
                command: name
              }).pipe(Effect.as(undefined))
          })
        )

      const loadFolders = (list: ReadonlyArray<string>) =>
        commandFiles(list).pipe(
          Effect.flatMap((found) =>
            found.length === 0 ? Effect.succeed([]) : Effect.forEach(found, load, { concurrency: 16 })
          )
        )

      const list = Traced.fn("Commands.list")(
        function* (location: Location.LocationInfo) {
          const searched = folders(location)
          const global = yield* loadFolders(searched.global)
          const configured = yield* fromConfig(config.info.command ?? {})
          const project = yield* loadFolders(searched.project)
          // Precedence order: a later definition replaces an earlier one of the same name.
          const byName = new Map<string, Info>()
          for (const command of [...global, ...configured, ...project]) {
            if (command !== undefined) byName.set(command.name, command)
          }
          return [...byName.values()].sort((a, b) =>
            a.name < b.name ? -1 : a.name > b.name ? 1 : 0
          ) as ReadonlyArray<Info>
        },
        (effect, location) => Effect.annotateLogs(effect, { directory: location.directory })
      )

      const get = (location: Location.LocationInfo, name: string) =>
        Effect.map(list(location), (commands) => Option.fromNullable(commands.find((command) => command.name === name)))

      return Service.of({ folders, list, get })
    })
  )
