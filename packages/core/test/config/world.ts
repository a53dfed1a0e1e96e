import * as fs from "node:fs"
import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { Effect, Layer, Logger, LogLevel, type Scope } from "effect"
import { Config } from "../../src/config/config.js"
import { ModelDatabase } from "../../src/config/model-database.js"
import { tempDir } from "../fixture.js"

/** A fake machine: a home with a global config dir, and a git worktree with a nested instance directory. */
export interface World {
  readonly root: string
  readonly configDir: string
  readonly worktree: string
  /** `<worktree>/packages/app`: the instance directory. */
  readonly directory: string
  /** Writes `content` (a string, or a value written as JSON) to `file`, creating directories. */
  readonly write: (file: string, content: unknown) => string
  readonly options: (env?: Record<string, string | undefined>) => Config.Options
}

export const world: Effect.Effect<World, never, Scope.Scope> = Effect.map(tempDir, (root) => {
  const configDir = path.join(root, "home", ".config", "opencode")
  const worktree = path.join(root, "repo")
  const directory = path.join(worktree, "packages", "app")
  fs.mkdirSync(configDir, { recursive: true })
  fs.mkdirSync(path.join(worktree, ".git"), { recursive: true })
  fs.mkdirSync(directory, { recursive: true })
  const write = (file: string, content: unknown): string => {
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content, null, 2))
    return file
  }
  return {
    root,
    configDir,
    worktree,
    directory,
    write,
    options: (env = {}) => ({ directory, configDir, env: { HOME: path.join(root, "home"), ...env } })
  }
})

export interface Log {
  readonly level: string
  readonly message: string
}

/** Runs `effect` with its log lines (debug and up) captured instead of printed. */
export const captureLogs = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const logs: Array<Log> = []
    const logger = Logger.make(({ logLevel, message }) => {
      const parts = Array.isArray(message) ? message : [message]
      logs.push({ level: logLevel.label, message: parts.map(String).join(" ") })
    })
    const result = yield* Effect.either(
      effect.pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
        Logger.withMinimumLogLevel(LogLevel.Debug)
      )
    )
    return { result, logs, warnings: logs.filter((log) => log.level === "WARN").map((log) => log.message) }
  })

/** Loads the configuration of `options` with the real file system. */
export const load = (options: Config.Options) => Config.load(options).pipe(Effect.provide(NodeContext.layer))

/** The Config service layer of `options` with the real file system, over the bundled model database. */
export const layer = (options: Config.Options) =>
  Config.layer(options).pipe(Layer.provide(ModelDatabase.layerStatic()), Layer.provide(NodeContext.layer))
