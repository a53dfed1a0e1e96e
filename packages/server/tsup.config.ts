import { defineConfig } from "tsup"

/**
 * `opencode` as one ESM file for Node 20. Workspace packages and npm dependencies are bundled;
 * better-sqlite3 and @lydell/node-pty stay external because they are native addons (node-pty's
 * prebuilt binary comes from its per-platform optional dependency), and so do web-tree-sitter and
 * tree-sitter-bash (bash's parser): they load their .wasm files from their own package directories.
 */
export default defineConfig({
  entry: { bin: "src/bin.ts" },
  format: ["esm"],
  platform: "node",
  target: "node20",
  outDir: "dist",
  clean: true,
  sourcemap: true,
  // One file: modules loaded on first use (Ajv, for Structured Output schemas) stay in it, not in chunks.
  splitting: false,
  // Everything but those four (tsup lets noExternal win over external, so exclude it here).
  noExternal: [/^(?!(better-sqlite3|@lydell\/node-pty|web-tree-sitter|tree-sitter-bash)(\/|$))/],
  // Bundled CommonJS dependencies call require() for Node built-ins.
  banner: {
    js: `import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);`
  }
})
