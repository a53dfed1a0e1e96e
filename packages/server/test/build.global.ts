import { execFileSync } from "node:child_process"
import * as path from "node:path"

/** The CLI tests run the built `dist/bin.js`, exactly what the README's serve command runs: build it first. */
export default function setup(): void {
  const root = path.resolve(__dirname, "..")
  execFileSync(process.execPath, [require.resolve("tsup/dist/cli-default.js", { paths: [root] })], {
    cwd: root,
    stdio: "ignore"
  })
}
