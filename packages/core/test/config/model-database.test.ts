import * as fs from "node:fs"
import * as http from "node:http"
import type * as net from "node:net"
import * as path from "node:path"
import { NodeContext, NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Logger, Option, type Scope, Stream } from "effect"
import { Config } from "../../src/config/config.js"
import { ModelDatabase } from "../../src/config/model-database.js"
import { ModelsDev } from "../../src/config/models-dev.js"
import { ModelsSnapshot } from "../../src/config/models-snapshot.js"
import { tempDir } from "../fixture.js"
import { captureLogs } from "./world.js"

/** How the loopback models server answers. */
type Answer =
  | { readonly kind: "json"; readonly body: string }
  | { readonly kind: "status"; readonly status: number }
  | { readonly kind: "hang" }
  /** `body`, once `release` resolves (so a test can look before the answer arrives). */
  | { readonly kind: "held"; readonly body: string; readonly release: Promise<void> }

/** A real HTTP server on 127.0.0.1 that answers every request with `answer()` and counts them. */
const modelsServer = (
  answer: () => Answer
): Effect.Effect<{ url: string; requests: () => number }, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ server: http.Server; url: string; requests: () => number }>((resume) => {
      let count = 0
      const server = http.createServer((_request, response) => {
        count += 1
        const reply = answer()
        if (reply.kind === "hang") return
        if (reply.kind === "held") {
          void reply.release.then(() => response.writeHead(200, { "content-type": "application/json" }).end(reply.body))
          return
        }
        if (reply.kind === "status") {
          response.writeHead(reply.status, { "content-type": "text/plain" }).end("upstream trouble")
          return
        }
        response.writeHead(200, { "content-type": "application/json" }).end(reply.body)
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as net.AddressInfo
        resume(Effect.succeed({ server, url: `http://127.0.0.1:${port}/api.json`, requests: () => count }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ url, requests }) => ({ url, requests })))

/** A database with one OpenAI-compatible provider, `fresh`, whose models are `models`. */
const freshDatabase = (models: ReadonlyArray<string>) =>
  JSON.stringify({
    fresh: {
      id: "fresh",
      name: "Fresh",
      npm: "@ai-sdk/openai-compatible",
      api: "http://127.0.0.1:9/v1",
      env: ["FRESH_API_KEY"],
      models: Object.fromEntries(models.map((id) => [id, { id, name: id, limit: { context: 1000, output: 100 } }]))
    }
  })

/** The service of `options` over the real file system and undici, alive until the test's scope closes. */
const build = (options: ModelDatabase.Options) =>
  Layer.build(
    ModelDatabase.layer(options).pipe(Layer.provide(Layer.merge(NodeContext.layer, NodeHttpClient.layerUndici)))
  ).pipe(Effect.map((context) => context.unsafeMap.get(ModelDatabase.Service.key) as ModelDatabase.Interface))

const warningsOf = (logs: ReadonlyArray<{ level: string; message: string }>) =>
  logs.filter((log) => log.level === "WARN").map((log) => log.message)

describe("ModelDatabase at start", () => {
  it.scopedLive("without a cache file it is the bundled snapshot, silently", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const { result, logs } = yield* captureLogs(
        Effect.flatMap(build({ cacheFile: path.join(dir, "models.json") }), (db) => db.current)
      )
      const state = Either.getOrThrow(result)
      assert.strictEqual(state.origin, "snapshot")
      assert.strictEqual(Object.keys(state.database).length, ModelsSnapshot.providerCount)
      assert.deepStrictEqual(warningsOf(logs), [])
    })
  )

  it.scopedLive("a valid cache file wins over the snapshot; an invalid one is ignored with one warning", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const cacheFile = path.join(dir, "models.json")
      fs.writeFileSync(cacheFile, freshDatabase(["cached-model"]))
      const cached = yield* Effect.flatMap(build({ cacheFile }), (db) => db.current)
      assert.strictEqual(cached.origin, "cache")
      assert.deepStrictEqual(Object.keys(cached.database), ["fresh"])

      fs.writeFileSync(cacheFile, "{ not json")
      const { result, logs } = yield* captureLogs(Effect.flatMap(build({ cacheFile }), (db) => db.current))
      assert.strictEqual(Either.getOrThrow(result).origin, "snapshot")
      const warnings = warningsOf(logs)
      assert.strictEqual(warnings.length, 1)
      assert.include(warnings[0], `Ignoring the model cache ${cacheFile}: not JSON`)
    })
  )
})

