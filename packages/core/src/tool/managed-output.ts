export * as ManagedOutput from "./managed-output.js"

import * as nodePath from "node:path"
import { FileSystem } from "@effect/platform"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Cause, Clock, Context, Duration, Effect, ExecutionStrategy, Exit, Layer, Schema, Scope } from "effect"
import { WallClock } from "../clock/wall-clock.js"
import { Traced } from "../observability/traced.js"

/**
 * The Managed Tool Output store: complete tool output too large for Session history, kept as plain
 * files in ONE flat shared directory (`<data>/tool-output/`, `Paths.toolOutputDir`), so ordinary tools
 * (read, grep) can open them by absolute path.
 *
 * - **Names** are globally unique: `tool_` + 12 hex digits of the creation time in milliseconds + 14
 *   random base62 characters (the identifier format of the contract), and a file is created
 *   exclusively (`wx`), so no two writers ever share a file.
 * - **Streaming:** a {@link Writer} appends chunks one at a time (each write resolves once it is
 *   written), so memory stays bounded whatever the size. A file is complete once committed; one whose
 *   scope closes before its commit (a failure, an interruption) is deleted.
 * - **Retention:** files are temporary. A file whose name says it was created more than the retention
 *   (default 7 days) ago is expired; the sweep deletes expired files of our naming pattern only, and
 *   the layer runs it at startup and then periodically (default hourly) in a scoped fiber.
 * - **Failures** are typed ({@link WriteError}): the caller decides how to degrade (Model Tool Output
 *   bounding keeps the tool's success and records a lossy preview).
 */

/** How long a Managed Tool Output File is kept. */
export const defaultRetention: Duration.Duration = Duration.days(7)
/** How often the layer sweeps expired files (the first sweep runs at startup). */
export const defaultSweepInterval: Duration.Duration = Duration.hours(1)

const PREFIX = "tool_"
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** The names this store creates; the sweep never touches anything else. */
export const namePattern = /^tool_[0-9a-f]{12}[0-9A-Za-z]{14}$/

/** A fresh file name for a file created at `now` (ms). Pure apart from the random source. */
export const newName = (now: number): string => {
  let random = ""
  while (random.length < 14) {
    // 62 * 4 = 248: rejecting bytes >= 248 keeps every character equally likely.
    for (const byte of globalThis.crypto.getRandomValues(new Uint8Array(28))) {
      if (byte < 248 && random.length < 14) random += BASE62[byte % 62]
    }
  }
  return `${PREFIX}${Math.max(0, Math.floor(now)).toString(16).padStart(12, "0")}${random}`
}

/** The creation time (ms) a managed name carries; undefined for any other name. */
export const createdAt = (name: string): number | undefined =>
  namePattern.test(name) ? Number.parseInt(name.slice(PREFIX.length, PREFIX.length + 12), 16) : undefined

