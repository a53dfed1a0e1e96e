export * as CoreHost from "./core-host.js"

/**
 * A Core built in this process for a bench: over the SQLite file `databaseFile`, with `directory` as
 * its Location and the test Config layer over `config`. The directory and the database's folder are
 * made if missing. The built context lives as long as the caller's scope.
 */

import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import { Config, Core } from "../packages/core/src/index.js"

export interface Options {
  readonly databaseFile: string
  readonly directory: string
  readonly configDir: string
  readonly config?: Parameters<typeof Config.layerTest>[0]
}

export const build = (options: Options) =>
  Effect.suspend(() => {
    fs.mkdirSync(options.directory, { recursive: true })
    fs.mkdirSync(path.dirname(options.databaseFile), { recursive: true })
    return Layer.build(
      Core.layer({
        databaseFile: options.databaseFile,
        directory: options.directory,
        configDir: options.configDir,
        env: {},
        config: Config.layerTest(options.config ?? {})
      })
    )
  })
