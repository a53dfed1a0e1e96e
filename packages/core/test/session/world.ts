import * as fs from "node:fs"
import * as path from "node:path"
import type { Location } from "@opencode-ai/schema"
import { Effect, type Scope } from "effect"
import { Config } from "../../src/config/config.js"
import type { ConfigInfo } from "../../src/config/config-info.js"
import type { Core } from "../../src/core.js"
import { Sessions } from "../../src/session/sessions.js"
import { TestDatabase } from "../../src/testing/test-database.js"
import { tempDir } from "../fixture.js"

/**
 * The configuration the session tests run with: one provider with two models (`llama` has a variant
 * `fast` and a disabled one, `deep`); the built-in agents.
 */
export const config: ConfigInfo.Info = {
  provider: {
    local: {
      npm: "@ai-sdk/openai-compatible",
      options: { baseURL: "http://127.0.0.1:1/v1" },
      models: {
        qwen: {},
        llama: { variants: { fast: { reasoningEffort: "low" }, deep: { reasoningEffort: "high", disabled: true } } }
      }
    }
  },
  model: "local/qwen"
}

/**
 * A real Core over a fresh database file in a temporary directory (also the Location directory and
 * the instance directory), with {@link config} as its configuration. Nothing is stubbed.
 */
export interface World {
  readonly dir: string
  readonly databaseFile: string
  readonly location: Location.LocationInfo
  /** A fresh Core over the world's file (a new "process" each time it is provided). */
  readonly core: () => ReturnType<typeof Core.layer>
}

export const world: Effect.Effect<World, never, Scope.Scope> = Effect.map(tempDir, (dir) => {
  const databaseFile = path.join(dir, "opencode.db")
  fs.mkdirSync(path.join(dir, "config"), { recursive: true })
  return {
    dir,
    databaseFile,
    location: { directory: dir, project: { id: "prj_test", directory: dir } },
    core: () =>
      TestDatabase.coreLayer({
        databaseFile,
        directory: dir,
        configDir: path.join(dir, "config"),
        env: {},
        config: Config.layerTest(config)
      })
  }
})

/** Runs `body` against a fresh world's Core. */
export const withCore = <A, E>(body: (w: World) => Effect.Effect<A, E, Core.Services | Scope.Scope>) =>
  Effect.flatMap(world, (w) => Effect.provide(body(w), w.core()))

export const createSession = (w: World) =>
  Effect.flatMap(Sessions.Service, (sessions) => sessions.create({ location: w.location }))
