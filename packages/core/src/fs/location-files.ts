export * as LocationFiles from "./location-files.js"

/**
 * The files of a Location, as clients browse them: read one file, list one directory, find paths by
 * a ranked query. Nothing here writes.
 *
 * Confinement. Every path names something inside the Location's directory, by REAL path: a request
 * path resolves against the Location directory (an absolute path is taken as given), must stay inside
 * it lexically (`..` cannot climb out), and then every symlink along it is followed (as
 * `ToolPath.realPathSync` does) and the result must still lie inside the directory's real path.
 * Anything else fails with {@link LocationFileError.OutsideLocation}, whether or not the outside
 * target exists, so nothing is learnt about the rest of the disk. A listing or a find leaves out the
 * symlinks whose targets lie outside, rather than failing.
 *
 * Ignore files. `list` and `find` leave out `.git` folders and what the `.gitignore` files from the
 * repository root down exclude, as the `glob` and `grep` tools do (`FileWalk`); `read` serves any
 * file inside the Location, ignored or not.
 *
 * Interruption: each operation only reads, so interrupting one leaves nothing behind; an interrupted
 * `find` stops its walk.
 */

import * as nodeBuffer from "node:buffer"
import * as nodeFs from "node:fs"
import * as path from "node:path"
import { Context, Effect, Layer, Stream } from "effect"
import { Traced } from "../observability/traced.js"
import { BinaryFile } from "../tool/builtin/binary-file.js"
import { FileWalk } from "../tool/builtin/file-walk.js"
import { ToolPath } from "../tool/builtin/tool-path.js"
import { LocationFileError } from "./location-file-error.js"
import { MediaTypes } from "./media-types.js"
import { PathQuery } from "./path-query.js"

/** The Location a request works in: its directory, absolute (as `Locations.resolve` gives it). */
export interface Where {
  readonly directory: string
}

/** A file or directory inside the Location; `path` is relative to the Location directory, `/`-separated. */
export interface Entry {
  readonly path: string
  readonly type: "file" | "directory"
}

/** A file read whole. */
export interface Content {
  /** The file's path relative to the Location directory, `/`-separated, as the request named it. */
  readonly path: string
  readonly bytes: Uint8Array
  /**
   * Whether the content is binary: a binary-only extension (`.png`, `.zip`…), a NUL byte or mostly
   * control characters in its first bytes, or bytes that are not valid UTF-8.
   */
  readonly binary: boolean
  /**
   * The media type to serve it as: for text, the type its name says when that is a text type (else
   * `text/plain`), with `; charset=utf-8`; for binary content, the type its name says when that is
   * not a text type, else `application/octet-stream`.
   */
  readonly mime: string
}

export interface FindInput {
  /** Whitespace-separated terms, each matched against the relative path (see {@link PathQuery}). */
  readonly query: string
  /** Only files, or only directories; both when absent. */
  readonly type?: "file" | "directory" | undefined
  /** How many entries at most (default {@link Options.findLimit}, at most {@link Options.maxFindLimit}). */
  readonly limit?: number | undefined
}

export interface Interface {
  /**
   * The file at `file` (relative to the Location directory), whole. Fails with `OutsideLocation`,
   * `NotFound`, `NotAFile` (a directory, a FIFO, a device: never opened) or `TooLarge` (larger than
   * {@link Options.maxReadBytes}; nothing is read).
   */
  readonly read: (
    where: Where,
    file: string
  ) => Effect.Effect<
    Content,
    | LocationFileError.OutsideLocation
    | LocationFileError.NotFound
    | LocationFileError.NotAFile
    | LocationFileError.TooLarge
  >
  /**
   * The direct children of the directory at `directory` (default: the Location directory): directories
   * first, then files, each group in code-unit order of its path. Other kinds of entries (sockets,
   * FIFOs), `.git`, ignored entries and symlinks leading outside are left out; a symlink inside is
   * listed with its target's type. A directory that is itself ignored (named explicitly) is listed
   * in full. Fails with `OutsideLocation`, `NotFound` or `NotADirectory`.
   */
  readonly list: (
    where: Where,
    directory?: string
  ) => Effect.Effect<
    ReadonlyArray<Entry>,
    LocationFileError.OutsideLocation | LocationFileError.NotFound | LocationFileError.NotADirectory
  >
  /**
   * Up to `limit` entries below the Location directory whose paths match the query, best ranked first
   * (see {@link PathQuery}). The walk is asynchronous and visits at most {@link Options.maxScanned}
   * entries, so a huge tree answers with the best of what was visited; it never fails.
   */
  readonly find: (where: Where, input: FindInput) => Effect.Effect<ReadonlyArray<Entry>>
}

