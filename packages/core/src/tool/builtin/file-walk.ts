export * as FileWalk from "./file-walk.js"

import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import { fdir } from "fdir"
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
const gitignore = (root: string) => {
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

/**
 * The files under `root` (absolute paths, in walk order), hidden files included, skipping `.git`
 * folders and whatever `.gitignore` files exclude; ignored directories are pruned, not walked.
 * Unreadable directories are skipped. Interruption aborts the walk.
 */
export const files = (options: Options): Effect.Effect<ReadonlyArray<string>> =>
  Effect.promise((signal) => {
    const ignored = gitignore(options.root)
    let crawler = new fdir()
      .withFullPaths()
      .withAbortSignal(signal)
      .exclude((name, dirPath) => name === ".git" || ignored(dirPath, true))
      .filter((file) => {
        if (ignored(file, false)) return false
        return options.match === undefined || options.match(toPosix(path.relative(options.root, file)))
      })
    if (options.limit !== undefined) crawler = crawler.withMaxFiles(options.limit)
    return crawler
      .crawl(options.root)
      .withPromise()
      .then((all) => (options.limit !== undefined ? all.slice(0, options.limit) : all))
  })
