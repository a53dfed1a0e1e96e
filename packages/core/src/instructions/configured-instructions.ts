export * as ConfiguredInstructions from "./configured-instructions.js"

/**
 * Configured Instructions: the extra instruction files named by the `instructions` config key
 * (`"instructions": ["CONTRIBUTING.md", "docs/rules/*.md", "~/notes/style.md"]`), resolved to the
 * files they name for one Location. They join InstructionDiscovery's aggregate after the AGENTS.md
 * files (see `InstructionDiscovery.Interface.paths`).
 *
 * Resolution of each entry, in config order (an entry's own matches sorted by path; a file already
 * named earlier, by any entry or as an AGENTS.md file, is listed once, at its first place):
 * - `~/rest` is `rest` under the home directory, then treated as absolute;
 * - an **absolute** path names that file; an absolute glob matches under its leading literal
 *   directories;
 * - a **relative** path or glob is matched in the Location directory and then in each parent up to
 *   and including the project root (nearest first, as upstream's upward search); a directory outside
 *   its project root is searched alone. With `OPENCODE_DISABLE_PROJECT_CONFIG` set, relative entries
 *   are skipped (they name project files);
 * - `http://` and `https://` entries (remote instructions upstream) are not fetched: skipped.
 *
 * Globs use picomatch syntax (`*`, `**`, `?`, `[…]`, `{a,b}`); matching walks the file tree under
 * the glob's literal base, skipping `.git` and `node_modules` directories, and stops after
 * {@link maxMatches} files per entry. A plain path is listed whether or not it exists (the loader
 * skips a missing file); a glob lists existing regular files only.
 */

import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { fdir } from "fdir"
import picomatch from "picomatch"
import { Upward } from "../location/upward.js"

/** At most this many files per glob entry. */
export const maxMatches = 100

export interface Context {
  /** The Location directory (absolute). */
  readonly directory: string
  /** The Location's project root (absolute). */
  readonly projectRoot: string
  /** The home directory `~/` expands to. */
  readonly home: string
  /** `OPENCODE_DISABLE_PROJECT_CONFIG` is set: relative entries are skipped. */
  readonly projectDisabled: boolean
}

const isRemote = (entry: string): boolean => /^https?:\/\//i.test(entry)

/** Whether `value` has glob syntax (otherwise it is one literal path). */
const isGlob = (value: string): boolean => picomatch.scan(value).isGlob

/** The existing regular files under `base` whose path relative to `base` matches `glob`, sorted. */
const matchUnder = (base: string, glob: string): ReadonlyArray<string> => {
  const isMatch = picomatch(glob, { dot: true })
  let found: Array<string>
  try {
    if (!nodeFs.statSync(base).isDirectory()) return []
    found = new fdir()
      .withFullPaths()
      .exclude((name) => name === ".git" || name === "node_modules")
      .filter((path) => isMatch(nodePath.relative(base, path).split(nodePath.sep).join("/")))
      .withMaxFiles(maxMatches)
      .crawl(base)
      .sync()
  } catch {
    return []
  }
  return found.sort()
}

/** One absolute entry (already `~`-expanded): the file itself, or a glob's matches. */
const absolute = (entry: string): ReadonlyArray<string> => {
  const normalized = nodePath.resolve(entry)
  if (!isGlob(entry)) return [normalized]
  const { base, glob } = picomatch.scan(entry)
  return matchUnder(nodePath.resolve(base === "" ? "/" : base), glob)
}

/** One relative entry in each directory from the Location up to the project root. */
const relative = (entry: string, context: Context): ReadonlyArray<string> =>
  Upward.directories(nodePath.resolve(context.directory), nodePath.resolve(context.projectRoot)).flatMap(
    (directory) => {
      if (!isGlob(entry)) return [nodePath.resolve(directory, entry)]
      const { base, glob } = picomatch.scan(entry)
      return matchUnder(nodePath.resolve(directory, base), glob)
    }
  )

/**
 * The files `entries` name for `context` (see the module doc), in order, each once. Reads
 * directories only to expand globs; never fails.
 */
export const resolve = (entries: ReadonlyArray<string>, context: Context): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (const raw of entries) {
    const entry = raw.trim()
    if (entry === "" || isRemote(entry)) continue
    const expanded = entry === "~" || entry.startsWith("~/") ? nodePath.join(context.home, entry.slice(1)) : entry
    if (nodePath.isAbsolute(expanded)) out.push(...absolute(expanded))
    else if (!context.projectDisabled) out.push(...relative(expanded, context))
  }
  return [...new Set(out)]
}
