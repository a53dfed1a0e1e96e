export * as Skills from "./skills.js"

/**
 * Skills: packaged instructions for particular kinds of task, each a `SKILL.md` file (see
 * {@link SkillFile}) discovered for a Location.
 *
 * Where, in precedence order (a later definition of a name replaces an earlier one):
 * 1. the global config directory: `<configDir>/skill/**`, then `<configDir>/skills/**`;
 * 2. unless `OPENCODE_DISABLE_PROJECT_CONFIG` is set: `.opencode/skill/**` then `.opencode/skills/**`
 *    in each directory from the project (worktree) root down to the Location directory.
 * So the nearest project definition wins over a farther one and over a global one, and within one
 * directory `skills/` wins over `skill/`; inside one folder, files are taken in path order. Folders
 * are searched at any depth, following symbolic links (each real directory once).
 *
 * A file that is not a valid skill is skipped with a warning (once per file and problem, not at every
 * look-up). Nothing is cached: every look-up reads the files again, so edits apply at the next one.
 *
 * Who may use which skill is not decided here: the `skill` permission of an agent, evaluated on the
 * skill's name, is ({@link Interface.guidance}, and the skill tool's `ask`).
 */

import type { FileSystem } from "@effect/platform"
import type { Location } from "@opencode-ai/schema"
import { Context, Effect, Either, Layer, Option, Schema } from "effect"
import type { AgentCatalog } from "../config/agent-catalog.js"
import { ConfigFolders } from "../config/config-folders.js"
import { EnvFlag } from "../config/env-flag.js"
import { Instructions } from "../instructions/instructions.js"
import type { SkillGuidance } from "../instructions/skill-guidance.js"
import { Traced } from "../observability/traced.js"
import { Permission } from "../permission/permission.js"
import { SkillFile } from "./skill-file.js"

/** A discovered skill. */
export interface Info {
  readonly name: string
  readonly description: string
  readonly slash?: boolean
  /** The absolute path of its `SKILL.md`. */
  readonly location: string
  /** Its instructions: the file after the front matter. */
  readonly content: string
}

/** A skill folder could not be searched (e.g. it is not readable); not raised for a missing folder. */
export class SkillDiscoveryError extends Schema.TaggedError<SkillDiscoveryError>()("SkillDiscoveryError", {
  directory: Schema.String,
  message: Schema.String
}) {}

export interface Options {
  /** The global config directory (`Paths.configDir`). */
  readonly configDir: string
  /** The environment: `OPENCODE_DISABLE_PROJECT_CONFIG` ("1" or "true", any case) turns project skills off. */
  readonly env: Readonly<Record<string, string | undefined>>
}

/** The skill folder names looked for, in precedence order within one directory. */
export const folderNames = ["skill", "skills"] as const

export interface Interface {
  /** The skill folders searched for `location`, lowest precedence first (see the module doc). Pure. */
  readonly folders: (location: Location.LocationInfo) => ReadonlyArray<string>
  /** Every skill of `location`, one per name (the winning definition), in name order. */
  readonly list: (location: Location.LocationInfo) => Effect.Effect<ReadonlyArray<Info>, SkillDiscoveryError>
  /** The skill `name` of `location`, if there is one. */
  readonly get: (
    location: Location.LocationInfo,
    name: string
  ) => Effect.Effect<Option.Option<Info>, SkillDiscoveryError>
  /**
   * The selected-agent skill guidance loader: the name and description of each skill of `location`
   * that `rules` do not deny (action `skill`, resource the skill's name; a skill that asks is
   * listed, since loading it asks). `absent` when there is none (no skills, or the skill tool is
   * denied for all of them); `unavailable` when a folder cannot be searched. Bodies and locations
   * never appear.
   */
  readonly guidance: (
    location: Location.LocationInfo,
    rules: AgentCatalog.Ruleset
  ) => Effect.Effect<Instructions.Observation<SkillGuidance.Value>>
}

/** Skill discovery; `yield* Skills.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/Skills")<Service, Interface>() {}

/** How deep below a skill folder a `SKILL.md` is looked for. */
const maxDepth = 8

export const layer = (options: Options): Layer.Layer<Service, never, FileSystem.FileSystem> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const projectDisabled = EnvFlag.isOn(options.env.OPENCODE_DISABLE_PROJECT_CONFIG)
      const folderOf = { configDir: options.configDir, names: folderNames, projectDisabled }
      const reader = yield* ConfigFolders.reader({ kind: "skill", maxDepth })

      const folders = (location: Location.LocationInfo): ReadonlyArray<string> => {
        const { global, project } = ConfigFolders.folders(folderOf, location)
        return [...new Set([...global, ...project])]
      }

      /** The `SKILL.md` files below the folders, in folder then path order; a folder's own failure fails. */
      const files = (folders: ReadonlyArray<string>) =>
        reader
          .filesIn(folders, (entry) => entry === SkillFile.fileName)
          .pipe(
            Effect.map((found) => found.map((file) => file.path)),
            Effect.mapError((error) => new SkillDiscoveryError({ directory: error.directory, message: error.message }))
          )

      /** One file as a skill, or `undefined` (with a warning) when it cannot be read or is invalid. */
      const load = (path: string) =>
        reader.load(path, (text) =>
          Either.mapBoth(SkillFile.parse(text), {
            onLeft: (invalid) => invalid.message,
            onRight: (parsed): Info => ({ ...parsed, location: path })
          })
        )

      const list = Traced.fn("Skills.list")(
        function* (location: Location.LocationInfo) {
          const found = yield* files(folders(location))
          const skills = found.length === 0 ? [] : yield* Effect.forEach(found, load, { concurrency: 16 })
          // Precedence order: a later definition replaces an earlier one of the same name.
          const byName = new Map<string, Info>()
          for (const skill of skills) if (skill !== undefined) byName.set(skill.name, skill)
          return [...byName.values()].sort((a, b) =>
            a.name < b.name ? -1 : a.name > b.name ? 1 : 0
          ) as ReadonlyArray<Info>
        },
        (effect, location) => Effect.annotateLogs(effect, { directory: location.directory })
      )

      const get = (location: Location.LocationInfo, name: string) =>
        Effect.map(list(location), (skills) => Option.fromNullable(skills.find((skill) => skill.name === name)))

      const guidance = (location: Location.LocationInfo, rules: AgentCatalog.Ruleset) =>
        list(location).pipe(
          Effect.map((skills): Instructions.Observation<SkillGuidance.Value> => {
            const permitted = skills
              .filter((skill) => Permission.evaluate(rules, "skill", skill.name) !== "deny")
              .map((skill) => ({ name: skill.name, description: skill.description }))
            return permitted.length === 0 ? Instructions.absent : permitted
          }),
          Effect.tapError((error) => Effect.logWarning("skills unavailable; the model keeps what it was told", error)),
          Instructions.orUnavailable
        )

      return Service.of({ folders, list, get, guidance })
    })
  )
