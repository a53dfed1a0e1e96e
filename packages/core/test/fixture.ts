import { Effect, type Scope } from "effect"
import type { ConfigInfo } from "../src/config/config-info.js"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** A fresh temporary directory, removed when the scope closes (after anything opened later). */
export const tempDir: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-core-")))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** A configuration whose only provider and model (`scripted/m`, with tool calls) is a ScriptedLLMServer at `baseURL`. */
export const scriptedConfig = (baseURL: string): ConfigInfo.Info =>
  ({
    provider: {
      scripted: {
        npm: "@ai-sdk/openai-compatible",
        options: { baseURL, apiKey: "test-key" },
        models: { m: { name: "Scripted", tool_call: true, limit: { context: 100_000, output: 1000 } } }
      }
    },
    model: "scripted/m"
  }) as ConfigInfo.Info