describe("ModelDatabase refresh from a loopback server", () => {
  it.scopedLive("success writes the cache atomically and installs the fetched database", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const cacheFile = path.join(dir, "cache", "opencode", "models.json")
      const body = freshDatabase(["new-model"])
      const server = yield* modelsServer(() => ({ kind: "json", body }))
      const { result, logs } = yield* captureLogs(
        Effect.gen(function* () {
          const db = yield* build({ cacheFile, url: server.url })
          const outcome = yield* db.firstRefresh
          return { outcome, state: yield* db.current }
        })
      )
      const { outcome, state } = Either.getOrThrow(result)
      assert.deepStrictEqual(outcome, ModelDatabase.Outcome.Refreshed({ providers: 1, models: 1 }))
      assert.strictEqual(state.origin, "refresh")
      assert.deepStrictEqual(Object.keys(state.database.fresh?.models ?? {}), ["new-model"])
      // the cache holds exactly what was served, and no temporary file is left beside it
      assert.strictEqual(fs.readFileSync(cacheFile, "utf8"), body)
      assert.deepStrictEqual(fs.readdirSync(path.dirname(cacheFile)), ["models.json"])
      assert.deepStrictEqual(warningsOf(logs), [])
      assert.strictEqual(server.requests(), 1)

      // the next start uses it
      const next = yield* Effect.flatMap(build({ cacheFile }), (db) => db.current)
      assert.strictEqual(next.origin, "cache")
      assert.deepStrictEqual(Object.keys(next.database), ["fresh"])
    })
  )

  const failures: ReadonlyArray<{ readonly name: string; readonly answer: Answer; readonly reason: string }> = [
    { name: "a 500", answer: { kind: "status", status: 500 }, reason: "status 500" },
    { name: "invalid JSON", answer: { kind: "json", body: "<html>oops" }, reason: "invalid database: not JSON" },
    {
      name: "JSON that is not a database",
      answer: { kind: "json", body: JSON.stringify({ fresh: { id: 1 } }) },
      reason: "invalid database: no provider decodes"
    },
    { name: "a timeout", answer: { kind: "hang" }, reason: "timed out" }
  ]

  for (const failure of failures) {
    it.scopedLive(`${failure.name} keeps the cache and what is in use, with exactly one warning`, () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const cacheFile = path.join(dir, "models.json")
        const before = freshDatabase(["cached-model"])
        fs.writeFileSync(cacheFile, before)
        const server = yield* modelsServer(() => failure.answer)
        const { result, logs } = yield* captureLogs(
          Effect.gen(function* () {
            const db = yield* build({ cacheFile, url: server.url, timeout: "300 millis" })
            const outcome = yield* db.firstRefresh
            return { outcome, state: yield* db.current }
          })
        )
        const { outcome, state } = Either.getOrThrow(result)
        assert.strictEqual(outcome._tag, "Failed")
        assert.include(outcome._tag === "Failed" ? outcome.reason : "", failure.reason)
        assert.strictEqual(state.origin, "cache")
        assert.deepStrictEqual(Object.keys(state.database.fresh?.models ?? {}), ["cached-model"])
        assert.strictEqual(fs.readFileSync(cacheFile, "utf8"), before)
        const warnings = warningsOf(logs)
        assert.strictEqual(warnings.length, 1)
        assert.include(warnings[0], `Model database refresh from ${server.url} failed (${failure.reason}`)
        assert.include(warnings[0], "keeping the cached database")
        assert.strictEqual(server.requests(), 1)
      })
    )
  }

  it.scopedLive("without a cache, a failed refresh keeps the snapshot", () =>
    Effect.gen(function* () {
      const server = yield* modelsServer(() => ({ kind: "status", status: 503 }))
      const { result, logs } = yield* captureLogs(
        Effect.gen(function* () {
          const db = yield* build({ url: server.url })
          yield* db.firstRefresh
          return yield* db.current
        })
      )
      assert.strictEqual(Either.getOrThrow(result).origin, "snapshot")
      assert.strictEqual(warningsOf(logs).length, 1)
      assert.include(warningsOf(logs)[0], "keeping the bundled snapshot")
    })
  )
})

