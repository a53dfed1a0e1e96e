export * as ToolPath from "./tool-path.js"

import * as nodeFs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import { ToolRegistry } from "../tool-registry.js"

/**
 * Confinement of the file tools to the call's Location, by REAL path.
 *
 * Every path a tool touches is resolved the way the kernel would open it: each existing component's
 * symlink is followed (a `..` after a symlink climbs from its target), and a path that does not exist
 * yet resolves through its nearest existing ancestor, the missing rest appended as named. A dangling
 * symlink resolves to where a write through it would land. The Location directory is compared by its
 * real path too (a project under a symlinked `/tmp`). So a symlink inside the project that leads out
 * of it is treated as the outside file it is: `external_directory` asks for it, and the `read` (`.env`)
 * and `edit` rules see the file really touched.
 *
 * Residual race (TOCTOU): resolution happens before the permission checks and the tool then opens the
 * resolved path, which no longer passes through the symlinks that were checked. A component of that
 * resolved path that is replaced by a symlink between the check and the open (by another process
 * racing the tool) is still followed; closing that needs `openat2(RESOLVE_BENEATH)`, which Node does
 * not offer. The tools' own writes never create symlinks.
 */

/** Symlinks followed while resolving one path before giving up, as Linux's `ELOOP` limit. */
const maxLinks = 40

/**
 * The real path of `target` (absolute), resolving every existing component's symlink; the missing
 * tail of a path that does not exist is appended as named (`..` in it collapsed lexically). Fails with
 * a message on a symlink loop. Synchronous file system calls (a few `lstat`s: microseconds).
 */
export const realPathSync = (target: string): string => {
  const pending = target.split(path.sep)
  let resolved = path.parse(path.resolve(target)).root
  let missing = false
  let links = 0
  while (pending.length > 0) {
    const part = pending.shift()!
    if (part === "" || part === ".") continue
    if (part === "..") {
      resolved = path.dirname(resolved)
      continue
    }
    const next = path.join(resolved, part)
    if (missing) {
      resolved = next
      continue
    }
    let info: nodeFs.Stats | undefined
    try {
      info = nodeFs.lstatSync(next)
    } catch {
      info = undefined
    }
    if (info === undefined) {
      missing = true
      resolved = next
    } else if (info.isSymbolicLink()) {
      if (++links > maxLinks) throw new Error(`Too many levels of symbolic links: ${target}`)
      const link = nodeFs.readlinkSync(next)
      pending.unshift(...link.split(path.sep))
      if (path.isAbsolute(link)) resolved = path.parse(link).root
    } else {
      resolved = next
    }
  }
  return resolved
}

/** {@link realPathSync} as an Effect; a symlink loop is a ToolFailure. */
export const realPath = (target: string): Effect.Effect<string, ToolRegistry.ToolFailure> =>
  Effect.try({
    try: () => realPathSync(target),
    catch: (error) => new ToolRegistry.ToolFailure({ message: (error as Error).message })
  })

/**
 * The absolute path a tool argument names, lexically: relative paths resolve against the call's
 * Location directory, absolute ones are taken as given (normalized). Pure. Tools confine and open
 * {@link target}'s result, not this.
 */
export const resolve = (context: ToolRegistry.CallContext, value: string): string =>
  path.resolve(context.directory, value)

