/**
 * Builds the inspector into `dist/`: `index.html` (never cached) naming the script and the stylesheet
 * by content hash (served under `/inspector/`, cached for good). Everything the page needs is in `dist/`; the
 * server serves that folder and nothing else (see packages/server/src/inspector.ts).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as esbuild from "esbuild"

const root = path.dirname(fileURLToPath(import.meta.url))
const dist = path.join(root, "dist")
fs.rmSync(dist, { recursive: true, force: true })

const result = await esbuild.build({
  entryPoints: { app: path.join(root, "src/main.ts"), style: path.join(root, "src/style.css") },
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  platform: "browser",
  outdir: path.join(dist, "assets"),
  entryNames: "[name]-[hash]",
  metafile: true,
  legalComments: "none"
})

const outputs = Object.entries(result.metafile.outputs)
const named = (entry: string) => {
  const found = outputs.find(([, output]) => output.entryPoint?.endsWith(entry))
  if (found === undefined) throw new Error(`esbuild wrote no output for ${entry}`)
  return `/inspector/${path.basename(found[0])}`
}
const html = fs
  .readFileSync(path.join(root, "src/index.html"), "utf8")
  .replace("%SCRIPT%", named("src/main.ts"))
  .replace("%STYLE%", named("src/style.css"))
fs.writeFileSync(path.join(dist, "index.html"), html)
console.log(`inspector: wrote ${path.relative(process.cwd(), dist)}`)