/** Reads, lists and finds files of a Location; `yield* LocationFiles.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/LocationFiles")<Service, Interface>() {}

export interface Options {
  /** The largest file `read` serves, in bytes (default 10 MiB). */
  readonly maxReadBytes?: number | undefined
  /** `find`'s limit when the request names none (default 100). */
  readonly findLimit?: number | undefined
  /** The largest limit `find` honours; a larger one is lowered to it (default 1000). */
  readonly maxFindLimit?: number | undefined
  /** How many entries one `find` walk visits at most (default 200 000). */
  readonly maxScanned?: number | undefined
}

export const defaults = {
  maxReadBytes: 10 * 1024 * 1024,
  findLimit: 100,
  maxFindLimit: 1000,
  maxScanned: 200_000
} as const

/** Media types that are text although not `text/*`. */
const textApplicationTypes = new Set([
  "application/javascript",
  "application/json",
  "application/xml",
  "application/x-sh",
  "application/toml",
  "application/yaml",
  "application/x-yaml",
  "application/sql",
  "application/graphql",
  "application/ld+json",
  "application/xhtml+xml",
  "image/svg+xml"
])

const isTextType = (type: string): boolean =>
  type.startsWith("text/") || textApplicationTypes.has(type) || type.endsWith("+json") || type.endsWith("+xml")

/** The media type to serve a file as, from its name and whether its content is binary (see {@link Content.mime}). Pure. */
export const mediaType = (file: string, binary: boolean): string => {
  const named = MediaTypes.byName(file)
  if (!binary) return `${named !== null && isTextType(named) ? named : "text/plain"}; charset=utf-8`
  return named !== null && !isTextType(named) ? named : "application/octet-stream"
}

/** Whether bytes are binary content (see {@link Content.binary}). Pure. */
export const isBinary = (file: string, bytes: Uint8Array): boolean =>
  BinaryFile.hasBinaryExtension(file) ||
  BinaryFile.looksBinary(bytes.subarray(0, BinaryFile.sampleSize)) ||
  !nodeBuffer.isUtf8(bytes)

const toPosix = (value: string) => (path.sep === "/" ? value : value.split(path.sep).join("/"))

/** Node's error code, if any. */
const codeOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error ? String((error as { code: unknown }).code) : undefined

/**
 * A request path as errors quote it: whole up to 200 characters, else its start and its length, so
 * an absurd path cannot make an error body of its own size.
 */
const shown = (requested: string): string =>
  requested.length <= 200 ? requested : `${requested.slice(0, 200)}… (${requested.length} characters)`

const notFound = (requested: string, error?: unknown) => {
  const code = codeOf(error)
  const reason = code === undefined || code === "ENOENT" || code === "ENOTDIR" ? "" : ` (${code})`
  return new LocationFileError.NotFound({
    path: shown(requested),
    message: `No such file or directory: ${shown(requested)}${reason}`
  })
}

const outside = (requested: string) =>
  new LocationFileError.OutsideLocation({
    path: shown(requested),
    message: `Path is outside the location: ${shown(requested)}`
  })

