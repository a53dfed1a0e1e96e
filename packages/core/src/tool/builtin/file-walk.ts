export * as FileWalk from "./file-walk.js"

import * as fs from "node:fs"
import * as path from "node:path"
import { Chunk, Effect, Stream } from "effect"
import ignore, { type Ignore } from "ignore"
import picomatch from "picomatch"

export interface Options {
  /** The directory to walk (absolute). */
  readonly root: string
  /** Keeps a file when true; receives its path relative to `root`, with `/` separators. */
  readonly match?: (relativePath: string) => boolean
  /** Stops the walk once this many files matched. */
  readonly limit?: number
}

/**
 * A matcher for paths relative to the walk's root (`/`-separated), from a glob: a pattern without
 * "/" matches a file name at any depth, as ripgrep globs and `.gitignore` lines do (`*.ts`); one with
 * "/" matches the whole relative path (`src/*.ts`). Dot files match. Braces, extglobs and
 * classes are picomatch's.
 */
export const matcher = (pattern: string): ((relativePath: string) => boolean) =>
  picomatch(pattern, { dot: true, basename: !pattern.includes("/") })

/** The nearest directory at or above `start` that holds a `.git` entry, if any. */
const gitRoot = (start: string): string | undefined => {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, ".git"))) return dir
    if (path.dirname(dir) === dir) return undefined
  }
}

const toPosix = (value: string) => (path.sep === "/" ? value : value.split(path.sep).join("/"))

/**
 * The `.gitignore` rules that apply under `root`: each directory's own file, loaded once when the walk
 * first needs it, from the repository root (or `root` outside a repository) down. A path is ignored
 * when any of its ancestors' rules ignore it (relative to that ancestor), as git reads them; a child
 * `.gitignore` cannot re-include what a parent excluded, which git does not allow for directories
 * either.
 */
export const gitignore = (root: string): ((absolute: string, isDirectory: boolean) => boolean) => {
  const top = gitRoot(root) ?? root
  const rules = new Map<string, Ignore | undefined>()
  const load = (dir: string): Ignore | undefined => {
    if (!rules.has(dir)) {
      let rule: Ignore | undefined
      try {
        rule = ignore().add(fs.readFileSync(path.join(dir, ".gitignore"), "utf8"))
      } catch {
        rule = undefined
      }
      rules.set(dir, rule)
    }
    return rules.get(dir)
  }
  return (absolute: string, isDirectory: boolean): boolean => {
    const target = absolute.endsWith(path.sep) && absolute.length > 1 ? absolute.slice(0, -1) : absolute
    for (let dir = path.dirname(target); ; dir = path.dirname(dir)) {
      const rule = load(dir)
      if (rule !== undefined) {
        const relative = toPosix(path.relative(dir, target))
        if (relative !== "" && rule.ignores(isDirectory ? `${relative}/` : relative)) return true
      }
      if (dir === top || path.dirname(dir) === dir || !dir.startsWith(top)) return false
    }
  }
}

/** Paths handed on together: one directory's entries, at most this many at a time. */
const batchSize = 256

/** One path the walk found: a regular file, a directory, or a symlink (listed, never followed). */
export interface Entry {
  /** Absolute. */
  readonly path: string
  readonly type: "file" | "directory" | "symlink"
}

/**
 * Depth-first over `root`, one directory open at a time, yielding batches of entries: files and
 * symlinks, and with `directories` the directories descended into as well (each before its content).
 * A consumer that stops pulling stops the walk: the generator is returned and its open directory
 * closed.
 */
async function* walk(
  options: Options,
  ignored: (absolute: string, isDirectory: boolean) => boolean,
  directories: boolean
) {
  const pending = [options.root]
  while (pending.length > 0) {
    const dir = pending.pop()!
    let handle: fs.Dir
    try {
      handle = await fs.promises.opendir(dir, { bufferSize: batchSize })
    } catch {
      continue
    }
    const subdirectories: Array<string> = []
    let batch: Array<Entry> = []
    try {
      for await (const entry of handle) {
        const full = path.join(dir, entry.name)
        // Some file systems do not report entry types: those entries are looked at (lstat).
        const known = entry.isFile() || entry.isDirectory() || entry.isSymbolicLink()
        const kind = known ? entry : await fs.promises.lstat(full).catch(() => undefined)
        if (kind === undefined) continue
        if (kind.isDirectory()) {
          if (entry.name !== ".git" && !ignored(full, true)) subdirectories.push(full)
          continue
        }
        // Symlinks are listed by name and never followed (a symlinked directory is not descended).
        if (!kind.isFile() && !kind.isSymbolicLink()) continue
        if (ignored(full, false)) continue
        if (options.match !== undefined && !options.match(toPosix(path.relative(options.root, full)))) continue
        batch.push({ path: full, type: kind.isSymbolicLink() ? "symlink" : "file" })
        if (batch.length >= batchSize) {
          yield batch
          batch = []
        }
      }
    } catch {
      // A directory that fails mid-read keeps what it listed.
    }
    // Sorted names, visited in order: the walk order is stable from run to run.
    subdirectories.sort()
    if (directories) for (const subdirectory of subdirectories) batch.push({ path: subdirectory, type: "directory" })
    if (batch.length > 0) yield batch
    for (let index = subdirectories.length - 1; index >= 0; index--) pending.push(subdirectories[index]!)
  }
}

/**
 * The files under `root` (absolute paths, in walk order) as a lazy stream, hidden files included,
 * skipping `.git` folders and whatever `.gitignore` files exclude; ignored directories are pruned,
 * not walked, and unreadable directories are skipped. The walk runs only as far as the stream is
 * pulled: taking the first N files, or interrupting the consumer, stops it without listing the
 * rest of the tree (at most one directory batch beyond what was taken is listed). `limit` ends the
 * stream after that many files.
 */
export const stream = (options: Options): Stream.Stream<string> => {
  const files = Stream.suspend(() =>
    Stream.fromAsyncIterable(walk(options, gitignore(options.root), false), (error) => error).pipe(
      Stream.orDie,
      Stream.mapConcat((batch) => batch.map((entry) => entry.path))
    )
  )
  return options.limit === undefined ? files : Stream.take(files, options.limit)
}

/**
 * What {@link stream} walks, as typed entries, the directories it descends into included (each one
 * before its content; `match` still filters files only). `.git` folders and `.gitignore`d paths are
 * left out; symlinks are reported as such, never followed. Lazy like {@link stream}: the walk runs only
 * as far as the stream is pulled, and `limit` ends it after that many entries.
 */
export const entries = (options: Options): Stream.Stream<Entry> => {
  const all = Stream.suspend(() =>
    Stream.fromAsyncIterable(walk(options, gitignore(options.root), true), (error) => error).pipe(
      Stream.orDie,
      Stream.mapConcat((batch) => batch)
    )
  )
  return options.limit === undefined ? all : Stream.take(all, options.limit)
}

/** The files {@link stream} yields, collected (`limit` bounds them). Interruption stops the walk. */
export const files = (options: Options): Effect.Effect<ReadonlyArray<string>> =>
  Effect.map(Stream.runCollect(stream(options)), Chunk.toReadonlyArray)
