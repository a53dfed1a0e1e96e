export * as TreeWriter from "./tree-writer.js"

/**
 * Tree Writer: takes a snapshot of a work tree in this process, writing the blob and tree objects
 * straight into the shadow repository's object store, so that a snapshot starts no process. Starting
 * one costs 6–12 ms on small VMs (fork/exec alone), several times what hashing a small project costs,
 * and a Step takes one or two.
 *
 * The tree id is the one `git add --all -- . && git write-tree` gives in the same repository for the
 * same work tree, under the settings the shadow repository runs with (`core.autocrlf=false`,
 * `core.symlinks=true`, file modes honoured):
 * - files are blobs of mode `100644`, or `100755` when the owner may execute them; symbolic links are
 *   blobs of mode `120000` holding the link's target; other kinds of file (sockets, FIFOs) are left out,
 *   as are empty directories and every entry named `.git`;
 * - ignore rules are git's: each directory's `.gitignore` (patterns relative to it, the deepest file
 *   that has a matching pattern decides, the last matching pattern in a file wins, `!` re-includes, an
 *   ignored directory is not entered), then the repository's `info/exclude`, then the user's global
 *   excludes file; a directory is tested as `name/`;
 * - entries are ordered as git orders them: by bytes, a directory's name compared as if it ended in `/`.
 *
 * Where git would do more than that, the writer declines (`undefined`) and the caller runs git: a
 * `.gitattributes` file anywhere in the tree, or a global attributes file (filters and end-of-line
 * conversion), a nested repository (a `.git` below the root: git records it as a submodule), a name
 * that is not valid UTF-8, a file larger than {@link maxFileBytes}, more than {@link maxEntries}
 * entries (git's own index then does better than a walk), or any error reading the tree.
 *
 * Unchanged files are not read again: a file's blob id is remembered with its size, modification and
 * change times, inode and mode, and reused while all of them stay the same, unless the file was
 * modified less than {@link racyMs} before it was hashed (file times can be coarser than the clock, so
 * a later write within that window might leave them unchanged; such a file is hashed every time).
 * The same rule keeps a directory's listing (adding, removing or renaming an entry changes the
 * directory's times), each ignore file's parsed rules (whose matchers also keep their answers for the
 * paths they were asked about), and each directory's last tree id, whose object is then known to be
 * stored. So a walk over an unchanged tree makes one `lstat` per entry and little else.
 * Objects are written once (an object file that exists is left alone) through a temporary file and a
 * rename, so a crash never leaves a partial object behind.
 */

import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as zlib from "node:zlib"
import ignore, { type Ignore } from "ignore"

/** Trees with more entries than this are left to git, whose index avoids re-reading them. */
export const maxEntries = 20_000
/** Files larger than this are left to git (the writer reads a file whole to hash it). */
export const maxFileBytes = 32 * 1024 * 1024
/** A file modified within this long before it was hashed is hashed again at the next snapshot. */
export const racyMs = 2_000

/** What a file's or directory's stat said when it was last read, and when that was (ms). */
interface Seen {
  readonly size: number
  readonly mtimeMs: number
  readonly ctimeMs: number
  readonly ino: number
  readonly mode: number
  readonly at: number
}

const seenOf = (stat: fs.Stats, at: number): Seen => ({
  size: stat.size,
  mtimeMs: stat.mtimeMs,
  ctimeMs: stat.ctimeMs,
  ino: stat.ino,
  mode: stat.mode,
  at
})

/**
 * Whether what was read at `before` still holds for a file or directory that `stat` describes now:
 * every time, size, inode and mode the same, and the read more than {@link racyMs} after the last
 * modification.
 */
const unchanged = (before: Seen | undefined, stat: fs.Stats): before is Seen =>
  before !== undefined &&
  before.size === stat.size &&
  before.mtimeMs === stat.mtimeMs &&
  before.ctimeMs === stat.ctimeMs &&
  before.ino === stat.ino &&
  before.mode === stat.mode &&
  before.at - before.mtimeMs > racyMs

interface Entry {
  readonly name: string
  readonly mode: string
  readonly id: string
  /** The name as git sorts it: a directory's with a trailing `/`. */
  readonly key: Buffer
}

