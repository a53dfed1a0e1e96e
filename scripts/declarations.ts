/**
 * Declarations for a published package that bundles workspace packages into its JavaScript.
 *
 * tsup's bundled `.d.ts` step cannot inline the workspace packages (its rollup-plugin-dts fails on a
 * module that exports itself as a namespace, `export * as Cursor from "./cursor.js"`, which every
 * package here does). So this emits one `.d.ts` per source file with the TypeScript compiler, for
 * the package and every workspace package it reaches, under `dist/types/<package>/…`; rewrites each
 * `@opencode-ai/<name>[/<subpath>]` specifier into a relative path to that package's emitted entry
 * (from its `exports` map); and writes, for every entry of the package, `dist/<entry>.d.ts`
 * re-exporting the emitted one. The published package then names no unpublished package, not even
 * in its types.
 *
 * Usage, from a package directory: `node --import tsx ../../scripts/declarations.ts <entry>=<source> …`
 * e.g. `index=src/index.ts effect/index=src/effect/index.ts`.
 */

import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"

const packageDir = process.cwd()
const packagesDir = path.dirname(packageDir)
const root = path.dirname(packagesDir)
const outDir = path.join(packageDir, "dist", "types")

const entries = process.argv.slice(2).map((arg) => {
  const [name, source] = arg.split("=")
  if (name === undefined || source === undefined) throw new Error(`Expected <entry>=<source>, got ${arg}`)
  return { name, source: path.resolve(packageDir, source) }
})
if (entries.length === 0) throw new Error("No entries given")

/** Every workspace package: its name, directory and `exports` map (subpath -> source file). */
const workspace = fs
  .readdirSync(packagesDir)
  .map((dir) => path.join(packagesDir, dir))
  .filter((dir) => fs.existsSync(path.join(dir, "package.json")))
  .map((dir) => {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"))
    const exports: Record<string, string> =
      typeof manifest.exports === "string" ? { ".": manifest.exports } : manifest.exports
    return { name: manifest.name as string, dir, exports }
  })

// `@opencode-ai/core` -> packages/core/src/index.ts, `@opencode-ai/client/effect` -> …/src/effect/index.ts
const paths: Record<string, Array<string>> = {}
for (const pkg of workspace) {
  for (const [subpath, source] of Object.entries(pkg.exports)) {
    paths[subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`] = [path.join(pkg.dir, source)]
  }
}

const base = ts.readConfigFile(path.join(root, "tsconfig.base.json"), ts.sys.readFile)
if (base.error) throw new Error(ts.flattenDiagnosticMessageText(base.error.messageText, "\n"))
const parsed = ts.parseJsonConfigFileContent(base.config, ts.sys, root)
const options: ts.CompilerOptions = {
  ...parsed.options,
  declaration: true,
  emitDeclarationOnly: true,
  noEmit: false,
  sourceMap: false,
  declarationMap: false,
  noEmitOnError: true,
  composite: false,
  incremental: false,
  rootDir: packagesDir,
  outDir,
  paths,
  skipLibCheck: true
}

fs.rmSync(outDir, { recursive: true, force: true })
const program = ts.createProgram(
  entries.map((entry) => entry.source),
  options
)
const result = program.emit()
const diagnostics = [...ts.getPreEmitDiagnostics(program), ...result.diagnostics]
// (`emitSkipped` is set for the JSON module core imports, which has no declaration to emit.)
if (diagnostics.length > 0) {
  process.stderr.write(
    ts.formatDiagnosticsWithColorAndContext(diagnostics, {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => root,
      getNewLine: () => "\n"
    })
  )
  process.exit(1)
}

/** The emitted declaration of a source file under packages/. */
const emitted = (source: string) => path.join(outDir, path.relative(packagesDir, source)).replace(/\.ts$/, ".d.ts")

const relative = (from: string, to: string) => {
  const specifier = path.relative(path.dirname(from), to).replace(/\.d\.ts$/, ".js")
  return specifier.startsWith(".") ? specifier : `./${specifier}`
}

const specifier = /(["'])(@opencode-ai\/[a-z-]+(?:\/[a-z-]+)?)\1/g
const walk = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? walk(full) : full.endsWith(".d.ts") ? [full] : []
  })
for (const file of walk(outDir)) {
  const text = fs.readFileSync(file, "utf8")
  const rewritten = text.replace(specifier, (match, quote: string, name: string) => {
    const target = paths[name]?.[0]
    if (target === undefined) throw new Error(`${file}: no workspace entry for ${match}`)
    return `${quote}${relative(file, emitted(target))}${quote}`
  })
  if (rewritten !== text) fs.writeFileSync(file, rewritten)
}

for (const entry of entries) {
  const file = path.join(packageDir, "dist", `${entry.name}.d.ts`)
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, `export * from "${relative(file, emitted(entry.source))}"\n`)
}
