/**
 * The Promise client root's size as an application ships it: `@opencode-ai/client` (root entry) with
 * its dependency, bundled by esbuild, minified and gzipped at level 9 (see
 * `packages/client/test/root-size.ts`). A size is deterministic, so
 * `packages/client/test/bundle-size.test.ts` also asserts the budget in CI.
 *
 *   pnpm bench:client-size
 */

import { measureRoot } from "../packages/client/test/root-size.js"

const budget = 4096
const size = await measureRoot()
console.log(`Promise client root: ${size.minified} B minified, ${size.gzip} B min+gzip (budget ${budget} B)`)
for (const input of size.inputs) console.log(`  ${String(input.bytes).padStart(6)}  ${input.path}`)
