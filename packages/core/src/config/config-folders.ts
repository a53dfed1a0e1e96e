export * as ConfigFolders from "./config-folders.js"

/**
 * Config Folders: where definition files of one kind (custom commands, skills) are discovered for a
 * Location, and how those folders are searched and their files read.
 *
 * - **Where**, lowest precedence first: `<configDir>/<name>` for each folder name (the global ones),
 *   then, unless project config is off, `.opencode/<name>` for each folder name in each directory from
 *   the project (worktree) root down to the Location directory (the project ones). So within one
 *   directory the later folder name wins, and a nearer directory wins over a farther one.
 * - **Search**: a folder is searched at any depth up to a limit, following symbolic links (each real
 *   directory once); within a folder, entries are taken in path order. A missing folder (or one that
 *   is not a directory) holds nothing; a folder that cannot be read fails ({@link Unreadable}); a
 *   subfolder that cannot be read is skipped with a warning.
 * - **Reading**: a file that cannot be read or is not valid is skipped with a warning.
 *
 * Warnings are given once per file (or folder) and problem over the life of the {@link Reader}, not
 * at every look-up: discovery runs at every Safe Step Boundary and every command prompt, and reads
 * the files again each time (nothing is cached, so an edit applies at the next look-up).
 */

import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { FileSystem } from "@effect/platform"
import type { Location } from "@opencode-ai/schema"
import { Data, Effect, Either, Option } from "effect"
import { Upward } from "../location/upward.js"

/** The folders searched for a Location, each list lowest precedence first. Pure. */
export const folders = (
  options: {
    readonly configDir: string
    readonly names: ReadonlyArray<string>
    /** Project config is off (`OPENCODE_DISABLE_PROJECT_CONFIG`): no project folders. */
    readonly projectDisabled: boolean
  },
  location: Location.LocationInfo
): { readonly global: ReadonlyArray<string>; readonly project: ReadonlyArray<string> } => ({
  global: options.names.map((name) => nodePath.join(nodePath.resolve(options.configDir), name)),
  project: options.projectDisabled
    ? []
    : [...Upward.directories(nodePath.resolve(location.directory), nodePath.resolve(location.project.directory))]
        .reverse()
        .flatMap((directory) => options.names.map((name) => nodePath.join(directory, ".opencode", name)))
})

/** A folder could not be searched (e.g. it is not readable). */
export class Unreadable extends Data.TaggedError("Core/ConfigFolderUnreadable")<{
  readonly directory: string
  readonly message: string
}> {}

/** A file found below a folder: its absolute path, and the subfolders it sits in, outermost first. */
export interface Found {
  readonly path: string
  readonly entry: string
  readonly subfolders: ReadonlyArray<string>
}

export interface Reader {
  /** Logs `message` at warning level with `annotations`, unless a warning of `key` was already given. */
  readonly warnOnce: (key: string, message: string, annotations: Record<string, unknown>) => Effect.Effect<void>
  /**
   * The files below each of `folders` whose entry name `accept`s, in folder then path order (see the
   * module doc); fails with the first folder that cannot be searched. The folders that exist are
   * searched concurrently.
   */
  readonly filesIn: (
    folders: ReadonlyArray<string>,
    accept: (entry: string) => boolean
  ) => Effect.Effect<ReadonlyArray<Found>, Unreadable>
  /**
   * Reads `path` and `parse`s it: the definition, or `undefined` (with a warning naming the file and
   * the reason) when it cannot be read or `parse` gives a reason instead.
   */
  readonly load: <A>(path: string, parse: (text: string) => Either.Either<A, string>) => Effect.Effect<A | undefined>
}

const reasonOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null ? String((error as { reason?: unknown }).reason) : undefined

/** Not there to search: missing, or not a directory. */
const isMissing = (error: unknown): boolean => ["NotFound", "BadResource"].includes(reasonOf(error) ?? "")

