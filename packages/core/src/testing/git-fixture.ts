export * as GitFixture from "./git-fixture.js"

/**
 * Real git repositories for tests (the `git` binary, with a fixed author so commits work on any
 * machine), and reading back the files of a worktree.
 */

import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

/** Runs `git …args` in `cwd` and returns its standard output; a failing command throws. */
export const git = (cwd: string, ...args: ReadonlyArray<string>): string =>
  execFileSync("git", ["-c", "user.name=Test", "-c", "user.email=test@example.com", ...args], {
    cwd,
    encoding: "utf8"
  })

/** Makes `directory` a git repository with `files` (relative path → content) in one commit. */
export const repository =
  (files: Readonly<Record<string, string>>) =>
  (directory: string): void => {
    git(directory, "init", "--quiet")
    for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(directory, name), content)
    git(directory, "add", "--all")
    git(directory, "commit", "--quiet", "-m", "initial")
  }

/** The content of `name` in `directory`, or undefined when there is no such file. */
export const read = (directory: string, name: string): string | undefined => {
  const file = path.join(directory, name)
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined
}
