import * as fs from "node:fs"
import * as path from "node:path"
import { describe, it } from "@effect/vitest"
import { Errors } from "@opencode-ai/schema"
import { Cause, Context, Effect, Exit, Layer, Option, Queue } from "effect"
import { expect } from "vitest"
import { Config } from "../src/config/config.js"
import { EventLog } from "../src/event/event-log.js"
import { Locations } from "../src/location/locations.js"
import { Sessions } from "../src/session/sessions.js"
import { TestDatabase } from "../src/testing/test-database.js"
import { tempDir } from "./fixture.js"

it.scoped("data survives closing the layer and reopening the same file", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    const core = () => TestDatabase.coreLayer({ databaseFile: path.join(dir, "data", "opencode.db"), directory: dir })
    const created = yield* Effect.gen(function* () {
      const location = yield* (yield* Locations.Service).resolve()
      const session = yield* (yield* Sessions.Service).create({ location })
      yield* (yield* EventLog.Service).append(session.id, [{ type: "test.noted", version: 1, data: { n: 1 } }])
      return session
    }).pipe(Effect.provide(core()))

    yield* Effect.gen(function* () {
      const sessions = yield* Sessions.Service
      const log = yield* EventLog.Service
      expect(yield* sessions.get(created.id)).toEqual(created)
      expect((yield* sessions.list()).data).toEqual([created])
      expect((yield* log.read(created.id)).map((envelope) => envelope.type)).toEqual(["test.noted"])
      const appended = yield* log.append(created.id, [{ type: "test.noted", version: 1, data: { n: 2 } }])
      expect(appended[0]?.durable.seq).toBe(2)
    }).pipe(Effect.provide(core()))
  })
)

it.scoped("two Core layers on two files share nothing, even built with one memo map", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    const memoMap = yield* Layer.makeMemoMap
    const scope = yield* Effect.scope
    const build = (name: string) =>
      Layer.buildWithMemoMap(
        TestDatabase.coreLayer({ databaseFile: path.join(dir, `${name}.db`), directory: dir }),
        memoMap,
        scope
      )
    const a = yield* build("a")
    const b = yield* build("b")
    const sessionsA = Context.get(a, Sessions.Service)
    const sessionsB = Context.get(b, Sessions.Service)
    const liveB = yield* Context.get(b, EventLog.Service).subscribe

    const location = yield* Context.get(a, Locations.Service).resolve()
    const session = yield* sessionsA.create({ location })
    expect(yield* sessionsA.get(session.id)).toEqual(session)
    expect(yield* Effect.exit(sessionsB.get(session.id))).toEqual(Exit.fail(Errors.SessionNotFoundError.of(session.id)))
    expect((yield* sessionsB.list()).data).toEqual([])
    expect(yield* Queue.size(liveB)).toBe(0)
    expect(yield* Context.get(b, EventLog.Service).read(session.id)).toEqual([])
  })
)

it.scoped("the default Location is the instance directory", () =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    const location = yield* Effect.flatMap(Locations.Service, (locations) => locations.resolve()).pipe(
      Effect.provide(TestDatabase.coreLayer({ databaseFile: path.join(dir, "opencode.db"), directory: dir }))
    )
    expect(location.directory).toBe(dir)
  })
)

describe("configuration", () => {
  it.scoped("provides the configuration read from the global config dir, with {env:…} from the given environment", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const configDir = path.join(dir, "config")
      fs.mkdirSync(configDir)
      fs.writeFileSync(
        path.join(configDir, "opencode.json"),
        JSON.stringify({
          provider: {
            local: {
              npm: "@ai-sdk/openai-compatible",
              options: { baseURL: "http://127.0.0.1:8080/v1", apiKey: "{env:LOCAL_KEY}" },
              models: { qwen: { limit: { context: 32768, output: 4096 } } }
            }
          },
          model: "local/qwen"
        })
      )
      const config = yield* Config.Service.pipe(
        Effect.provide(
          TestDatabase.coreLayer({
            databaseFile: path.join(dir, "opencode.db"),
            directory: dir,
            configDir,
            env: { LOCAL_KEY: "sk-1" }
          })
        )
      )
      expect(config.sources).toEqual([path.join(configDir, "opencode.json")])
      expect(config.providers.map((provider) => [provider.id, provider.apiKey])).toEqual([["local", "sk-1"]])
      expect(config.model).toEqual(Option.some({ providerID: "local", id: "qwen" }))
    })
  )

  it.scoped("an invalid opencode.json fails the layer with its ConfigError, before the database is created", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const configDir = path.join(dir, "config")
      const file = path.join(configDir, "opencode.json")
      fs.mkdirSync(configDir)
      fs.writeFileSync(file, `{\n  "model": "nowhere/none"\n}\n`)
      const databaseFile = path.join(dir, "data", "opencode.db")
      const exit = yield* Effect.exit(
        Layer.build(TestDatabase.coreLayer({ databaseFile, directory: dir, configDir, env: {} }))
      )
      expect(Exit.isFailure(exit)).toBe(true)
      const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      expect(Option.getOrThrow(error)).toMatchObject({ _tag: "ConfigError", file, line: 2, key: "model" })
      expect(fs.existsSync(databaseFile)).toBe(false)
    })
  )

  it.scoped("an explicit config layer replaces reading opencode.json", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const configDir = path.join(dir, "config")
      fs.mkdirSync(configDir)
      // Would fail if read.
      fs.writeFileSync(path.join(configDir, "opencode.json"), "{ not json")
      const config = yield* Config.Service.pipe(
        Effect.provide(
          TestDatabase.coreLayer({
            databaseFile: path.join(dir, "opencode.db"),
            directory: dir,
            configDir,
            config: Config.layerTest({ agent: { plan: { disable: true } } })
          })
        )
      )
      expect(config.sources).toEqual(["<test>"])
      expect(Option.isNone(config.agent("plan"))).toBe(true)
    })
  )
})
