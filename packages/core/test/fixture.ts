import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, type Scope } from "effect"

/** A fresh temporary directory, removed when the scope closes (after anything opened later). */
export const tempDir: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-core-")))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)
