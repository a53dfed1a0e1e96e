/**
 * Regenerates openapi.json, the SDK Contract IR and both clients from `Api.OpenCodeApi`.
 *
 *   node --import tsx scripts/generate.ts          write every generated file
 *   node --import tsx scripts/generate.ts --check  write nothing; exit 1 naming each stale file
 */
import { Generate } from "./codegen/generate.js"

const args = process.argv.slice(2)
const unknown = args.filter((arg) => arg !== "--check")
if (unknown.length > 0) {
  console.error(`unknown argument(s): ${unknown.join(" ")}\nusage: generate.ts [--check]`)
  process.exit(2)
}
const check = args.includes("--check")
const { stale } = Generate.run({ check })
if (check) {
  if (stale.length > 0) {
    console.error(`Generated files are stale (run \`pnpm generate\`):\n${stale.map((file) => `  ${file}`).join("\n")}`)
    process.exit(1)
  }
  console.log("Generated files are up to date.")
} else {
  console.log(
    stale.length === 0
      ? "Generated files were already up to date."
      : `Updated:\n${stale.map((file) => `  ${file}`).join("\n")}`
  )
}
