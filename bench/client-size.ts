/**
 * The Promise client root's size as an application ships it: `@opencode-ai/client` (root entry) with
 * its dependency, bundled by esbuild, minified and gzipped at level 9 (see
 * `packages/client/test/root-size.ts`). A size is deterministic, so
 * `packages/client/test/bundle-size.test.ts` also asserts the budget in CI.
 *
 *   pnpm bench:client-size
 */

import { measureRoot } from "../packages/client/test/root-size.js"
import { emit, type Figure, isMain } from "./figures.js"

const budget = 4096

/** Measures and prints the sizes; resolves to its figures. */
export const run = async (): Promise<ReadonlyArray<Figure>> => {
  const size = await measureRoot()
  console.log(`Promise client root: ${size.minified} B minified, ${size.gzip} B min+gzip (budget ${budget} B)`)
  for (const input of size.inputs) console.log(`  ${String(input.bytes).padStart(6)}  ${input.path}`)
  return [
    { name: "client-root-gzip", value: size.gzip, unit: "B" },
    { name: "client-root-minified", value: size.minified, unit: "B" }
  ]
}

if (isMain(import.meta.url)) emit(await run())
