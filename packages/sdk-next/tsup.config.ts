import { defineConfig } from "tsup"

/**
 * `@opencode-ai/sdk-next` as one ESM entry for Node 20. The workspace packages it runs (`core`,
 * `server`, `protocol`, `schema` and the client's `/effect` entry) are not published, so they are
 * bundled into `dist/index.js`; every npm package stays external and is a dependency of the
 * published package (`better-sqlite3` is a native addon, `web-tree-sitter` and `tree-sitter-bash`
 * load their `.wasm` files from their own directories, and `effect` must be the application's copy).
 * Declarations come from `scripts/declarations.ts` (see there why not tsup's `dts`).
 */
export default defineConfig({
  entry: { index: "src/index.ts" },
  format: ["esm"],
  platform: "node",
  target: "node20",
  outDir: "dist",
  clean: true,
  sourcemap: true,
  // One file: modules loaded on first use stay in it, not in chunks.
  splitting: false,
  // Every bare import is external except the workspace's own (tsup lets noExternal win).
  external: [/^[^./]/],
  noExternal: [/^@opencode-ai\//],
  dts: false
})
