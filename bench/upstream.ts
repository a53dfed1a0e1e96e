/**
 * Upstream OpenCode (`opencode-ai` from npm) for the side-by-side bench, with no project dependency:
 * installed on demand with `npm install --prefix <os.tmpdir()>/opencode-upstream-<version>` (npm's
 * registry is the only remote this reaches), then run as its platform binary directly, so that the
 * child's PID is the server's (RSS and CPU are read from it).
 *
 * Started by servers.ts with `--pure` (no external plugins) and the environment of
 * `isolatedEnv`: `OPENCODE_DISABLE_MODELS_FETCH`, `_AUTOUPDATE`, `_SHARE`, `_LSP_DOWNLOAD`,
 * `_DEFAULT_PLUGINS`, `_CLAUDE_CODE`, `_EXTERNAL_SKILLS` set, and the proxy variables pointing at a
 * closed loopback port, so it does not reach the public network. Its provider is configured the same
 * way as ours, through the project's `opencode.json` (a `provider` entry with `npm:
 * "@ai-sdk/openai-compatible"` and `options.baseURL` at the loopback scripted LLM).
 */

import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

export const version = "1.18.33"

const platformPackages = (): ReadonlyArray<string> => {
  const arch = os.arch() === "x64" ? "x64" : os.arch()
  const platform = os.platform() === "win32" ? "windows" : os.platform()
  return [`opencode-${platform}-${arch}`, `opencode-${platform}-${arch}-baseline`, `opencode-${platform}-${arch}-musl`]
}

/** The installed platform binary, installing `opencode-ai@<version>` first when it is not there. */
export const binary = (log: (line: string) => void = console.error): string => {
  const prefix = path.join(os.tmpdir(), `opencode-upstream-${version}`)
  const find = () =>
    platformPackages()
      .map((name) =>
        path.join(prefix, "node_modules", name, "bin", os.platform() === "win32" ? "opencode.exe" : "opencode")
      )
      .find((file) => fs.existsSync(file))
  const found = find()
  if (found !== undefined) return found
  log(`installing opencode-ai@${version} into ${prefix} (npm registry)…`)
  fs.mkdirSync(prefix, { recursive: true })
  execFileSync(
    "npm",
    ["install", "--prefix", prefix, "--no-audit", "--no-fund", "--loglevel=error", `opencode-ai@${version}`],
    { stdio: ["ignore", "inherit", "inherit"] }
  )
  const installed = find()
  if (installed === undefined)
    throw new Error(`opencode-ai@${version} installed no binary for ${os.platform()} ${os.arch()}`)
  log(`upstream opencode-ai@${version} at ${installed}`)
  return installed
}
