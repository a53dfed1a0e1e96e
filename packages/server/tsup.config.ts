import { defineConfig } from "tsup"

/**
 * `opencode` as one ESM file for Node 20. Workspace packages and npm dependencies are bundled;
 * better-sqlite3 stays external because it is a native addon.
 */
export default defineConfig({
  entry: { bin: "src/bin.ts" },
  format: ["esm"],
  platform: "node",
  target: "node20",
  outDir: "dist",
  clean: true,
  sourcemap: true,
  // Everything but the native addon (tsup lets noExternal win over external, so exclude it here).
  noExternal: [/^(?!better-sqlite3(\/|$))/],
  // Bundled CommonJS dependencies call require() for Node built-ins.
  banner: {
    js: `import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);`
  }
})
