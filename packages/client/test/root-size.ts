import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"
import { build } from "esbuild"

/**
 * What the Promise client root costs an application that ships it: the root entry bundled with all
 * it imports (no dependency since it has its own SSE parser) by esbuild from an entry that uses the whole module
 * (`import * as c …; console.log(c)`, so nothing is tree-shaken away), minified, browser platform,
 * ESM, `es2022` (the published build's target), then gzipped at level 9. Deterministic for a given
 * esbuild and zlib: the bundle-size test asserts it and `bench/client-size.ts` prints it.
 */
export interface RootSize {
  /** Minified bytes. */
  readonly minified: number
  /** Minified, then gzipped at level 9. */
  readonly gzip: number
  /** Minified bytes contributed by each input file, largest first (paths relative to the client package). */
  readonly inputs: ReadonlyArray<{ readonly path: string; readonly bytes: number }>
}

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

export const measureRoot = async (): Promise<RootSize> => {
  const entry = path.join(packageDir, "src/index.ts")
  const result = await build({
    stdin: {
      contents: `import * as client from ${JSON.stringify(entry)}\nconsole.log(client)\n`,
      resolveDir: packageDir,
      sourcefile: "entry.ts",
      loader: "ts"
    },
    bundle: true,
    write: false,
    minify: true,
    metafile: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    logLevel: "silent"
  })
  const [output] = result.outputFiles
  if (output === undefined) throw new Error("esbuild produced no output")
  const inputs = Object.values(result.metafile.outputs).flatMap((o) =>
    Object.entries(o.inputs).map(([input, { bytesInOutput }]) => ({
      path: path.relative(packageDir, path.resolve(packageDir, input)),
      bytes: bytesInOutput
    }))
  )
  return {
    minified: output.contents.length,
    gzip: gzipSync(output.contents, { level: 9 }).length,
    inputs: inputs.filter((i) => i.bytes > 0).sort((a, b) => b.bytes - a.bytes)
  }
}