/** Whether `target` is `parent` or lies below it, lexically (both absolute). Pure. */
export const isWithin = (parent: string, target: string): boolean => {
  const relative = path.relative(parent, target)
  return relative === "" || (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
}

/** A path a tool call touches, resolved for confinement (see the module doc). */
export interface Target {
  /**
   * Where the tool opens the file, and the path it reports: inside the Location, the Location
   * directory as the session names it joined with the real path below it; outside, the real path.
   */
  readonly path: string
  /** Whether the real path lies inside the Location's real directory. */
  readonly inside: boolean
  /**
   * The path relative to the Location's real directory (`src/a.ts`; `../x` outside), the shape of
   * `edit` rules.
   */
  readonly name: string
}

/** The Location directory's real path. */
export const locationDir = (context: ToolRegistry.CallContext): Effect.Effect<string, ToolRegistry.ToolFailure> =>
  realPath(context.directory)

/** Resolves `absolute` (already absolute) against the Location's real directory `realDir`. */
export const classify = (
  context: ToolRegistry.CallContext,
  realDir: string,
  absolute: string
): Effect.Effect<Target, ToolRegistry.ToolFailure> =>
  Effect.map(realPath(absolute), (real) => {
    const inside = isWithin(realDir, real)
    const name = path.relative(realDir, real) || "."
    return { path: inside ? path.join(context.directory, name === "." ? "" : name) : real, inside, name }
  })

/** The Target a tool argument names: {@link resolve}, then its real path (see the module doc). */
export const target = (
  context: ToolRegistry.CallContext,
  value: string
): Effect.Effect<Target, ToolRegistry.ToolFailure> =>
  Effect.flatMap(locationDir(context), (realDir) => classify(context, realDir, resolve(context, value)))

/** The `external_directory` resource of an outside path: its directory as a glob (`<dir>/*`). Pure. */
export const externalResource = (real: string, kind: "file" | "directory"): string =>
  path.join(kind === "directory" ? real : path.dirname(real), "*")

/**
 * Asks `external_directory` when `target` lies outside the call's Location directory. The resource is
 * the containing directory as a glob (`<dir>/*`, the directory itself for `kind: "directory"`), the
 * shape the agents' rules are written in (e.g. `<data>/tool-output/*` allowed, `*` ask).
 *
 * `managedDir` (the Managed Tool Output directory, compared by its real path) is exempt: its files are
 * readable and searchable by ordinary tools wherever it lies, so read and grep pass it to reach a
 * bounded output's full text.
 */
export const authorize = (
  context: ToolRegistry.CallContext,
  target: Target,
  options: { readonly kind: "file" | "directory"; readonly managedDir?: string | undefined }
): Effect.Effect<void, ToolRegistry.ToolFailure> =>
  Effect.gen(function* () {
    if (target.inside) return
    if (options.managedDir !== undefined && isWithin(yield* realPath(options.managedDir), target.path)) return
    const parentDir = options.kind === "directory" ? target.path : path.dirname(target.path)
    yield* context.ask({
      action: "external_directory",
      resources: [externalResource(target.path, options.kind)],
      metadata: { filepath: target.path, parentDir }
    })
  })

/**
 * Confines the files a directory walk found. The walk (FileWalk) does not descend into symlinked
 * directories, so only a symlinked FILE can lead elsewhere; each entry that is a symlink is resolved,
 * and those whose real path lies outside both the Location and the walk's (already authorized) real
 * `root` (and outside `managedDir`) are authorized with ONE `external_directory` ask naming their
 * directories. When that ask is refused they are left out (the walk's other results stand) and
 * `skipped` counts them. Entries come back at their real path, deduplicated.
 */
export const confineWalk = (
  context: ToolRegistry.CallContext,
  files: ReadonlyArray<string>,
  options: { readonly root: string; readonly managedDir?: string | undefined }
): Effect.Effect<{ readonly files: ReadonlyArray<string>; readonly skipped: number }, ToolRegistry.ToolFailure> =>
  Effect.gen(function* () {
    const realDir = yield* locationDir(context)
    const managed = options.managedDir === undefined ? undefined : yield* realPath(options.managedDir)
    const root = yield* realPath(options.root)
    const kept: Array<string> = []
    const outside: Array<string> = []
    for (const file of files) {
      let isLink = false
      try {
        isLink = nodeFs.lstatSync(file).isSymbolicLink()
      } catch {
        continue
      }
      if (!isLink) {
        kept.push(file)
        continue
      }
      const real = yield* realPath(file)
      const allowed =
        isWithin(realDir, real) || isWithin(root, real) || (managed !== undefined && isWithin(managed, real))
      if (allowed)
        kept.push(isWithin(realDir, real) ? path.join(context.directory, path.relative(realDir, real)) : real)
      else outside.push(real)
    }
    let skipped = 0
    if (outside.length > 0) {
      const resources = [...new Set(outside.map((real) => externalResource(real, "file")))]
      const granted = yield* context
        .ask({
          action: "external_directory",
          resources,
          metadata: { filepath: outside[0], parentDir: path.dirname(outside[0]!), files: outside }
        })
        .pipe(
          Effect.as(true),
          Effect.catchAll(() => Effect.succeed(false))
        )
      if (granted) kept.push(...outside)
      else skipped = outside.length
    }
    return { files: [...new Set(kept)], skipped }
  })
