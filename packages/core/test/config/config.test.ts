import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import { Config } from "../../src/config/config.js"
import { ConfigSource } from "../../src/config/config-source.js"
import { captureLogs, layer, load, type World, world } from "./world.js"

const failure = <A, E>(result: Either.Either<A, E>): E => {
  if (Either.isRight(result)) throw new Error("expected a failure")
  return result.left
}

/** One document per source; each sets `server.hostname` to its own name plus something only it sets. */
const writeAllSources = (w: World) => {
  const files = {
    globalJson: w.write(path.join(w.configDir, "opencode.json"), {
      server: { port: 1, hostname: "global-json", cors: ["http://a", "http://b"] },
      instructions: ["global.md"],
      compaction: { auto: false }
    }),
    globalJsonc: w.write(
      path.join(w.configDir, "opencode.jsonc"),
      `{ "server": { "hostname": "global-jsonc" }, "tool_output": { "max_lines": 10 }, }`
    ),
    custom: w.write(path.join(w.root, "custom", "team.json"), {
      server: { hostname: "custom" },
      tool_output: { max_bytes: 100 },
      instructions: ["custom.md", "global.md"]
    }),
    // above the worktree: never read
    outside: w.write(path.join(w.root, "opencode.json"), { server: { hostname: "outside" }, model: "x" }),
    projectRoot: w.write(path.join(w.worktree, "opencode.json"), {
      server: { hostname: "project-root", cors: ["http://c"] },
      compaction: { prune: false }
    }),
    projectApp: w.write(path.join(w.directory, "opencode.jsonc"), {
      server: { hostname: "project-app" },
      instructions: ["app.md"]
    })
  }
  const env = {
    OPENCODE_CONFIG: path.join(w.root, "custom", "team.json"),
    OPENCODE_CONFIG_CONTENT: `{ "server": { "hostname": "inline" } }`
  }
  return { files, env }
}