describe("ModelDatabase.fromEnv", () => {
  it("caches under XDG_CACHE_HOME and refreshes from OPENCODE_MODELS_URL, default models.dev", () => {
    assert.deepStrictEqual(ModelDatabase.fromEnv({}, "/home/u"), {
      cacheFile: "/home/u/.cache/opencode/models.json",
      url: "https://models.dev/api.json"
    })
    assert.deepStrictEqual(
      ModelDatabase.fromEnv({ XDG_CACHE_HOME: "/c", OPENCODE_MODELS_URL: "http://127.0.0.1:1/m.json" }, "/home/u"),
      { cacheFile: "/c/opencode/models.json", url: "http://127.0.0.1:1/m.json" }
    )
    for (const flag of ["1", "true", "TRUE"]) {
      assert.deepStrictEqual(ModelDatabase.fromEnv({ OPENCODE_DISABLE_MODELS_FETCH: flag }, "/home/u"), {
        cacheFile: "/home/u/.cache/opencode/models.json"
      })
    }
  })

  it.scopedLive("OPENCODE_DISABLE_MODELS_FETCH means no request is made", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const server = yield* modelsServer(() => ({ kind: "json", body: freshDatabase(["x"]) }))
      const env = { XDG_CACHE_HOME: dir, OPENCODE_MODELS_URL: server.url, OPENCODE_DISABLE_MODELS_FETCH: "1" }
      const db = yield* build(ModelDatabase.fromEnv(env, dir))
      assert.deepStrictEqual(yield* db.firstRefresh, ModelDatabase.Outcome.Disabled())
      // a moment for a request that should not come
      yield* Effect.sleep("200 millis")
      assert.strictEqual(server.requests(), 0)
      assert.strictEqual((yield* db.current).origin, "snapshot")
      // the same environment without the flag does fetch
      const enabled = yield* build(ModelDatabase.fromEnv({ ...env, OPENCODE_DISABLE_MODELS_FETCH: "" }, dir))
      assert.strictEqual((yield* enabled.firstRefresh)._tag, "Refreshed")
      assert.strictEqual(server.requests(), 1)
    })
  )
})

