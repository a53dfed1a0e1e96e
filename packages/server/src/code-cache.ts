import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import * as vm from "node:vm"

export * as CodeCache from "./code-cache.js"

/**
 * V8's code cache for the bundled server, on every Node the README targets (Node 20 has no
 * `module.enableCompileCache`): {@link run} compiles a CommonJS bundle with the bytecode a previous
 * start saved, so a start neither parses the bundle nor compiles the functions that start-up calls.
 *
 * Resolution: a cache file is keyed by a SHA-256 of the bundle's text, its path, the Node version,
 * the architecture and the process's Node options, so a changed bundle (even one of the same length,
 * which V8's own check would accept) or another Node never meets a stale entry. V8 still checks
 * the data and rejects what does not fit; a rejected or missing entry is written again by
 * {@link Loaded.save}, once, after the code it should hold has run.
 *
 * The cache lives in `<os temp>/opencode-compile-cache`; `NODE_COMPILE_CACHE` (a directory) wins when
 * set, and `NODE_DISABLE_COMPILE_CACHE=1` turns it off, as for Node's own compile cache. The cache
 * only ever saves time: an unreadable, unwritable or corrupt cache never stops a start. Entries are
 * written to a temporary file and renamed into place, so concurrent starts read whole entries only.
 */
export const run = (file: string, env: Record<string, string | undefined> = process.env): Loaded => {
  const { script, status, cacheFile } = compile(file, env)
  const module = { exports: {} as unknown }
  const body = script.runInThisContext() as (
    exports: unknown,
    require: NodeJS.Require,
    module: { exports: unknown },
    filename: string,
    dirname: string
  ) => void
  body.call(module.exports, module.exports, createRequire(file), module, file, path.dirname(file))
  let saved = status === "used" || status === "disabled"
  return {
    status,
    exports: module.exports,
    save: () => {
      if (saved || cacheFile === undefined) return false
      saved = true
      return write(cacheFile, script.createCachedData())
    }
  }
}

/**
 * The bundle compiled, with its cache entry when there is one. A function of its own, so that
 * nothing but the script outlives it: the entry's buffer (megabytes, outside V8's heap, freed only
 * once its object is collected) is garbage before the bundle runs, and the run's first collections
 * free it, where a reference held through the run would keep it for as long as an idle server makes
 * no full collection. The same holds for the bundle's bytes, which {@link read} drops before the
 * compilation starts.
 */
const compile = (file: string, env: Record<string, string | undefined>) => {
  const { source, cacheFile } = read(file, env)
  let cachedData: Buffer | undefined
  if (cacheFile !== undefined) {
    try {
      cachedData = fs.readFileSync(cacheFile)
    } catch {
      // No entry yet (or an unreadable one): compile from the source, and save afterwards.
    }
  }
  const script = new vm.Script(source, {
    filename: file,
    ...(cachedData === undefined ? {} : { cachedData })
  })
  const status: Status =
    cacheFile === undefined
      ? "disabled"
      : cachedData === undefined
        ? "missing"
        : script.cachedDataRejected
          ? "rejected"
          : "used"
  return { script, status, cacheFile }
}

// Node's CommonJS wrapper (one line, so the bundle's line numbers stay as they are).
const wrapperStart = Buffer.from("(function (exports, require, module, __filename, __dirname) { ")
const wrapperEnd = Buffer.from("\n})")

/**
 * The bundle's text inside {@link wrapperStart} and {@link wrapperEnd}, and its cache entry's path.
 * The file is read as bytes straight into place between the wrapper's two parts, its bytes hashed,
 * and the whole decoded once as UTF-8, so a start makes one string of the bundle instead of two (the
 * text, then the wrapped copy V8 flattens): idle RSS 4 MiB less. Where this was measured,
 * `readFileSync(file, "utf8")` and a hash of that string (which encodes it back to UTF-8) took
 * 41 ms for the 3.1 MB bundle, against 25 ms for these steps. The digest is the one the string gave,
 * so entries written before stay valid. UTF-8 although the build keeps the bundle ASCII: decoded as
 * Latin-1, a string this large is external, and a server started that way measured 11 MiB more RSS
 * when idle.
 */
const read = (file: string, env: Record<string, string | undefined>) => {
  const fd = fs.openSync(file, "r")
  try {
    const size = fs.fstatSync(fd).size
    const bytes = Buffer.allocUnsafeSlow(wrapperStart.length + size + wrapperEnd.length)
    wrapperStart.copy(bytes, 0)
    let filled = 0
    while (filled < size) {
      const got = fs.readSync(fd, bytes, wrapperStart.length + filled, size - filled, filled)
      if (got === 0) break
      filled += got
    }
    const body = bytes.subarray(wrapperStart.length, wrapperStart.length + filled)
    wrapperEnd.copy(bytes, wrapperStart.length + filled)
    const end = wrapperStart.length + filled + wrapperEnd.length
    return { source: bytes.toString("utf8", 0, end), cacheFile: entryFor(file, body, env) }
  } finally {
    fs.closeSync(fd)
  }
}

/** What {@link run} found: `used` (accepted by V8), `missing`, `rejected` (V8 refused it), or `disabled`. */
export type Status = "used" | "missing" | "rejected" | "disabled"

export interface Loaded {
  readonly status: Status
  /** The bundle's `module.exports`. */
  readonly exports: unknown
  /**
   * Writes the bytecode compiled so far (the bundle's top level and every function called since) as
   * the bundle's entry, when the entry was missing or rejected; at most once. Returns whether an entry
   * was written. Never throws.
   */
  readonly save: () => boolean
}

/** The entry's path for this bundle, Node and process; undefined when the cache is off. */
const entryFor = (file: string, bytes: Buffer, env: Record<string, string | undefined>): string | undefined => {
  if (env.NODE_DISABLE_COMPILE_CACHE !== undefined && env.NODE_DISABLE_COMPILE_CACHE !== "") return undefined
  const directory = env.NODE_COMPILE_CACHE || path.join(os.tmpdir(), "opencode-compile-cache")
  const key = createHash("sha256")
    .update([process.version, process.arch, process.execArgv.join(" "), ""].join("\0"))
    .update(bytes)
    .digest("hex")
    .slice(0, 32)
  return path.join(directory, `${prefixOf(file)}${key}.v8`)
}

/** The start of every entry's name for the bundle at this path (older builds' entries included). */
const prefixOf = (file: string): string =>
  `${path.basename(file)}-${createHash("sha256").update(path.resolve(file)).digest("hex").slice(0, 8)}-`

const write = (cacheFile: string, data: Buffer): boolean => {
  const temporary = `${cacheFile}.${process.pid}.tmp`
  try {
    fs.mkdirSync(path.dirname(cacheFile), { recursive: true })
    fs.writeFileSync(temporary, data)
    fs.renameSync(temporary, cacheFile)
  } catch {
    try {
      fs.rmSync(temporary, { force: true })
    } catch {
      // Left for the directory's owner: a failed write never fails the process.
    }
    return false
  }
  // Entries of the builds this one replaced (same bundle path, other bytes or another Node) go.
  const directory = path.dirname(cacheFile)
  const prefix = path.basename(cacheFile).replace(/[0-9a-f]+\.v8$/, "")
  try {
    for (const name of fs.readdirSync(directory))
      if (name.startsWith(prefix) && name.endsWith(".v8") && name !== path.basename(cacheFile))
        fs.rmSync(path.join(directory, name), { force: true })
  } catch {
    // Another start may be removing them too.
  }
  return true
}