describe("Config", () => {
  it.scoped(
    "merges global json, global jsonc, OPENCODE_CONFIG, project files (root to nearest) and OPENCODE_CONFIG_CONTENT, later over earlier",
    () =>
      Effect.gen(function* () {
        const w = yield* world
        const { files, env } = writeAllSources(w)
        const config = yield* load(w.options(env))
        assert.deepStrictEqual(config.sources, [
          files.globalJson,
          files.globalJsonc,
          files.custom,
          files.projectRoot,
          files.projectApp,
          "OPENCODE_CONFIG_CONTENT"
        ])
        // the last source wins a scalar; objects merge key by key; arrays are replaced
        assert.deepStrictEqual(config.server, { port: 1, hostname: "inline", cors: ["http://c"] })
        assert.deepStrictEqual(config.toolOutput, { maxLines: 10, maxBytes: 100 })
        assert.deepStrictEqual(config.compaction, { auto: false, prune: false })
        // instructions concatenate across sources, duplicates dropped
        assert.deepStrictEqual(config.instructions, ["global.md", "custom.md", "app.md"])

        // each source in turn is the last word once the ones after it are gone
        const withoutInline = yield* load(w.options({ OPENCODE_CONFIG: env.OPENCODE_CONFIG }))
        assert.strictEqual(withoutInline.server.hostname, "project-app")
        const onlyRootProject = yield* load({
          ...w.options(env),
          directory: w.worktree,
          env: { ...w.options().env, OPENCODE_CONFIG: env.OPENCODE_CONFIG }
        })
        assert.strictEqual(onlyRootProject.server.hostname, "project-root")
        const noProject = yield* load(
          w.options({ OPENCODE_CONFIG: env.OPENCODE_CONFIG, OPENCODE_DISABLE_PROJECT_CONFIG: "1" })
        )
        assert.strictEqual(noProject.server.hostname, "custom")
        const globalOnly = yield* load(w.options({ OPENCODE_DISABLE_PROJECT_CONFIG: "1" }))
        assert.strictEqual(globalOnly.server.hostname, "global-jsonc")
        assert.deepStrictEqual(globalOnly.sources, [files.globalJson, files.globalJsonc])
      })
  )

  it.scoped('OPENCODE_DISABLE_PROJECT_CONFIG ("1" or "true") skips only the project files', () =>
    Effect.gen(function* () {
      const w = yield* world
      const { files, env } = writeAllSources(w)
      for (const flag of ["1", "true", "TRUE"]) {
        const config = yield* load(w.options({ ...env, OPENCODE_DISABLE_PROJECT_CONFIG: flag }))
        assert.deepStrictEqual(config.sources, [
          files.globalJson,
          files.globalJsonc,
          files.custom,
          "OPENCODE_CONFIG_CONTENT"
        ])
        assert.deepStrictEqual(config.instructions, ["global.md", "custom.md"])
      }
      const enabled = yield* load(w.options({ ...env, OPENCODE_DISABLE_PROJECT_CONFIG: "0" }))
      assert.include(enabled.sources, files.projectApp)
    })
  )

  it.scoped(
    "the project search stops at worktreeRoot, else at the nearest .git, else searches the directory alone",
    () =>
      Effect.gen(function* () {
        const w = yield* world
        const { files } = writeAllSources(w)
        const bounded = yield* load({ ...w.options(), worktreeRoot: w.directory })
        assert.deepStrictEqual(bounded.sources.slice(2), [files.projectApp])
        const byGit = yield* load(w.options())
        assert.deepStrictEqual(byGit.sources.slice(2), [files.projectRoot, files.projectApp])
        // a directory in no git worktree: only its own files
        const loose = path.join(w.root, "loose", "dir")
        w.write(path.join(loose, "opencode.json"), { server: { hostname: "loose" } })
        const alone = yield* load({ ...w.options(), directory: loose })
        assert.deepStrictEqual(alone.sources.slice(2), [path.join(loose, "opencode.json")])
        assert.strictEqual(alone.server.hostname, "loose")
      })
  )

  it.scoped("no config at all is valid: built-in agents, no providers, default limits", () =>
    Effect.gen(function* () {
      const w = yield* world
      const config = yield* load(w.options())
      assert.deepStrictEqual(config.sources, [])
      assert.deepStrictEqual(config.providers, [])
      assert.isTrue(Option.isNone(config.model))
      assert.strictEqual(config.defaultAgent, "build")
      assert.deepStrictEqual(config.toolOutput, Config.defaultToolOutput)
      assert.deepStrictEqual(config.compaction, { auto: true, prune: true })
      assert.deepStrictEqual(config.instructions, [])
    })
  )

  it.scoped("the DESIGN §5 example works unchanged", () =>
    Effect.gen(function* () {
      const w = yield* world
      w.write(
        path.join(w.worktree, "opencode.json"),
        `{ "provider": { "local": { "npm": "@ai-sdk/openai-compatible",
    "options": { "baseURL": "http://127.0.0.1:8080/v1", "apiKey": "{env:LOCAL_KEY}" },
    "models": { "qwen": { "limit": { "context": 32768, "output": 4096 } } } } },
  "model": "local/qwen" }`
      )
      const { result, warnings } = yield* captureLogs(load(w.options({ LOCAL_KEY: "sk-local" })))
      const config = Either.getOrThrow(result)
      assert.deepStrictEqual(warnings, [])
      assert.deepStrictEqual(config.providers, [
        {
          id: "local",
          name: "local",
          npm: "@ai-sdk/openai-compatible",
          protocol: "openai-compatible",
          baseURL: "http://127.0.0.1:8080/v1",
          apiKey: "sk-local",
          keySource: "config",
          headers: {},
          models: [
            {
              id: "qwen",
              apiID: "qwen",
              providerID: "local",
              name: "qwen",
              toolCall: true,
              reasoning: false,
              limit: { context: 32768, output: 4096 },
              input: ["text"],
              output: ["text"],
              status: "active",
              temperature: true,
              options: {},
              variants: {},
              headers: {}
            }
          ]
        }
      ])
      assert.deepStrictEqual(config.model, Option.some({ providerID: "local", id: "qwen" }))
      const found = Option.getOrThrow(config.findModel({ providerID: "local", id: "qwen" }))
      assert.strictEqual(found.provider.baseURL, "http://127.0.0.1:8080/v1")
      assert.strictEqual(found.model.limit.context, 32768)
      assert.isTrue(Option.isSome(config.provider("local")))
      assert.isTrue(Option.isNone(config.provider("nope")))

      // the key's variable unset: a warning, and no key at all rather than an empty one
      const unset = yield* captureLogs(load(w.options()))
      assert.isUndefined(Option.getOrThrow(Option.fromNullable(Either.getOrThrow(unset.result).providers[0])).apiKey)
      assert.strictEqual(unset.warnings.length, 1)
      assert.include(unset.warnings[0], "provider.local.options.apiKey: {env:LOCAL_KEY} is not set")
    })
  )

  it.scoped("an invalid file fails with the file that holds the error, even when other sources are valid", () =>
    Effect.gen(function* () {
      const w = yield* world
      writeAllSources(w)
      const bad = w.write(path.join(w.configDir, "opencode.jsonc"), `{\n  "server": { "hostname": "x" },,\n}`)
      const syntax = failure(yield* Effect.either(load(w.options())))
      assert.strictEqual(syntax.file, bad)
      assert.strictEqual(syntax.line, 2)

      w.write(path.join(w.configDir, "opencode.jsonc"), `{}`)
      const inline = failure(
        yield* Effect.either(load(w.options({ OPENCODE_CONFIG_CONTENT: `{"tool_output": {"max_lines": -1}}` })))
      )
      assert.strictEqual(inline.file, ConfigSource.inlineName)
      assert.strictEqual(inline.key, "tool_output.max_lines")
      assert.strictEqual(inline.line, 1)
    })
  )

  it.scoped("OPENCODE_CONFIG must name a readable file", () =>
    Effect.gen(function* () {
      const w = yield* world
      const error = failure(yield* Effect.either(load(w.options({ OPENCODE_CONFIG: "missing.json" }))))
      assert.strictEqual(error._tag, "ConfigError")
      assert.strictEqual(error.file, path.join(w.directory, "missing.json"))
      assert.strictEqual(error.line, 0)
      assert.include(error.message, "file not found")
      assert.strictEqual(error.message, `${error.file}: file not found`)
    })
  )

  it.scoped(
    "a provider package without an adapter is listed unavailable and logged once; a model naming it fails at its line",
    () =>
      Effect.gen(function* () {
        const w = yield* world
        w.write(
          path.join(w.worktree, "opencode.json"),
          `{
  "provider": {
    "g": {
      "npm": "@ai-sdk/amazon-bedrock",
      "models": { "nova": {} }
    }
  }
}`
        )
        const { result, logs } = yield* captureLogs(load(w.options()))
        const loaded = Either.getOrThrow(result)
        assert.deepStrictEqual(loaded.providers, [])
        assert.deepStrictEqual(
          loaded.unavailable.map(({ id, npm, reason }) => ({ id, npm, reason })),
          [
            {
              id: "g",
              npm: "@ai-sdk/amazon-bedrock",
              reason: "Amazon Bedrock needs AWS request signing, which this runtime does not do"
            }
          ]
        )
        assert.deepStrictEqual(
          logs.filter((log) => log.message.includes("unavailable")),
          [
            {
              level: "INFO",
              message:
                "Provider g is unavailable: Amazon Bedrock needs AWS request signing, which this runtime does not do"
            }
          ]
        )

        const file = w.write(
          path.join(w.worktree, "opencode.json"),
          `{
  "provider": { "g": { "npm": "@ai-sdk/amazon-bedrock", "models": { "claude": {} } } },
  "model": "g/claude"
}`
        )
        const error = failure(yield* Effect.either(load(w.options())))
        assert.strictEqual(error.file, file)
        assert.strictEqual(error.key, "model")
        assert.strictEqual(error.line, 3)
        assert.include(
          error.message,
          `"g/claude" names provider "g", which is unavailable: Amazon Bedrock needs AWS request signing`
        )
      })
  )

  it.scoped(
    "model references are checked against the merged providers; the error points at the file that set the key",
    () =>
      Effect.gen(function* () {
        const w = yield* world
        w.write(path.join(w.configDir, "opencode.json"), {
          provider: {
            local: {
              npm: "@ai-sdk/openai-compatible",
              options: { baseURL: "http://127.0.0.1:1/v1" },
              models: { qwen: {} }
            }
          },
          model: "local/qwen"
        })
        const project = w.write(path.join(w.worktree, "opencode.json"), `{\n  "small_model": "local/nope"\n}`)
        const error = failure(yield* Effect.either(load(w.options())))
        assert.strictEqual(error.key, "small_model")
        assert.strictEqual(error.file, project)
        assert.strictEqual(error.line, 2)
        assert.include(error.message, `names model "nope", which provider "local" does not offer (its models: qwen)`)

        w.write(path.join(w.worktree, "opencode.json"), { model: "elsewhere/qwen" })
        const provider = failure(yield* Effect.either(load(w.options())))
        assert.strictEqual(provider.key, "model")
        assert.include(provider.message, `provider "elsewhere", which is not configured (available: local)`)

        w.write(path.join(w.worktree, "opencode.json"), { model: "qwen" })
        const unparsable = failure(yield* Effect.either(load(w.options())))
        assert.include(unparsable.message, `expected "provider/model"`)

        w.write(path.join(w.worktree, "opencode.json"), { small_model: "local/qwen" })
        const ok = yield* load(w.options())
        assert.deepStrictEqual(ok.smallModel, Option.some({ providerID: "local", id: "qwen" }))
      })
  )

  it.scoped("Config.layer provides the service, and fails to build on an invalid config", () =>
    Effect.gen(function* () {
      const w = yield* world
      w.write(path.join(w.worktree, "opencode.json"), { agent: { build: { steps: 7 } } })
      const steps = yield* Effect.map(Config.Service, (config) => config.agent("build")).pipe(
        Effect.provide(layer(w.options()))
      )
      assert.strictEqual(Option.getOrThrow(steps).steps, 7)

      w.write(path.join(w.worktree, "opencode.json"), `{ "agent": { "build": { "steps": "many" } } }`)
      const error = failure(yield* Effect.either(Effect.provide(Config.Service, layer(w.options()))))
      assert.strictEqual(error._tag, "ConfigError")
      assert.strictEqual(error.key, "agent.build.steps")
    })
  )

  it.effect("Config.layerTest resolves a literal config", () =>
    Effect.gen(function* () {
      const config = yield* Effect.provide(
        Config.Service,
        Config.layerTest({
          provider: {
            a: { npm: "@ai-sdk/anthropic", options: { apiKey: "k" }, models: { claude: { tool_call: true } } }
          },
          tool_output: { max_lines: 5 }
        })
      )
      assert.deepStrictEqual(config.sources, ["<test>"])
      assert.deepStrictEqual(config.model, Option.some({ providerID: "a", id: "claude" }))
      assert.strictEqual(config.providers[0]?.protocol, "anthropic")
      assert.deepStrictEqual(config.toolOutput, { maxLines: 5, maxBytes: 51200 })
      const error = failure(yield* Effect.either(Effect.provide(Config.Service, Config.layerTest({ model: "a/b" }))))
      assert.strictEqual(error.file, "<test>")
      assert.strictEqual(error.key, "model")
    })
  )

  it("merge: objects merge recursively, other values are replaced, instructions concatenate", () => {
    assert.deepStrictEqual(
      Config.merge(
        {
          server: { port: 1, cors: ["a"] },
          instructions: ["x", "y"],
          agent: { build: { steps: 1, permission: { edit: "ask" } } }
        },
        { server: { cors: ["b"] }, instructions: ["y", "z"], agent: { build: { permission: "deny" } } }
      ),
      {
        server: { port: 1, cors: ["b"] },
        instructions: ["x", "y", "z"],
        agent: { build: { steps: 1, permission: "deny" } }
      }
    )
    assert.deepStrictEqual(Config.merge({ instructions: ["x"] }, {}), { instructions: ["x"] })
    assert.deepStrictEqual(Config.merge({}, { instructions: ["x"] }), { instructions: ["x"] })
  })
})
