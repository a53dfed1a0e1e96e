export * as Locations from "./locations.js"

import { createHash } from "node:crypto"
import * as nodeFs from "node:fs"
import { Command, Path } from "@effect/platform"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { Errors, Identifier, type Location, Quote } from "@opencode-ai/schema"
import { Cache, Context, Duration, Effect, Either, Layer, Option, Schema, Stream } from "effect"
import { Traced } from "../observability/traced.js"

/** What a request names: a directory (absolute, or relative to the instance directory) and a workspace. */
export interface Ref {
  readonly directory?: string | undefined
  readonly workspace?: string | undefined
}

export interface Interface {
  /**
   * Resolves a reference to a Location: the directory made absolute (against the instance directory)
   * and canonical (symlinks resolved), the workspace carried through, and the project it belongs to.
   * Fails with InvalidRequestError (kind "location") when the directory does not exist or is not a
   * directory, or the workspace is not a `wrk` identifier. Projects are resolved once per directory
   * and cached for the life of the layer.
   */
  readonly resolve: (ref?: Ref) => Effect.Effect<Location.LocationInfo, Errors.InvalidRequestError>
}

/** Resolves request locations to directories, workspaces and projects; `yield* Locations.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/Locations")<Service, Interface>() {}

export interface Options {
  /** The instance directory: the default location, and the base of relative directories. */
  readonly directory: string
}

/** The project ID of a directory outside any git history: a stable hash of its absolute path. */
export const directoryHash = (directory: string): string => createHash("sha1").update(directory).digest("hex")

const invalid = (field: string, message: string) => new Errors.InvalidRequestError({ kind: "location", field, message })

const decodeWorkspace = Schema.decodeUnknownEither(Identifier.WorkspaceID)

export const layer = (options: Options): Layer.Layer<Service, never, CommandExecutor | Path.Path> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const path = yield* Path.Path
      const executor = yield* Effect.context<CommandExecutor>()
      const base = path.resolve(options.directory)

      /** stdout of a git command, or None when git is missing or exits non-zero. */
      const git = (cwd: string, ...args: ReadonlyArray<string>) =>
        Effect.scoped(
          Effect.gen(function* () {
            const child = yield* Command.start(Command.make("git", ...args).pipe(Command.workingDirectory(cwd)))
            const [stdout, , code] = yield* Effect.all(
              [Stream.mkString(Stream.decodeText(child.stdout)), Stream.runDrain(child.stderr), child.exitCode],
              { concurrency: "unbounded" }
            )
            return code === 0 ? Option.some(stdout.trim()) : Option.none<string>()
          })
        ).pipe(
          Effect.catchAll(() => Effect.succeedNone),
          Effect.provide(executor)
        )

      // A git worktree belongs to the project named by its root commit (the smallest one when
      // histories were merged); a repository without commits, or no repository, falls back to a hash.
      const project = Traced.fn("Locations.project")(function* (directory: string) {
        const toplevel = yield* git(directory, "rev-parse", "--show-toplevel")
        if (Option.isNone(toplevel) || toplevel.value === "") return { id: directoryHash(directory), directory }
        const top = path.resolve(toplevel.value)
        const roots = yield* git(top, "rev-list", "--max-parents=0", "HEAD")
        const root = Option.flatMap(roots, (out) => Option.fromNullable(out.split(/\s+/).filter(Boolean).sort()[0]))
        return { id: Option.getOrElse(root, () => directoryHash(top)), directory: top }
      })

      const projects = yield* Cache.make({ capacity: 1024, timeToLive: Duration.infinity, lookup: project })

      // Two metadata calls on every Step: done synchronously, they cost microseconds, where a round
      // trip through the thread pool costs milliseconds under load (see bench/step-overhead.ts).
      const directory = Traced.fn("Locations.directory")(function* (requested: string | undefined) {
        const absolute = requested === undefined ? base : path.resolve(base, requested)
        const missing = () => invalid("location.directory", `Directory does not exist: ${Quote.clip(absolute)}`)
        const info = yield* Effect.try({ try: () => nodeFs.statSync(absolute), catch: missing })
        if (!info.isDirectory()) return yield* invalid("location.directory", `Not a directory: ${Quote.clip(absolute)}`)
        return yield* Effect.try({ try: () => nodeFs.realpathSync.native(absolute), catch: missing })
      })

      const resolve = Traced.fn("Locations.resolve")(function* (ref?: Ref) {
        const workspace = ref?.workspace
        const workspaceID =
          workspace === undefined
            ? undefined
            : yield* Either.match(decodeWorkspace(workspace), {
                onLeft: () =>
                  Effect.fail(invalid("location.workspace", `Not a workspace ID: ${Quote.input(workspace)}`)),
                onRight: Effect.succeed
              })
        const resolved = yield* directory(ref?.directory)
        const projectRef = yield* projects.get(resolved)
        return {
          directory: resolved,
          ...(workspaceID === undefined ? {} : { workspaceID }),
          project: projectRef
        } satisfies Location.LocationInfo
      })

      return Service.of({ resolve })
    })
  )
