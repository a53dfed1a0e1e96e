import { defineConfig } from "tsup"

/**
 * Two isolated ESM entries with declarations: `index` (the Promise client, zero Effect at run time)
 * and `effect/index` (the Effect client). The root bundles its one dependency, `eventsource-parser`
 * (a few hundred bytes), so `dist/index.js` imports nothing and loads in a browser as it is, with no
 * import map or bundler. The Effect client's dependencies (`effect`, `@effect/platform`,
 * `@opencode-ai/protocol`, `@opencode-ai/schema`) stay external, so `/effect` shares one copy of each
 * with the application. Output is neutral ESM: the root runs wherever `fetch` exists.
 */
export default defineConfig({
  entry: { index: "src/index.ts", "effect/index": "src/effect/index.ts" },
  format: ["esm"],
  platform: "neutral",
  target: "es2022",
  outDir: "dist",
  clean: true,
  sourcemap: true,
  splitting: false,
  noExternal: ["eventsource-parser"],
  tsconfig: "tsconfig.json",
  dts: { compilerOptions: { composite: false } }
})
