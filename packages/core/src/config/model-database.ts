export * as ModelDatabase from "./model-database.js"

/**
 * The Model Database: the models.dev document (see `ModelsDev`) the Catalog is built on, kept current
 * while the process runs.
 *
 * ```
 *  start ──► cache file valid? ──yes──► State{cache} ─┐
 *                 │ no (missing: silent; invalid: one warning)
 *                 └──────────────────► State{snapshot}┤
 *                                                     ▼
 *  background (only with a `url`): fetch ──ok──► write cache atomically ──► State{refresh} (changes emits)
 *                                        └─fail─► one warning, State unchanged
 * ```
 *
 * - Start-up never waits for the network: the layer reads one local file (or the bundled snapshot)
 *   and forks the refresh in its own scope. Closing the scope interrupts a refresh in flight; the
 *   cache is then either the old file or the new one, never a partial write (temp file + rename).
 * - A refresh that fails (transport error, non-2xx status, timeout, not JSON, not a database) keeps
 *   the current State and logs exactly one warning. A refresh that succeeds but cannot write the
 *   cache still applies, with one warning about the cache.
 * - The refresh runs at start, then every `interval` (default one hour).
 */

import * as nodePath from "node:path"
import { FileSystem, HttpClient, HttpClientRequest } from "@effect/platform"
import { Context, Data, Deferred, Duration, Effect, Either, Layer, Option, Stream, SubscriptionRef } from "effect"
import { Traced } from "../observability/traced.js"
import { EnvFlag } from "./env-flag.js"
import { ModelsDev } from "./models-dev.js"
import { Paths } from "./paths.js"

/** Upstream's public database, refreshed from by default. */
export const defaultURL = "https://models.dev/api.json"

export interface Options {
  /** The cache file read at start and written by a refresh; none: no cache. */
  readonly cacheFile?: string | undefined
  /** Where a refresh fetches from; none: never refresh. */
  readonly url?: string | undefined
  /** How long one refresh may take before it counts as failed; default 10 seconds. */
  readonly timeout?: Duration.DurationInput | undefined
  /** The period of later refreshes; default one hour. */
  readonly interval?: Duration.DurationInput | undefined
}

/**
 * The options a host derives from its environment: the cache at `$XDG_CACHE_HOME/opencode/models.json`
 * (default `~/.cache/opencode`), refreshed from `OPENCODE_MODELS_URL` (default {@link defaultURL})
 * unless `OPENCODE_DISABLE_MODELS_FETCH` is `1` or `true`.
 */
export const fromEnv = (env: Readonly<Record<string, string | undefined>>, home: string): Options => {
  const url = env.OPENCODE_MODELS_URL
  return {
    cacheFile: Paths.fromEnv({ ...env }, home).modelsFile,
    ...(EnvFlag.isOn(env.OPENCODE_DISABLE_MODELS_FETCH)
      ? {}
      : { url: url === undefined || url === "" ? defaultURL : url })
  }
}

/** Where the database in use came from. */
export type Origin = "snapshot" | "cache" | "refresh" | "static"

export interface State {
  readonly database: ModelsDev.Database
  readonly origin: Origin
}

/** What one refresh did. */
export type Outcome = Data.TaggedEnum<{
  /** The fetched database is in use and (unless `cacheError`) in the cache. */
  Refreshed: { readonly providers: number; readonly models: number; readonly cacheError?: string | undefined }
  /** Nothing changed; the warning was logged. */
  Failed: { readonly reason: string }
  /** No URL to refresh from. */
  Disabled: Record<never, never>
}>
export const Outcome = Data.taggedEnum<Outcome>()

export interface Interface {
  /** The database in use now. */
  readonly current: Effect.Effect<State>
  /** The database in use at subscription, then each one a refresh installs. */
  readonly changes: Stream.Stream<State>
  /** Fetches once now (as the background refresh does) and reports what happened. */
  readonly refresh: Effect.Effect<Outcome>
  /**
   * Waits for the background refresh started with the layer and returns its outcome (`Disabled`
   * at once without a `url`). Waiting never delays anything else.
   */
  readonly firstRefresh: Effect.Effect<Outcome>
}