/** Stops the walk: git must take this snapshot. */
class Decline extends Error {}

export interface Options {
  /** The shadow repository (`--git-dir`). */
  readonly gitDir: string
  /** The work tree's root (`--work-tree`). */
  readonly workTree: string
  /** The user's global excludes file, when there is one (`core.excludesFile`, else git's default). */
  readonly globalExcludes?: string
  /** The user's global attributes file (`core.attributesFile`, else git's default). */
  readonly globalAttributes?: string
}

export interface TreeWriter {
  /** Writes the work tree's objects and returns its tree id, or `undefined` when git must do it. */
  readonly write: () => string | undefined
}

/** git's default global excludes and attributes files (`$XDG_CONFIG_HOME/git/…`, else `~/.config/git/…`). */
export const defaultGlobalFile = (name: "ignore" | "attributes", env: NodeJS.ProcessEnv = process.env): string =>
  path.join(env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), ".config"), "git", name)

/** The text of a regular file, or `undefined` (looked at with a stat that does not throw: usually there is none). */
const readIfExists = (file: string | undefined): string | undefined => {
  if (file === undefined) return undefined
  try {
    return fs.statSync(file, { throwIfNoEntry: false })?.isFile() === true ? fs.readFileSync(file, "utf8") : undefined
  } catch {
    return undefined
  }
}

const hasReplacement = (name: string) => name.includes("\uFFFD")

