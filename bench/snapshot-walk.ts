/**
 * What a Step's file snapshot costs on a real project: the Tree Writer's walk of a work tree (a Step
 * takes one snapshot before its provider request, and one more at its end when it ran tools), in this
 * process, synchronous as the server runs it.
 *
 *   node --import tsx bench/snapshot-walk.ts [--work-tree <dir>] [--walks 100]
 *
 * The work tree defaults to this repository's checkout (its `.gitignore` keeps `node_modules` and
 * the builds out). The first walk hashes and stores every file into a fresh bare repository; the
 * figure is the median of the walks after it, over the unchanged tree (the common case: a Step that
 * changed a few files, or none). Printed, never asserted (DESIGN §7.10).
 */

import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { TreeWriter } from "../packages/core/src/snapshot/tree-writer.js"
import { type Figure, median, numberFlag, positive, runWhenMain } from "./figures.js"

const at = process.argv.indexOf("--work-tree")
const workTree = path.resolve(
  at === -1 ? path.join(path.dirname(fileURLToPath(import.meta.url)), "..") : (process.argv[at + 1] ?? ".")
)
const walks = numberFlag("walks", 100, positive)

export const run = async (): Promise<ReadonlyArray<Figure>> => {
  const gitDir = fs.mkdtempSync(path.join(os.tmpdir(), "snapshot-walk-"))
  try {
    execFileSync("git", [`--git-dir=${gitDir}`, "init", "--quiet", "--bare"])
    const writer = TreeWriter.make({ gitDir, workTree })
    let start = performance.now()
    const id = writer.write()
    const first = performance.now() - start
    if (id === undefined) throw new Error(`the Tree Writer leaves ${workTree} to git (see tree-writer.ts)`)
    const times: Array<number> = []
    for (let i = 0; i < walks; i++) {
      start = performance.now()
      writer.write()
      times.push(performance.now() - start)
    }
    const entries = Number(
      execFileSync("git", [`--git-dir=${gitDir}`, "ls-tree", "-r", "-t", id], { encoding: "utf8" }).split("\n").length -
        1
    )
    console.log(
      `${workTree}: ${entries} files and directories; first walk ${first.toFixed(1)} ms, ` +
        `then ${median(times).toFixed(2)} ms (median of ${walks}, min ${Math.min(...times).toFixed(2)})`
    )
    return [
      { name: "snapshot-walk-first", value: first, unit: "ms" },
      { name: "snapshot-walk", value: median(times), unit: "ms" }
    ]
  } finally {
    fs.rmSync(gitDir, { recursive: true, force: true })
  }
}

runWhenMain(import.meta.url, run)
