import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Exit, Layer } from "effect"
import { Catalog } from "../../src/config/catalog.js"
import { ModelsDev } from "../../src/config/models-dev.js"
import { CredentialStore } from "../../src/credential/credential-store.js"

const temp = () => fs.mkdtempSync(path.join(os.tmpdir(), "opencode-credentials-"))
const mode = (file: string) => fs.statSync(file).mode & 0o777
const withStore = <A, E>(dataDir: string, use: (store: CredentialStore.Interface) => Effect.Effect<A, E>) =>
  Effect.flatMap(CredentialStore.Service, use).pipe(Effect.provide(CredentialStore.layer({ dataDir })))

describe("CredentialStore", () => {
  it.effect("creates auth.json 0600 in a 0700 directory on the first write, and reads it back after a restart", () =>
    Effect.gen(function* () {
      const dataDir = path.join(temp(), "data")
      yield* withStore(dataDir, (store) => store.set("openai", { type: "api", key: "sk-1" }))
      const file = CredentialStore.fileOf(dataDir)
      assert.strictEqual(mode(file), 0o600)
      assert.strictEqual(mode(dataDir), 0o700)
      const entries = yield* withStore(dataDir, (store) => store.entries)
      assert.deepStrictEqual(entries, { openai: { type: "api", key: "sk-1" } })
    })
  )

  it.effect("narrows a loose mode at start, and keeps entries it cannot use (unknown types) on every write", () =>
    Effect.gen(function* () {
      const dataDir = temp()
      const file = CredentialStore.fileOf(dataDir)
      const upstream = {
        anthropic: { type: "oauth", refresh: "r", access: "a", expires: 1 },
        future: { type: "something-new", value: 1 }
      }
      fs.writeFileSync(file, JSON.stringify(upstream))
      fs.chmodSync(file, 0o664)
      const entries = yield* withStore(dataDir, (store) =>
        Effect.zipRight(store.set("openai", { type: "api", key: "k", label: "mine" }), store.entries)
      )
      assert.strictEqual(mode(file), 0o600)
      assert.deepStrictEqual(Object.keys(entries).sort(), ["anthropic", "openai"])
      assert.deepStrictEqual(JSON.parse(fs.readFileSync(file, "utf8")), {
        ...upstream,
        openai: { type: "api", key: "k", label: "mine" }
      })
    })
  )

  it.effect("an invalid file fails the layer with a message that names the file and not its content", () =>
    Effect.gen(function* () {
      const dataDir = temp()
      fs.writeFileSync(CredentialStore.fileOf(dataDir), '{"openai": {"type": "api", "key": "sk-secret"')
      const exit = yield* Effect.exit(Layer.build(CredentialStore.layer({ dataDir })).pipe(Effect.scoped))
      assert.isTrue(Exit.isFailure(exit))
      const message = JSON.stringify(exit)
      assert.include(message, "auth.json")
      assert.notInclude(message, "sk-secret")
    })
  )

  it.effect("modify and remove report whether there was an entry", () =>
    Effect.gen(function* () {
      const dataDir = temp()
      const result = yield* withStore(dataDir, (store) =>
        Effect.gen(function* () {
          const missing = yield* store.modify("openai", (entry) => ({ ...entry, label: "x" }))
          yield* store.set("openai", { type: "api", key: "k" })
          const renamed = yield* store.modify("openai", (entry) => ({ ...entry, label: "x" }))
          const removed = yield* store.remove("openai")
          const again = yield* store.remove("openai")
          return { missing, renamed, removed, again, entries: yield* store.entries }
        })
      )
      assert.deepStrictEqual(result, { missing: false, renamed: true, removed: true, again: false, entries: {} })
    })
  )
})

describe("Catalog with stored credentials", () => {
  const locate: Catalog.Locate = () => ({ file: "<test>", line: 0, column: 0 })
  const resolve = (env: Record<string, string>, stored: Record<string, string>, info = {}) =>
    Effect.map(
      Effect.either(Catalog.resolve(info, { env, locate, database: ModelsDev.snapshot(), stored })),
      Either.getOrThrow
    )

  it.effect(
    "a stored credential offers a database provider; it wins over the environment, options.apiKey over it",
    () =>
      Effect.gen(function* () {
        const none = yield* resolve({}, {})
        assert.notInclude(
          none.providers.map((p) => p.id),
          "openai"
        )
        assert.isTrue(none.connectable.some((p) => p.id === "openai" && p.env.includes("OPENAI_API_KEY")))

        const stored = yield* resolve({ OPENAI_API_KEY: "sk-env" }, { openai: "sk-stored" })
        const openai = stored.providers.find((p) => p.id === "openai")
        assert.strictEqual(openai?.apiKey, "sk-stored")
        assert.strictEqual(openai?.keySource, "credential")

        const configured = yield* resolve(
          {},
          { openai: "sk-stored" },
          { provider: { openai: { options: { apiKey: "sk-config" } } } }
        )
        const fromConfig = configured.providers.find((p) => p.id === "openai")
        assert.strictEqual(fromConfig?.apiKey, "sk-config")
        assert.strictEqual(fromConfig?.keySource, "config")

        const env = yield* resolve({ OPENAI_API_KEY: "sk-env" }, {})
        assert.strictEqual(env.providers.find((p) => p.id === "openai")?.keySource, "env")
      })
  )
})
