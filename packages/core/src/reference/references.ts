export * as References from "./references.js"

/**
 * Project references: extra directories, named in the config's `reference` key, that the agent may
 * consult when they are relevant (documentation, a sibling repository, …). Each is resolved for a
 * Location:
 * - a local reference (`{path}`): an absolute path as is, `~` and `~/…` against the home directory,
 *   anything else against the Location's project root;
 * - a git reference (`{repository, branch?}`): the directory its checkout belongs in,
 *   `<dataDir>/reference/<host>/<path>[@<branch>]` ({@link checkoutPath}). This runtime does not
 *   clone: the directory is used when something has put the checkout there.
 *
 * The config is read once at startup, so the list only changes with the Location.
 */

import * as nodePath from "node:path"
import { FileSystem } from "@effect/platform"
import type { Location, Reference } from "@opencode-ai/schema"
import { Context, Effect, Layer } from "effect"
import { Config } from "../config/config.js"
import type { ConfigInfo } from "../config/config-info.js"
import { Instructions } from "../instructions/instructions.js"
import type { ReferenceGuidance } from "../instructions/reference-guidance.js"
import { Traced } from "../observability/traced.js"

export interface Options {
  /** The data directory (`Paths.dataDir`): git references' checkouts live below `<dataDir>/reference`. */
  readonly dataDir: string
  /** The home directory, for `~` in local paths. */
  readonly home: string
}

export interface Interface {
  /** Every configured reference resolved for `location`, hidden ones included, in name order. */
  readonly list: (location: Location.LocationInfo) => Effect.Effect<ReadonlyArray<Reference.ReferenceInfo>>
  /**
   * The reference guidance loader: the references of `location` that have a description and are not
   * hidden, as name, path and description; a git reference only once its checkout directory exists.
   * `absent` when there is none. Never fails.
   */
  readonly guidance: (
    location: Location.LocationInfo
  ) => Effect.Effect<Instructions.Observation<ReferenceGuidance.Value>>
}

/** Project references; `yield* References.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/References")<Service, Interface>() {}

const segment = (text: string): string => text.replace(/[^A-Za-z0-9._-]/g, "_")

/**
 * Where a git repository's checkout belongs: `<dataDir>/reference/` plus the repository's host and
 * path (scheme, user, `.git` suffix dropped; `host:path` as `host/path`), and `@<branch>` when one is
 * named. Pure.
 */
export const checkoutPath = (dataDir: string, repository: string, branch?: string): string => {
  const segments = repository
    .trim()
    .replace(/^[a-z][a-z0-9+.-]*:\/\//i, "")
    .replace(/^[^@/]+@/, "")
    .replace(/:/g, "/")
    .replace(/\/+$/, "")
    .replace(/\.git$/, "")
    .split("/")
    .filter((part) => part !== "" && part !== "." && part !== "..")
    .map(segment)
  const named = segments.length === 0 ? ["repository"] : segments
  const last = named.length - 1
  if (branch !== undefined && branch !== "") named[last] = `${named[last]}@${segment(branch)}`
  return nodePath.join(dataDir, "reference", ...named)
}

/** A local reference's directory for a project root. Pure. */
export const localPath = (path: string, root: string, home: string): string =>
  path === "~" ? home : path.startsWith("~/") ? nodePath.join(home, path.slice(2)) : nodePath.resolve(root, path)

const isGit = (reference: ConfigInfo.Reference): reference is ConfigInfo.ReferenceGit => "repository" in reference

/** One configured reference in the wire shape, resolved for a project root. Pure. */
export const resolve = (
  name: string,
  reference: ConfigInfo.Reference,
  options: Options & { readonly root: string }
): Reference.ReferenceInfo => {
  const extra = {
    ...(reference.description === undefined ? {} : { description: reference.description }),
    ...(reference.hidden === undefined ? {} : { hidden: reference.hidden })
  }
  if (isGit(reference)) {
    return {
      name,
      path: checkoutPath(options.dataDir, reference.repository, reference.branch),
      ...extra,
      source: {
        type: "git",
        repository: reference.repository,
        ...(reference.branch === undefined ? {} : { branch: reference.branch }),
        ...extra
      }
    }
  }
  return {
    name,
    path: localPath(reference.path, options.root, options.home),
    ...extra,
    source: { type: "local", path: reference.path, ...extra }
  }
}

export const layer = (options: Options): Layer.Layer<Service, never, Config.Service | FileSystem.FileSystem> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const config = yield* Config.Service
      const fs = yield* FileSystem.FileSystem
      const configured = Object.entries(config.info.reference ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))

      const list = (location: Location.LocationInfo) =>
        Effect.succeed(
          configured.map(([name, reference]) =>
            resolve(name, reference, { ...options, root: nodePath.resolve(location.project.directory) })
          ) as ReadonlyArray<Reference.ReferenceInfo>
        )

      const guidance = Traced.fn("References.guidance")(
        function* (location: Location.LocationInfo) {
          const offered = (yield* list(location)).filter(
            (reference) =>
              reference.hidden !== true && reference.description !== undefined && reference.description.trim() !== ""
          )
          const present = yield* Effect.filter(
            offered,
            (reference) =>
              reference.source.type === "local"
                ? Effect.succeed(true)
                : fs.exists(reference.path).pipe(Effect.orElseSucceed(() => false)),
            { concurrency: "unbounded" }
          )
          const value = present.map((reference) => ({
            name: reference.name,
            path: reference.path,
            description: reference.description ?? ""
          }))
          return value.length === 0 ? Instructions.absent : (value as Instructions.Observation<ReferenceGuidance.Value>)
        },
        (effect, location) => Effect.annotateLogs(effect, { directory: location.directory })
      )

      return Service.of({ list, guidance })
    })
  )