describe("Config over a refreshing ModelDatabase", () => {
  it.scopedLive("a successful refresh applies to the running configuration", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const cacheFile = path.join(dir, "models.json")
      fs.writeFileSync(cacheFile, freshDatabase(["old-model"]))
      // The refresh starts with the layer: its answer waits until the test has seen the cached catalog.
      let release: () => void = () => {}
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      const server = yield* modelsServer(() => ({
        kind: "held",
        body: freshDatabase(["old-model", "new-model"]),
        release: released
      }))
      const options = { cacheFile, url: server.url }
      const env = { FRESH_API_KEY: "k", OPENCODE_CONFIG_CONTENT: JSON.stringify({ model: "fresh/old-model" }) }
      // one ModelDatabase shared by Config and the test (one layer value, built once)
      const models = ModelDatabase.layer(options)
      const context = yield* Layer.build(
        Layer.merge(Config.layer({ directory: dir, configDir: path.join(dir, "none"), env }), models).pipe(
          Layer.provideMerge(models),
          Layer.provide(Layer.merge(NodeContext.layer, NodeHttpClient.layerUndici))
        )
      )
      const config = context.unsafeMap.get(Config.Service.key) as Config.Interface
      const db = context.unsafeMap.get(ModelDatabase.Service.key) as ModelDatabase.Interface
      assert.deepStrictEqual(
        config.providers[0]?.models.map((model) => model.id),
        ["old-model"]
      )
      release()
      assert.strictEqual((yield* db.firstRefresh)._tag, "Refreshed")
      // Config follows the change on its own fiber: wait until it has seen it
      yield* Stream.runDrain(
        Stream.take(
          Stream.filter(
            Stream.repeatEffect(Effect.as(Effect.sleep("10 millis"), config.providers)),
            (providers) => providers[0]?.models.length === 2
          ),
          1
        )
      ).pipe(Effect.timeout("5 seconds"))
      assert.isTrue(Option.isSome(config.findModel({ providerID: "fresh", id: "new-model" })))
      assert.deepStrictEqual(config.model, Option.some({ providerID: "fresh", id: "old-model" }))
    })
  )

  it.scopedLive("a refreshed database the configuration no longer fits is not applied, with one warning", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const cacheFile = path.join(dir, "models.json")
      fs.writeFileSync(cacheFile, freshDatabase(["old-model"]))
      // The refresh starts with the layer: its answer waits until the configuration has been built
      // over the cached catalog (answered at once, it could win that race and fail the build).
      let release: () => void = () => {}
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      const server = yield* modelsServer(() => ({
        kind: "held",
        body: freshDatabase(["other-model"]),
        release: released
      }))
      const env = { FRESH_API_KEY: "k", OPENCODE_CONFIG_CONTENT: JSON.stringify({ model: "fresh/old-model" }) }
      const models = ModelDatabase.layer({ cacheFile, url: server.url })
      const logs: Array<{ level: string; message: string }> = []
      const logger = Logger.make(({ logLevel, message }) => {
        logs.push({ level: logLevel.label, message: (Array.isArray(message) ? message : [message]).join(" ") })
      })
      const ids = yield* Effect.gen(function* () {
        const context = yield* Layer.build(
          Layer.merge(Config.layer({ directory: dir, configDir: path.join(dir, "none"), env }), models).pipe(
            Layer.provideMerge(models),
            Layer.provide(Layer.merge(NodeContext.layer, NodeHttpClient.layerUndici))
          )
        )
        const config = context.unsafeMap.get(Config.Service.key) as Config.Interface
        const db = context.unsafeMap.get(ModelDatabase.Service.key) as ModelDatabase.Interface
        release()
        assert.strictEqual((yield* db.firstRefresh)._tag, "Refreshed")
        // Config follows the change on its own fiber: wait until it has judged it
        for (let i = 0; i < 200 && !logs.some((log) => log.message.includes("does not fit")); i++) {
          yield* Effect.sleep("10 millis")
        }
        return config.providers[0]?.models.map((model) => model.id)
      }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      assert.deepStrictEqual(ids, ["old-model"])
      const warnings = warningsOf(logs)
      assert.strictEqual(warnings.length, 1)
      assert.include(warnings[0], "The refreshed model database does not fit the configuration")
      assert.include(warnings[0], 'names model "old-model"')
    })
  )

  it("the bundled snapshot decodes whole, to itself", () => {
    const decoded = Either.getOrThrow(ModelsDev.decode(ModelsSnapshot.document))
    assert.deepStrictEqual(decoded.skipped, [])
    const count = Object.values(decoded.database).reduce((sum, p) => sum + Object.keys(p.models).length, 0)
    assert.strictEqual(count, ModelsSnapshot.modelCount)
    // `ModelsDev.snapshot()` is the document itself, not decoded: decoding must not change it.
    assert.deepStrictEqual(decoded.database, ModelsSnapshot.document)
    assert.strictEqual(ModelsDev.snapshot(), ModelsSnapshot.document)
  })
})