const messageOf = (error: unknown): string =>
  error instanceof Error
    ? error.message
    : typeof error === "object" && error !== null && "message" in error
      ? String(error.message)
      : String(error)

/**
 * A reader of one kind's folders; `kind` names the files in warnings (`command`: "invalid command
 * file … skipped"), `maxDepth` is how many subfolders deep files are looked for.
 */
export const reader = (options: {
  readonly kind: string
  readonly maxDepth: number
}): Effect.Effect<Reader, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    // Problems already reported, so that a bad file warns once, not at every look-up.
    const warned = new Set<string>()
    const warnOnce = (key: string, message: string, annotations: Record<string, unknown>) =>
      Effect.suspend(() => {
        if (warned.has(key)) return Effect.void
        warned.add(key)
        return Effect.logWarning(message).pipe(Effect.annotateLogs(annotations))
      })

    const walkFolder = (folder: string, accept: (entry: string) => boolean) =>
      Effect.gen(function* () {
        const found: Array<Found> = []
        const seen = new Set<string>()
        const walk = (directory: string, subfolders: ReadonlyArray<string>): Effect.Effect<void, unknown> =>
          Effect.gen(function* () {
            const real = yield* fs.realPath(directory)
            if (seen.has(real)) return
            seen.add(real)
            const entries = [...(yield* fs.readDirectory(directory))].sort()
            for (const entry of entries) {
              const path = nodePath.join(directory, entry)
              // stat follows symbolic links; a dangling one is simply not there.
              const info = yield* fs.stat(path).pipe(Effect.option)
              if (Option.isNone(info)) continue
              if (info.value.type === "File" && accept(entry)) found.push({ path, entry, subfolders })
              else if (info.value.type === "Directory" && subfolders.length < options.maxDepth) {
                yield* walk(path, [...subfolders, entry]).pipe(
                  Effect.catchAll((error) =>
                    warnOnce(`dir:${path}:${messageOf(error)}`, `${options.kind} folder skipped: ${messageOf(error)}`, {
                      directory: path
                    })
                  )
                )
              }
            }
          })
        yield* walk(folder, [])
        return found as ReadonlyArray<Found>
      }).pipe(
        Effect.catchAll((error) =>
          isMissing(error)
            ? Effect.succeed([] as ReadonlyArray<Found>)
            : Effect.fail(new Unreadable({ directory: folder, message: messageOf(error) }))
        )
      )

    // Most candidate folders do not exist: that is checked synchronously first, so a look-up (at every
    // Safe Step Boundary, for skills) costs no thread-pool round trips and no fibers for them.
    const filesIn = (folders: ReadonlyArray<string>, accept: (entry: string) => boolean) => {
      const present = folders.filter((folder) => nodeFs.existsSync(folder))
      if (present.length === 0) return Effect.succeed([] as ReadonlyArray<Found>)
      if (present.length === 1) return walkFolder(present[0]!, accept)
      return Effect.map(
        Effect.forEach(present, (folder) => walkFolder(folder, accept), { concurrency: "unbounded" }),
        (found): ReadonlyArray<Found> => found.flat()
      )
    }

    const load = <A>(path: string, parse: (text: string) => Either.Either<A, string>) =>
      fs.readFileString(path).pipe(
        Effect.map(parse),
        Effect.flatMap(
          Either.match({
            onRight: (definition) => Effect.succeed<A | undefined>(definition),
            onLeft: (reason) =>
              warnOnce(`file:${path}:${reason}`, `invalid ${options.kind} file ${path} skipped: ${reason}`, {
                file: path
              }).pipe(Effect.as(undefined))
          })
        ),
        Effect.catchAll((error) =>
          warnOnce(
            `file:${path}:${messageOf(error)}`,
            `unreadable ${options.kind} file ${path} skipped: ${messageOf(error)}`,
            { file: path }
          ).pipe(Effect.as(undefined))
        )
      )

    return { warnOnce, filesIn, load } satisfies Reader
  })
