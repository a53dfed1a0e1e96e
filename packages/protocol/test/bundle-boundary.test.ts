import * as path from "node:path"
import { build } from "esbuild"
import { describe, expect, it } from "vitest"

/**
 * Import boundaries, checked on real bundles: Schema and Protocol must stay browser-safe leaves
 * that load no database, ORM, native module or Node built-in.
 */
const bundleInputs = async (entry: string): Promise<{ inputs: Array<string>; imports: Array<string> }> => {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    format: "esm",
    platform: "browser",
    logLevel: "silent"
  })
  const inputs = Object.keys(result.metafile.inputs)
  const imports = Object.values(result.metafile.inputs).flatMap((input) => input.imports.map((i) => i.path))
  return { inputs, imports }
}

const forbidden =
  /(@effect\/sql|drizzle|sqlite|better-sqlite3|@opencode-ai\/(core|server)|^node:|packages\/(core|server)\/)/

describe.each([
  ["schema", path.resolve(__dirname, "../../schema/src/index.ts")],
  ["protocol", path.resolve(__dirname, "../src/index.ts")]
])("%s bundle", (_name, entry) => {
  it("bundles for the browser with no sql, drizzle, sqlite, core, server or node: modules", async () => {
    const { imports, inputs } = await bundleInputs(entry)
    expect(inputs.filter((i) => forbidden.test(i))).toEqual([])
    expect(imports.filter((i) => forbidden.test(i))).toEqual([])
    expect(inputs.some((i) => i.includes("node_modules/effect/"))).toBe(true)
  })
})