/** A request path resolved inside the Location (see the module doc). */
interface Resolved {
  /** Lexical: the Location directory joined with the request path. */
  readonly absolute: string
  /** Every symlink followed. */
  readonly real: string
  /** The Location directory's real path. */
  readonly root: string
}

/** Resolves and confines `requested` (see the module doc); a symlink loop is `NotFound`. */
const confine = (
  where: Where,
  requested: string
): Effect.Effect<Resolved, LocationFileError.OutsideLocation | LocationFileError.NotFound> =>
  Effect.suspend((): Effect.Effect<Resolved, LocationFileError.OutsideLocation | LocationFileError.NotFound> => {
    // No file name holds a NUL byte (and Node refuses one in a path).
    if (requested.includes("\0")) return Effect.fail(notFound(requested))
    const absolute = path.resolve(where.directory, requested)
    if (!ToolPath.isWithin(where.directory, absolute)) return Effect.fail(outside(requested))
    let root: string
    let real: string
    try {
      root = ToolPath.realPathSync(where.directory)
      real = ToolPath.realPathSync(absolute)
    } catch (error) {
      return Effect.fail(notFound(requested, error))
    }
    if (!ToolPath.isWithin(root, real)) return Effect.fail(outside(requested))
    return Effect.succeed({ absolute, real, root })
  })

const statOf = (requested: string, real: string) =>
  Effect.tryPromise({ try: () => nodeFs.promises.stat(real), catch: (error) => notFound(requested, error) })

/** The name a request gives a path, relative to the Location directory. */
const relativeName = (where: Where, absolute: string) => toPosix(path.relative(where.directory, absolute))

/**
 * The type an entry found by a walk or a listing stands for: a symlink counts as its target's type,
 * and is left out (undefined) when the target lies outside `root`, is missing, or is neither a file
 * nor a directory.
 */
const linkedType = (link: string, root: string): "file" | "directory" | undefined => {
  try {
    const real = ToolPath.realPathSync(link)
    if (!ToolPath.isWithin(root, real)) return undefined
    const info = nodeFs.statSync(real)
    return info.isDirectory() ? "directory" : info.isFile() ? "file" : undefined
  } catch {
    return undefined
  }
}

/** Reads exactly `size` bytes from the start of an open file (fewer if it shrank meanwhile). */
const readAll = async (handle: nodeFs.promises.FileHandle, size: number): Promise<Uint8Array> => {
  const buffer = Buffer.alloc(size)
  let offset = 0
  while (offset < size) {
    const { bytesRead } = await handle.read(buffer, offset, size - offset, offset)
    if (bytesRead === 0) break
    offset += bytesRead
  }
  return buffer.subarray(0, offset)
}