/** The process's model database; `yield* ModelDatabase.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/ModelDatabase")<Service, Interface>() {}

class RefreshError extends Data.TaggedError("Core/ModelDatabaseRefreshError")<{ readonly reason: string }> {}

const countModels = (database: ModelsDev.Database): number =>
  Object.values(database).reduce((sum, provider) => sum + Object.keys(provider.models).length, 0)

const describe = (origin: Origin): string =>
  origin === "snapshot" ? "bundled snapshot" : origin === "cache" ? "cached database" : "current database"

/** Builds the service over `options` (see the module doc). */
export const make = Traced.fn("ModelDatabase.make")(function* (options: Options) {
  const fs = yield* FileSystem.FileSystem
  const client = yield* HttpClient.HttpClient
  const cached =
    options.cacheFile === undefined ? Option.none<ModelsDev.Database>() : yield* readCache(options.cacheFile)
  const state = yield* SubscriptionRef.make<State>(
    Option.match(cached, {
      onNone: () => ({ database: ModelsDev.snapshot(), origin: "snapshot" as const }),
      onSome: (database) => ({ database, origin: "cache" as const })
    })
  )
  const timeout = Duration.decode(options.timeout ?? Duration.seconds(10))

  const fetchDatabase = Traced.fn("ModelDatabase.fetch")(function* (url: string) {
    const response = yield* client
      .execute(HttpClientRequest.get(url).pipe(HttpClientRequest.acceptJson))
      .pipe(Effect.mapError((error) => new RefreshError({ reason: error.message })))
    if (response.status < 200 || response.status >= 300) {
      return yield* new RefreshError({ reason: `status ${response.status}` })
    }
    const text = yield* response.text.pipe(Effect.mapError((error) => new RefreshError({ reason: error.message })))
    const decoded = ModelsDev.parse(text)
    if (Either.isLeft(decoded)) return yield* new RefreshError({ reason: `invalid database: ${decoded.left}` })
    return { text, database: decoded.right.database }
  })

  // Temp file in the same directory, then rename: readers see the old file or the new one, never half.
  const writeCache = (file: string, text: string) =>
    Effect.gen(function* () {
      yield* fs.makeDirectory(nodePath.dirname(file), { recursive: true })
      const temp = `${file}.${process.pid}.${Date.now()}.tmp`
      yield* fs.writeFileString(temp, text)
      yield* fs.rename(temp, file).pipe(Effect.tapError(() => fs.remove(temp).pipe(Effect.ignore)))
    })

  const refresh = Effect.gen(function* () {
    if (options.url === undefined) return Outcome.Disabled()
    const url = options.url
    const fetched = yield* fetchDatabase(url).pipe(
      Effect.timeoutFail({ duration: timeout, onTimeout: () => new RefreshError({ reason: "timed out" }) }),
      Effect.either
    )
    if (Either.isLeft(fetched)) {
      const current = yield* SubscriptionRef.get(state)
      const reason = fetched.left.reason
      yield* Effect.logWarning(
        `Model database refresh from ${url} failed (${reason}); keeping the ${describe(current.origin)}`
      )
      return Outcome.Failed({ reason })
    }
    const { text, database } = fetched.right
    const cacheError =
      options.cacheFile === undefined
        ? undefined
        : yield* writeCache(options.cacheFile, text).pipe(
            Effect.as(undefined),
            Effect.catchAll((error) =>
              Effect.as(
                Effect.logWarning(`Model database fetched but not cached in ${options.cacheFile}: ${error.message}`),
                error.message
              )
            )
          )
    yield* SubscriptionRef.set<State>(state, { database, origin: "refresh" })
    const providers = Object.keys(database).length
    const models = countModels(database)
    yield* Effect.logDebug(`Model database refreshed from ${url}: ${providers} providers, ${models} models`)
    return Outcome.Refreshed({ providers, models, ...(cacheError === undefined ? {} : { cacheError }) })
  }).pipe(Traced.withSpan("ModelDatabase.refresh"))

  const first = yield* Deferred.make<Outcome>()
  if (options.url === undefined) yield* Deferred.succeed(first, Outcome.Disabled())
  else {
    const interval = Duration.decode(options.interval ?? Duration.hours(1))
    // `refresh` cannot fail (a failure is an Outcome), so the loop runs until the scope closes.
    const background = refresh.pipe(
      Effect.tap((outcome) => Deferred.succeed(first, outcome)),
      Effect.zipRight(Effect.forever(Effect.delay(refresh, interval)))
    )
    yield* Effect.forkScoped(background)
  }
  return Service.of({
    current: SubscriptionRef.get(state),
    changes: state.changes,
    refresh,
    firstRefresh: Deferred.await(first)
  })
})

/**
 * The cache file's database, or none when it is missing (silently) or invalid (one warning: the
 * bundled snapshot is used instead).
 */
const readCache = Traced.fn("ModelDatabase.readCache")(function* (file: string) {
  const fs = yield* FileSystem.FileSystem
  const text = yield* fs.readFileString(file).pipe(
    Effect.map(Option.some),
    Effect.catchAll((error) =>
      error._tag === "SystemError" && error.reason === "NotFound"
        ? Effect.succeed(Option.none<string>())
        : Effect.as(Effect.logWarning(`Ignoring the model cache ${file}: ${error.message}`), Option.none<string>())
    )
  )
  if (Option.isNone(text)) return Option.none<ModelsDev.Database>()
  const decoded = ModelsDev.parse(text.value)
  if (Either.isLeft(decoded)) {
    yield* Effect.logWarning(`Ignoring the model cache ${file}: ${decoded.left}; using the bundled snapshot`)
    return Option.none<ModelsDev.Database>()
  }
  return Option.some(decoded.right.database)
})

/** The Model Database of `options`: read at build, refreshed in the layer's scope when `url` is set. */
export const layer = (options: Options): Layer.Layer<Service, never, FileSystem.FileSystem | HttpClient.HttpClient> =>
  Layer.scoped(Service, make(options))

/** A fixed database (the bundled snapshot by default): no cache, no refresh. */
export const layerStatic = (database: ModelsDev.Database = ModelsDev.snapshot()): Layer.Layer<Service> =>
  Layer.sync(Service, () => {
    const state: State = { database, origin: "static" }
    return Service.of({
      current: Effect.succeed(state),
      changes: Stream.make(state),
      refresh: Effect.succeed(Outcome.Disabled()),
      firstRefresh: Effect.succeed(Outcome.Disabled())
    })
  })
