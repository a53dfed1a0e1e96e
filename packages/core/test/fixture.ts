import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Location } from "@opencode-ai/schema"
import { Effect, Logger, type Scope } from "effect"

/** A fresh temporary directory, removed when the scope closes (after anything opened later). */
export const tempDir: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-core-")))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/**
 * A Location inside a project, with a global config directory beside it, for config folder tests
 * (commands, skills):
 *
 *   <dir>/config/…                         the global config directory
 *   <dir>/repo/.opencode/…                 the project root
 *   <dir>/repo/packages/app/.opencode/…    the Location directory
 */
export const configTree: Effect.Effect<
  {
    readonly dir: string
    readonly configDir: string
    readonly root: string
    readonly app: string
    readonly location: Location.LocationInfo
  },
  never,
  Scope.Scope
> = Effect.map(tempDir, (dir) => {
  const configDir = path.join(dir, "config")
  const root = path.join(dir, "repo")
  const app = path.join(root, "packages", "app")
  fs.mkdirSync(app, { recursive: true })
  return { dir, configDir, root, app, location: { directory: app, project: { id: "prj_test", directory: root } } }
})

/** Runs `effect` collecting the messages it logs at warning level. */
export const collectingWarnings = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const warnings: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => {
      if (logLevel._tag === "Warning")
        warnings.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
    })
    const result = yield* effect.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
    return { result, warnings }
  })