/** A managed file (or its directory) could not be created or written. */
export class WriteError extends Schema.TaggedError<WriteError>()("ManagedOutputWriteError", {
  /** The file or directory that could not be written. */
  path: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/** One managed file being written. Writes must be sequential (each resolves before the next starts). */
export interface Writer {
  /** The file's absolute path. */
  readonly path: string
  /** Appends a chunk (text is written as UTF-8); resolves once the chunk is written. */
  readonly write: (chunk: Uint8Array | string) => Effect.Effect<void, WriteError>
  /** Closes the file, which is then complete and kept until it expires. Returns its path. Idempotent. */
  readonly commit: Effect.Effect<string, WriteError>
  /** Closes and deletes the file (a partial file is never left behind). Idempotent; never fails. */
  readonly discard: Effect.Effect<void>
}

export interface Interface {
  /** The flat shared directory, absolute. */
  readonly directory: string
  readonly retention: Duration.Duration
  /**
   * Creates a new file (and the directory, on demand) for the caller's Scope. Closing the scope
   * before {@link Writer.commit} deletes the file.
   */
  readonly create: Effect.Effect<Writer, WriteError, Scope.Scope>
  /** Writes a complete text to a new file and returns its absolute path. */
  readonly write: (text: string) => Effect.Effect<string, WriteError>
  /**
   * Deletes the expired files of our naming pattern (created before now − retention) and returns
   * how many were deleted. Anything else in the directory is left alone; a missing directory is
   * empty. Failures are logged, never raised.
   */
  readonly sweep: Effect.Effect<number>
  /** Whether `path` names a file of this store (in its directory, with its naming pattern). */
  readonly owns: (path: string) => boolean
  /**
   * Deletes the given files of this store before they expire (their session was deleted) and
   * returns how many were deleted. Paths the store does not own ({@link owns}) are left alone, and a
   * file already gone counts as nothing. Failures are logged, never raised.
   */
  readonly discard: (paths: Iterable<string>) => Effect.Effect<number>
}

export class Service extends Context.Tag("@opencode-ai/core/ManagedOutput")<Service, Interface>() {}

export interface Options {
  /** The shared directory (`Paths.toolOutputDir`); created on demand. */
  readonly directory: string
  readonly retention?: Duration.DurationInput
  readonly sweepInterval?: Duration.DurationInput
}

const encoder = new TextEncoder()
// Strings are written in slices, so a huge text is never encoded in one piece.
const SLICE = 1 << 16

/** Slices `text` into pieces of at most about `size` UTF-16 units, never splitting a surrogate pair. */
export const slices = function* (text: string, size = SLICE): Generator<string> {
  let start = 0
  while (start < text.length) {
    let end = Math.min(text.length, start + size)
    const last = text.charCodeAt(end - 1)
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--
    yield text.slice(start, end)
    start = end
  }
}

/** The store over a directory, without the sweep fiber (see {@link layer}). */
export const make = (options: Options): Effect.Effect<Interface, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const directory = nodePath.resolve(options.directory)
    const retention = Duration.decode(options.retention ?? defaultRetention)

    const failed = (path: string, what: string) => (cause: unknown) =>
      new WriteError({
        path,
        message: `${what} ${path}: ${cause instanceof Error ? cause.message : String(cause)}`,
        cause
      })

    const create = Effect.gen(function* () {
      const scope = yield* Effect.scope
      yield* fs
        .makeDirectory(directory, { recursive: true })
        .pipe(Effect.mapError(failed(directory, "cannot create directory")))
      const path = nodePath.join(directory, newName(yield* Clock.currentTimeMillis))
      // The file handle lives in its own scope, so a commit can close it before the caller's scope ends.
      const handle = yield* Scope.fork(scope, ExecutionStrategy.sequential)
      const file = yield* fs
        .open(path, { flag: "wx", mode: 0o600 })
        .pipe(Scope.extend(handle), Effect.mapError(failed(path, "cannot create")))
      let state: "open" | "committed" | "discarded" = "open"
      const discard = Effect.suspend(() => {
        if (state !== "open") return Effect.void
        state = "discarded"
        return Scope.close(handle, Exit.void).pipe(Effect.zipRight(fs.remove(path)), Effect.ignore)
      })
      // Runs before the handle's own finalizer (finalizers run in reverse order).
      yield* Scope.addFinalizer(scope, discard)
      const write = (chunk: Uint8Array | string): Effect.Effect<void, WriteError> =>
        state !== "open"
          ? Effect.fail(new WriteError({ path, message: `write after close: ${path}` }))
          : typeof chunk === "string"
            ? Effect.forEach(slices(chunk), (piece) => file.writeAll(encoder.encode(piece)), { discard: true }).pipe(
                Effect.mapError(failed(path, "cannot write"))
              )
            : file.writeAll(chunk).pipe(Effect.mapError(failed(path, "cannot write")))
      const commit = Effect.suspend(() => {
        if (state === "committed") return Effect.succeed(path)
        if (state === "discarded") return Effect.fail(new WriteError({ path, message: `discarded: ${path}` }))
        state = "committed"
        return Effect.as(Scope.close(handle, Exit.void), path)
      })
      return { path, write, commit, discard } satisfies Writer
    }).pipe(Traced.withSpan("ManagedOutput.create"))

    const write = Traced.fn("ManagedOutput.write")((text: string) =>
      Effect.scoped(Effect.flatMap(create, (writer) => Effect.zipRight(writer.write(text), writer.commit)))
    )

    const sweep = Effect.gen(function* () {
      const cutoff = (yield* Clock.currentTimeMillis) - Duration.toMillis(retention)
      const names = yield* fs.readDirectory(directory).pipe(
        Effect.catchIf(
          (error) => error._tag === "SystemError" && error.reason === "NotFound",
          () => Effect.succeed<Array<string>>([])
        )
      )
      let removed = 0
      for (const name of names) {
        const created = createdAt(name)
        if (created === undefined || created >= cutoff) continue
        const file = nodePath.join(directory, name)
        // Only plain files: whatever else carries our pattern is not ours.
        const info = yield* Effect.option(fs.stat(file))
        if (info._tag === "None" || info.value.type !== "File") continue
        const deleted = yield* fs.remove(file).pipe(Effect.either)
        if (deleted._tag === "Right") removed++
        else if (!(deleted.left._tag === "SystemError" && deleted.left.reason === "NotFound")) {
          yield* Effect.logWarning("cannot delete an expired managed tool output file", Cause.fail(deleted.left))
        }
      }
      if (removed > 0) yield* Effect.logDebug(`deleted ${removed} expired managed tool output files`)
      return removed
    }).pipe(
      Effect.catchAll((error) =>
        Effect.as(Effect.logWarning("managed tool output sweep failed", Cause.fail(error)), 0)
      ),
      Traced.withSpan("ManagedOutput.sweep"),
      Effect.annotateLogs({ directory })
    )

    const owns = (path: string) => {
      const absolute = nodePath.resolve(path)
      return nodePath.dirname(absolute) === directory && namePattern.test(nodePath.basename(absolute))
    }

    const discard = Traced.fn("ManagedOutput.discard")(function* (paths: Iterable<string>) {
      let removed = 0
      for (const file of new Set(Array.from(paths, (path) => nodePath.resolve(path)))) {
        if (!owns(file)) continue
        const deleted = yield* fs.remove(file).pipe(Effect.either)
        if (deleted._tag === "Right") removed++
        else if (!(deleted.left._tag === "SystemError" && deleted.left.reason === "NotFound")) {
          yield* Effect.logWarning("cannot delete a managed tool output file", Cause.fail(deleted.left)).pipe(
            Effect.annotateLogs({ path: file })
          )
        }
      }
      return removed
    })

    return { directory, retention, create, write, sweep, owns, discard } satisfies Interface
  })

/**
 * The store, sweeping expired files at startup and then every `sweepInterval` of real time (default
 * hourly) in a fiber that ends with the layer's scope. Startup does not wait for the first sweep.
 */
export const layer = (options: Options): Layer.Layer<Service, never, FileSystem.FileSystem> =>
  Layer.scoped(
    Service,
    Effect.gen(function* () {
      const store = yield* make(options)
      // On the wall clock, like the files' ages: a TestClock that jumps years ahead must not replay
      // an hourly sweep for every hour in between.
      yield* Effect.forkScoped(WallClock.every(options.sweepInterval ?? defaultSweepInterval, store.sweep))
      return Service.of(store)
    })
  )

/** {@link layer} over Node's file system. */
export const layerNode = (options: Options): Layer.Layer<Service> =>
  layer(options).pipe(Layer.provide(NodeFileSystem.layer))
