/**
 * `pnpm bench`: runs every bench script that answers a row of issue 18's table (those present in
 * this tree), one after the other, each as its own child process, then prints every row of the table
 * with its target and whether the printed figure meets it. A row whose script is not in the tree is
 * printed as "not measured (script missing)"; nothing is estimated.
 *
 *   node --import tsx bench/run.ts [--quick] [--only <script>]... [--timeout-min 30]
 *
 * `--quick` passes each script smaller settings (fewer iterations, smaller inputs) for a smoke run:
 * its figures are not the table's scenarios. The scripts' own output streams through as they run.
 * See bench/README.md ("Convention") for what a script prints.
 */

import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { parse } from "./figures.js"
import { describeTarget, describeVerdict, judge, rows, type ScriptResult } from "./rows.js"

const here = import.meta.dirname

/** Per script: extra node flags, its arguments for the full run and for `--quick`. */
const settings: Record<
  string,
  { node?: ReadonlyArray<string>; full?: ReadonlyArray<string>; quick: ReadonlyArray<string> }
> = {
  "step-overhead.ts": { quick: ["--iterations", "30", "--warmup", "5"] },
  "pages.ts": { quick: ["--rounds", "2", "--seconds", "1"] },
  "sse-replay.ts": { quick: ["--iterations", "5", "--warmup", "1"] },
  "startup.ts": { quick: ["--runs", "2", "--sessions", "50"] },
  "startup-history.ts": { quick: ["--crashes", "20", "--mb", "2", "--rounds", "3"] },
  "concurrent-sessions.ts": { quick: ["--sessions", "20", "--steps", "5"] },
  "tool-output-bounding.ts": {
    node: ["--expose-gc"],
    quick: ["--size-mib", "128", "--runs", "2", "--warmup", "0"]
  },
  "client-size.ts": { quick: [] }
}

const args = process.argv.slice(2)
const quick = args.includes("--quick")
const only = args.flatMap((arg, i) => (args[i - 1] === "--only" ? [arg.replace(/^bench\//, "")] : []))
const timeoutAt = args.indexOf("--timeout-min")
const timeoutMs = (timeoutAt === -1 ? 30 : Number(args[timeoutAt + 1])) * 60_000

const scripts = [...new Set(rows.flatMap((row) => row.scripts))].filter((s) => only.length === 0 || only.includes(s))

const runScript = (script: string): Promise<ScriptResult> =>
  new Promise((resolve) => {
    const setting = settings[script] ?? { quick: [] }
    const child = spawn(
      process.execPath,
      [
        ...(setting.node ?? []),
        "--import",
        "tsx",
        path.join(here, script),
        ...(quick ? setting.quick : (setting.full ?? []))
      ],
      {
        cwd: path.dirname(here),
        stdio: ["ignore", "pipe", "inherit"],
        env: { ...process.env, OPENCODE_DISABLE_MODELS_FETCH: "1" }
      }
    )
    let output = ""
    child.stdout.on("data", (chunk) => {
      output += chunk
      process.stdout.write(chunk)
    })
    const timer = setTimeout(() => child.kill("SIGTERM"), timeoutMs)
    child.once("error", (error) => {
      clearTimeout(timer)
      resolve({ _tag: "Failed", reason: error.message })
    })
    child.once("exit", (code, signal) => {
      clearTimeout(timer)
      const figures = parse(output)
      if (code === 0 || figures.length > 0) resolve({ _tag: "Ran", figures })
      else resolve({ _tag: "Failed", reason: signal === null ? `exit status ${code}` : `killed by ${signal}` })
    })
  })

const results = new Map<string, ScriptResult>()
for (const script of scripts) {
  if (!fs.existsSync(path.join(here, script))) {
    results.set(script, { _tag: "Missing" })
    continue
  }
  console.log(`\n=== bench/${script}${quick ? " (quick)" : ""}`)
  const started = performance.now()
  const result = await runScript(script)
  results.set(script, result)
  console.log(
    `=== bench/${script}: ${result._tag === "Ran" ? `${result.figures.length} figures` : result._tag} in ${((performance.now() - started) / 1000).toFixed(1)} s`
  )
}

const cpus = os.cpus()
const load = os.loadavg().map((l) => l.toFixed(1))
console.log(
  `\nissue 18's table — ${new Date().toISOString()}, node ${process.version}, ${os.platform()} ${os.arch()}, ` +
    `${cpus.length} × ${cpus[0]?.model ?? "cpu"}, load average ${load.join(" ")}${quick ? " — QUICK run: smaller scenarios than the table's" : ""}\n`
)
const shown = rows.filter((row) => only.length === 0 || row.scripts.some((s) => only.includes(s)))
const width = Math.max(...shown.map((row) => row.label.length))
const targetWidth = Math.max(...shown.map((row) => describeTarget(row).length))
for (const row of shown) {
  console.log(
    `${row.label.padEnd(width)}  ${describeTarget(row).padEnd(targetWidth)}  ${describeVerdict(judge(row, results))}`
  )
}
