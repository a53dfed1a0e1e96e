import * as path from "node:path"
import { build, type Metafile } from "esbuild"
import { describe, expect, it } from "vitest"

/**
 * Import boundaries, checked on real bundles (DESIGN §7.6): the root entry carries no Effect and no
 * workspace package at run time; `/effect` reaches Effect, Schema and Protocol only, and stays
 * browser-safe (no core, server, database or Node built-in).
 */
const bundle = async (
  entry: string
): Promise<{ readonly inputs: ReadonlyArray<string>; readonly imports: ReadonlyArray<string> }> => {
  const result = await build({
    entryPoints: [path.resolve(__dirname, entry)],
    bundle: true,
    write: false,
    metafile: true,
    format: "esm",
    platform: "browser",
    logLevel: "silent"
  })
  const metafile: Metafile = result.metafile
  return {
    inputs: Object.keys(metafile.inputs),
    imports: Object.values(metafile.inputs).flatMap((input) => input.imports.map((i) => i.path))
  }
}

const effectCode =
  /(node_modules\/(effect|@effect)\/|@opencode-ai\/|packages\/(schema|protocol|core|server|sdk-next)\/)/
const outsideEffectBoundary =
  /(@effect\/sql|drizzle|sqlite|@opencode-ai\/(core|server|sdk-next)|^node:|packages\/(core|server|sdk-next)\/)/

describe("@opencode-ai/client (root)", () => {
  it("bundles zero Effect code and no workspace package", async () => {
    const { imports, inputs } = await bundle("../src/index.ts")
    expect(inputs.filter((i) => effectCode.test(i))).toEqual([])
    expect(imports.filter((i) => effectCode.test(i) || i.startsWith("node:"))).toEqual([])
    // The bundle is the client itself: the generated table and the transport.
    expect(inputs.some((i) => i.endsWith("src/generated/client.ts"))).toBe(true)
    expect(inputs.some((i) => i.endsWith("src/transport.ts"))).toBe(true)
  })
})

describe("@opencode-ai/client/effect", () => {
  it("bundles Effect, Schema and Protocol but no core, server, sql, drizzle, sqlite or node: module", async () => {
    const { imports, inputs } = await bundle("../src/effect/index.ts")
    expect(inputs.filter((i) => outsideEffectBoundary.test(i))).toEqual([])
    expect(imports.filter((i) => outsideEffectBoundary.test(i))).toEqual([])
    expect(inputs.some((i) => i.includes("node_modules/effect/"))).toBe(true)
    expect(inputs.some((i) => i.includes("packages/protocol/src/"))).toBe(true)
    expect(inputs.some((i) => i.includes("packages/schema/src/"))).toBe(true)
  })
})