export const make = (options: Options): TreeWriter => {
  /** Blob ids by path from the root. */
  const known = new Map<string, Seen & { readonly id: string }>()
  /** Directory listings by path from the root (`""`: the root). */
  const listings = new Map<string, Seen & { readonly names: ReadonlyArray<string> }>()
  /** Parsed ignore files by absolute path (undefined rules: it could not be read). */
  const ignores = new Map<string, Seen & { readonly rules: Ignore | undefined }>()
  /** The tree id each directory had at the last walk: its object is stored. */
  const trees = new Map<string, string>()
  const objects = path.join(options.gitDir, "objects")

  /** The object's id; it is written unless it is `stored` or its file exists. */
  const store = (type: "blob" | "tree", content: Buffer, stored?: string): string => {
    const header = Buffer.from(`${type} ${content.length}\0`)
    const id = crypto.createHash("sha1").update(header).update(content).digest("hex")
    if (id === stored) return id
    const file = path.join(objects, id.slice(0, 2), id.slice(2))
    if (fs.existsSync(file)) return id
    fs.mkdirSync(path.dirname(file), { recursive: true })
    const temporary = `${file}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`
    fs.writeFileSync(temporary, zlib.deflateSync(Buffer.concat([header, content])), { mode: 0o444 })
    fs.renameSync(temporary, file)
    return id
  }

  /** The rules of the ignore file `file` (following a symbolic link, as reading it does), if it exists. */
  const rulesOf = (file: string | undefined, consulted: Set<string>): Ignore | undefined => {
    if (file === undefined) return undefined
    consulted.add(file)
    let stat: fs.Stats | undefined
    try {
      // Usually missing (the global excludes file): a stat that does not throw.
      stat = fs.statSync(file, { throwIfNoEntry: false })
    } catch {
      stat = undefined
    }
    if (stat === undefined) {
      ignores.delete(file)
      return undefined
    }
    const before = ignores.get(file)
    if (unchanged(before, stat)) return before.rules
    const at = Date.now()
    const text = readIfExists(file)
    const rules = text === undefined ? undefined : ignore().add(text)
    ignores.set(file, { ...seenOf(stat, at), rules })
    return rules
  }

  /** The names in `directory` (at `relative` from the root), which `stat` describes. */
  const listing = (directory: string, relative: string, stat: fs.Stats): ReadonlyArray<string> => {
    const before = listings.get(relative)
    if (unchanged(before, stat)) return before.names
    const at = Date.now()
    const names = fs.readdirSync(directory)
    listings.set(relative, { ...seenOf(stat, at), names })
    return names
  }

  const write = (): string | undefined => {
    if (readIfExists(options.globalAttributes) !== undefined) return undefined
    const consulted = new Set<string>()
    const rootRules: Array<Ignore> = []
    for (const file of [options.globalExcludes, path.join(options.gitDir, "info", "exclude")]) {
      const rules = rulesOf(file, consulted)
      if (rules !== undefined) rootRules.push(rules)
    }
    let entries = 0
    const seen = new Set<string>()

    /** Whether `relative` (from the root, `/`-separated, `dir/` for a directory) is ignored. */
    const ignored = (levels: ReadonlyArray<{ readonly base: string; readonly rules: Ignore }>, relative: string) => {
      for (let i = levels.length - 1; i >= 0; i--) {
        const { base, rules } = levels[i]!
        const verdict = rules.test(base === "" ? relative : relative.slice(base.length + 1))
        if (verdict.ignored) return true
        if (verdict.unignored) return false
      }
      for (let i = rootRules.length - 1; i >= 0; i--) {
        const verdict = rootRules[i]!.test(relative)
        if (verdict.ignored) return true
        if (verdict.unignored) return false
      }
      return false
    }

    const visited = new Set<string>()
    const tree = (
      directory: string,
      relative: string,
      parents: ReadonlyArray<{ readonly base: string; readonly rules: Ignore }>,
      stat: fs.Stats
    ): string | undefined => {
      visited.add(relative)
      const names = listing(directory, relative, stat)
      if (relative !== "" && names.includes(".git")) throw new Decline("a nested repository")
      if (names.includes(".gitattributes")) throw new Decline("attributes")
      const gitignore = names.includes(".gitignore")
        ? rulesOf(path.join(directory, ".gitignore"), consulted)
        : undefined
      const levels = gitignore === undefined ? parents : [...parents, { base: relative, rules: gitignore }]
      const list: Array<Entry> = []
      for (const name of names) {
        if (name === ".git") continue
        if (hasReplacement(name)) throw new Decline("a name that is not UTF-8")
        if (++entries > maxEntries) throw new Decline("too many entries")
        const full = path.join(directory, name)
        const child = relative === "" ? name : `${relative}/${name}`
        const stat = fs.lstatSync(full)
        if (stat.isDirectory()) {
          if (ignored(levels, `${child}/`)) continue
          const id = tree(full, child, levels, stat)
          if (id !== undefined) list.push({ name, mode: "40000", id, key: Buffer.from(`${name}/`) })
          continue
        }
        if (!stat.isFile() && !stat.isSymbolicLink()) continue
        if (ignored(levels, child)) continue
        seen.add(child)
        const mode = stat.isSymbolicLink() ? "120000" : stat.mode & 0o100 ? "100755" : "100644"
        const before = known.get(child)
        if (unchanged(before, stat)) {
          list.push({ name, mode, id: before.id, key: Buffer.from(name) })
          continue
        }
        if (stat.size > maxFileBytes) throw new Decline("a large file")
        const hashedAt = Date.now()
        const content = stat.isSymbolicLink() ? Buffer.from(fs.readlinkSync(full)) : fs.readFileSync(full)
        const id = store("blob", content)
        known.set(child, { ...seenOf(stat, hashedAt), id })
        list.push({ name, mode, id, key: Buffer.from(name) })
      }
      if (list.length === 0) return undefined
      list.sort((a, b) => Buffer.compare(a.key, b.key))
      const parts: Array<Buffer> = []
      for (const entry of list) parts.push(Buffer.from(`${entry.mode} ${entry.name}\0`), Buffer.from(entry.id, "hex"))
      const id = store("tree", Buffer.concat(parts), trees.get(relative))
      trees.set(relative, id)
      return id
    }

    try {
      // An empty work tree is git's empty tree.
      const id = tree(options.workTree, "", [], fs.statSync(options.workTree)) ?? store("tree", Buffer.alloc(0))
      for (const file of known.keys()) if (!seen.has(file)) known.delete(file)
      for (const directory of listings.keys()) if (!visited.has(directory)) listings.delete(directory)
      for (const directory of trees.keys()) if (!visited.has(directory)) trees.delete(directory)
      for (const file of ignores.keys()) if (!consulted.has(file)) ignores.delete(file)
      return id
    } catch {
      return undefined
    }
  }

  return { write }
}