export const layer = (options: Options = {}): Layer.Layer<Service> =>
  Layer.succeed(
    Service,
    (() => {
      const maxReadBytes = options.maxReadBytes ?? defaults.maxReadBytes
      const findLimit = options.findLimit ?? defaults.findLimit
      const maxFindLimit = options.maxFindLimit ?? defaults.maxFindLimit
      const maxScanned = options.maxScanned ?? defaults.maxScanned

      const read = Traced.fn("LocationFiles.read")(function* (where: Where, file: string) {
        const target = yield* confine(where, file)
        const name = relativeName(where, target.absolute)
        const notAFile = new LocationFileError.NotAFile({ path: shown(file), message: `Not a file: ${shown(file)}` })
        // Checked before opening: opening a FIFO for reading would wait for a writer.
        const info = yield* statOf(file, target.real)
        if (!info.isFile()) return yield* notAFile
        const tooLarge = (size: number) =>
          new LocationFileError.TooLarge({
            path: shown(file),
            size,
            limit: maxReadBytes,
            message: `File is too large to read: ${shown(file)} is ${size} bytes, the limit is ${maxReadBytes} bytes`
          })
        if (info.size > maxReadBytes) return yield* tooLarge(info.size)
        const bytes = yield* Effect.acquireUseRelease(
          // O_NOFOLLOW and O_NONBLOCK: a path swapped for a symlink or a FIFO since the checks above
          // fails or returns at once instead of being followed or waited on.
          Effect.tryPromise({
            try: () =>
              nodeFs.promises.open(
                target.real,
                nodeFs.constants.O_RDONLY | nodeFs.constants.O_NOFOLLOW | nodeFs.constants.O_NONBLOCK
              ),
            catch: (error) => notFound(file, error)
          }),
          (handle) =>
            Effect.gen(function* () {
              const opened = yield* Effect.tryPromise({ try: () => handle.stat(), catch: (e) => notFound(file, e) })
              if (!opened.isFile()) return yield* notAFile
              if (opened.size > maxReadBytes) return yield* tooLarge(opened.size)
              return yield* Effect.tryPromise({
                try: () => readAll(handle, opened.size),
                catch: (e) => notFound(file, e)
              })
            }),
          (handle) => Effect.promise(() => handle.close())
        )
        const binary = isBinary(target.real, bytes)
        return { path: name, bytes, binary, mime: mediaType(target.real, binary) } satisfies Content
      })

      const list = Traced.fn("LocationFiles.list")(function* (where: Where, directory?: string) {
        const requested = directory ?? "."
        const target = yield* confine(where, requested)
        const info = yield* statOf(requested, target.real)
        if (!info.isDirectory())
          return yield* new LocationFileError.NotADirectory({
            path: shown(requested),
            message: `Not a directory: ${shown(requested)}`
          })
        const children = yield* Effect.tryPromise({
          try: () => nodeFs.promises.readdir(target.real, { withFileTypes: true }),
          catch: (error) => notFound(requested, error)
        })
        const ignoredBy = FileWalk.gitignore(target.root)
        // A directory named explicitly is listed even when ignored; inside a listed one, ignore rules apply.
        const listedIgnored = target.real !== target.root && ignoredBy(target.real, true)
        const entries: Array<Entry> = []
        for (const child of children) {
          if (child.name === ".git") continue
          const real = path.join(target.real, child.name)
          const type = child.isDirectory()
            ? "directory"
            : child.isFile()
              ? "file"
              : child.isSymbolicLink()
                ? linkedType(real, target.root)
                : undefined
          if (type === undefined) continue
          if (!listedIgnored && ignoredBy(real, child.isDirectory())) continue
          entries.push({ path: relativeName(where, path.join(target.absolute, child.name)), type })
        }
        return entries.sort((a, b) =>
          a.type !== b.type ? (a.type === "directory" ? -1 : 1) : a.path < b.path ? -1 : a.path > b.path ? 1 : 0
        )
      })

      const find = Traced.fn("LocationFiles.find")(function* (where: Where, input: FindInput) {
        const limit = Math.max(1, Math.min(input.limit ?? findLimit, maxFindLimit))
        const terms = PathQuery.terms(input.query)
        const root = yield* Effect.orDie(Effect.try(() => ToolPath.realPathSync(where.directory)))
        const best = PathQuery.top<Entry["type"]>(limit)
        yield* FileWalk.entries({ root: where.directory, limit: maxScanned }).pipe(
          Stream.runForEachChunk((chunk) =>
            Effect.sync(() => {
              for (const entry of chunk) {
                const relative = relativeName(where, entry.path)
                const score = PathQuery.score(terms, relative)
                if (score === undefined) continue
                const type = entry.type === "symlink" ? linkedType(entry.path, root) : entry.type
                if (type === undefined || (input.type !== undefined && type !== input.type)) continue
                best.offer({ score, path: relative, value: type })
              }
            })
          )
        )
        return best.result().map((ranked): Entry => ({ path: ranked.path, type: ranked.value }))
      })

      return Service.of({ read, list, find })
    })()
  )
