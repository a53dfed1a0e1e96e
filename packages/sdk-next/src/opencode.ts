export * as OpenCode from "./opencode.js"

import { FetchHttpClient } from "@effect/platform"
import { OpencodeClient } from "@opencode-ai/client/effect"
import { Paths } from "@opencode-ai/core"
import { WebHandler } from "@opencode-ai/server"
import { Effect, Schema, type Scope } from "effect"
import * as os from "node:os"
import * as path from "node:path"

export interface EmbeddedOptions {
  /** The SQLite file. Defaults to the XDG data dir's `opencode.db` (or `OPENCODE_DB`). */
  readonly databaseFile?: string
  /** The instance directory: the default Location of new sessions. Defaults to the working directory. */
  readonly directory?: string
}

/**
 * Embedded OpenCode: the shared OpenCode Client capabilities (`sessions`, `health`, `location`)
 * on one object, plus what only a same-process host can offer.
 */
export interface Embedded extends OpencodeClient.Service {
  /**
   * A `fetch` served by this host's in-memory router, for fetch-based callers such as the Promise
   * client: `createOpencodeClient({ baseUrl: OpenCode.embeddedBaseUrl, fetch: host.fetch })`.
   */
  readonly fetch: typeof globalThis.fetch
}

/** Two live hosts on one database file would run two execution coordinators over the same sessions. */
export class StorageInUseError extends Schema.TaggedError<StorageInUseError>()("StorageInUseError", {
  databaseFile: Schema.String,
  message: Schema.String
}) {}

/** The origin embedded requests are addressed to; it is never resolved or connected to. */
export const embeddedBaseUrl = "http://opencode.embedded"

const openFiles = new Set<string>()

/** Claims a database file for this process's lifetime of the scope. */
const claim = (databaseFile: string) =>
  Effect.acquireRelease(
    Effect.suspend(() =>
      openFiles.has(databaseFile)
        ? Effect.fail(
            new StorageInUseError({
              databaseFile,
              message: `Another embedded OpenCode host in this process already uses ${databaseFile}`
            })
          )
        : Effect.sync(() => void openFiles.add(databaseFile))
    ),
    () => Effect.sync(() => void openFiles.delete(databaseFile))
  )

/**
 * Starts Embedded OpenCode: Core and Server's router in memory, behind the same Effect client the
 * network uses (only the HttpClient transport differs). No listener is opened.
 *
 * Resolves once the database is open and migrated. Fails with `StorageInUseError` when another host
 * of this process uses the same database file. Closing the Scope releases the database, the router
 * and its fibers.
 */
export const embedded = Effect.fn("OpenCode.embedded")(function* (
  options: EmbeddedOptions = {}
): Effect.fn.Return<Embedded, StorageInUseError, Scope.Scope> {
  const databaseFile = path.resolve(options.databaseFile ?? Paths.fromEnv(process.env, os.homedir()).databaseFile)
  yield* claim(databaseFile)
  const handler = yield* WebHandler.make({ databaseFile, directory: path.resolve(options.directory ?? process.cwd()) })
  const fetch: typeof globalThis.fetch = (input, init) => handler(new Request(input, init))
  const client = yield* OpencodeClient.make({ baseUrl: embeddedBaseUrl }).pipe(
    Effect.provide(FetchHttpClient.layer),
    Effect.provideService(FetchHttpClient.Fetch, fetch)
  )
  return { ...client, fetch }
})
