import { describe, expect, it } from "vitest"
import { measureRoot } from "./root-size.js"

/**
 * The Promise client root's size budget (issue 18): what an application ships, the root entry with
 * everything it bundles, minified and gzipped at level 9, measured as `bench/client-size.ts` prints it
 * (see `root-size.ts`). A size is deterministic for a given esbuild and zlib, so this is a plain
 * assertion, not a timing.
 */
const budget = 4096

describe("@opencode-ai/client (root) size", () => {
  it(`is at most ${budget} bytes minified and gzipped`, async () => {
    const size = await measureRoot()
    const breakdown = size.inputs.map((i) => `${i.bytes} B ${i.path}`).join(", ")
    expect(
      size.gzip,
      `the Promise client root is ${size.gzip} B min+gzip (${size.minified} B minified: ${breakdown}), over its ${budget} B budget`
    ).toBeLessThanOrEqual(budget)
    // The bundle is the client itself and nothing else: no dependency is bundled.
    expect(size.inputs.filter((i) => i.path.includes("node_modules"))).toEqual([])
  })
})
