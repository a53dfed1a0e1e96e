/**
 * The convention every bench script follows (see bench/README.md, "Convention"):
 *
 * - it can be run alone (`node --import tsx bench/<name>.ts`) and prints, among anything else it
 *   likes, one line per figure: `<name>: <value> <unit>`, where `<name>` is lower-case kebab case
 *   (`prompt-to-provider-http`), `<value>` a plain decimal number and `<unit>` one token (`ms`,
 *   `req/s`, `MiB`, `x`, `count`, `B`);
 * - it exports `run()`, resolving to the same figures as {@link Figure}s.
 *
 * `pnpm bench` (bench/run.ts) runs each script as a child process and reads those lines back with
 * {@link parse}; a figure whose name is a row key of issue 18's table ({@link ../rows.ts}) answers that
 * row.
 */

import * as path from "node:path"
import { fileURLToPath } from "node:url"

export interface Figure {
  /** Lower-case kebab case; a row key when the figure answers a row of the table. */
  readonly name: string
  readonly value: number
  readonly unit: string
}

const namePattern = /^[a-z0-9][a-z0-9.-]*$/
const linePattern = /^([a-z0-9][a-z0-9.-]*):\s+(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s+(\S+)\s*$/

/** The line a figure prints as; throws on a name or value that the parser could not read back. */
export const line = (figure: Figure): string => {
  if (!namePattern.test(figure.name)) throw new Error(`figure name ${JSON.stringify(figure.name)} is not kebab case`)
  if (!Number.isFinite(figure.value)) throw new Error(`figure ${figure.name} has no finite value (${figure.value})`)
  if (!/^\S+$/.test(figure.unit)) throw new Error(`figure ${figure.name} has a unit with spaces`)
  return `${figure.name}: ${round(figure.value)} ${figure.unit}`
}

/** Up to three decimals, no exponent for ordinary magnitudes. */
const round = (value: number): string => {
  const fixed = Math.abs(value) >= 100 ? value.toFixed(1) : value.toFixed(3)
  return fixed.includes(".") ? fixed.replace(/\.?0+$/, "") || "0" : fixed
}

/** Prints each figure on its own line (stdout). */
export const emit = (figures: ReadonlyArray<Figure>): void => {
  for (const figure of figures) console.log(line(figure))
}

/**
 * Every figure line of a script's output, in order. Other lines (tables, commentary) are skipped; a
 * name printed twice keeps its last value.
 */
export const parse = (output: string): ReadonlyArray<Figure> => {
  const figures = new Map<string, Figure>()
  for (const raw of output.split(/\r?\n/)) {
    const match = linePattern.exec(raw.trim())
    if (match === null) continue
    const figure = { name: match[1]!, value: Number(match[2]), unit: match[3]! }
    figures.delete(figure.name)
    figures.set(figure.name, figure)
  }
  return [...figures.values()]
}

/**
 * The number given on the command line as `--<name> <number>`, when it is finite and `accept`s it
 * (by default: not negative); otherwise `fallback`.
 */
export const numberFlag = (
  name: string,
  fallback: number,
  accept: (value: number) => boolean = (value) => value >= 0
): number => {
  const at = process.argv.indexOf(`--${name}`)
  const value = at === -1 ? Number.NaN : Number(process.argv[at + 1])
  return Number.isFinite(value) && accept(value) ? value : fallback
}

/** For {@link numberFlag}: more than zero. */
export const positive = (value: number): boolean => value > 0

/** Whether the module is the process's entry point (so a script runs its `main` only when run alone). */
export const isMain = (moduleUrl: string): boolean => {
  const entry = process.argv[1]
  if (entry === undefined) return false
  const file = fileURLToPath(moduleUrl)
  return file === path.resolve(entry) || file.replace(/\.ts$/, "") === path.resolve(entry).replace(/\.ts$/, "")
}

/**
 * Runs a script's `run` when the module is the entry point: prints its figures and exits 0, or prints
 * the error and exits 1.
 */
export const runWhenMain = (moduleUrl: string, run: () => Promise<ReadonlyArray<Figure>>): void => {
  if (!isMain(moduleUrl)) return
  run().then(
    (figures) => {
      emit(figures)
      process.exit(0)
    },
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
}

// ---------------------------------------------------------------------------------------------------
// Small statistics shared by the scripts

export const percentile = (samples: ReadonlyArray<number>, p: number): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

export const median = (samples: ReadonlyArray<number>): number => percentile(samples, 50)
