import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { TestProject } from "vitest/node"

declare module "vitest" {
  export interface ProvidedContext {
    /** A directory holding the Promise client as its package builds it (`index.js`, no declarations). */
    clientBundle: string
  }
}

const tsup = (cwd: string, args: ReadonlyArray<string> = []) =>
  execFileSync(process.execPath, [require.resolve("tsup/dist/cli-default.js", { paths: [cwd] }), ...args], {
    cwd,
    stdio: "ignore"
  })

/**
 * The CLI tests run the built `dist/bin.js`, exactly what the README's serve command runs: build it
 * first. The browser tests load the Promise client as its own build config bundles it: build that
 * too, into a scratch directory (without declarations, which the browser does not need). The
 * inspector page the server serves at `/` is built from its sources too (packages/inspector).
 */
export default function setup(project: TestProject): void {
  tsup(path.resolve(__dirname, ".."))
  execFileSync(process.execPath, ["--import", "tsx", "build.ts"], {
    cwd: path.resolve(__dirname, "../../inspector"),
    stdio: "ignore"
  })
  const clientBundle = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-client-bundle-"))
  tsup(path.resolve(__dirname, "../../client"), ["--no-dts", "--out-dir", clientBundle])
  project.provide("clientBundle", clientBundle)
}
