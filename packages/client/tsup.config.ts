import { defineConfig } from "tsup"

/**
 * Two isolated ESM entries: `index` (the Promise client, zero Effect at run time) and `effect/index`
 * (the Effect client). The root has no dependency (its SSE parser is its own, `src/sse.ts`: see the
 * size budget in `test/bundle-size.test.ts`), so `dist/index.js` imports nothing and loads in a
 * browser as it is, with no import map or bundler. `/effect` bundles the workspace packages it uses (`@opencode-ai/protocol` and
 * `@opencode-ai/schema`: they are not published), while its npm dependencies (`effect`,
 * `@effect/platform`, `@effect/experimental`) stay external, so it shares one copy of each with the
 * application. Output is neutral ESM: the root runs wherever `fetch` exists. Declarations come from
 * `scripts/declarations.ts` (see there why not tsup's `dts`).
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
  noExternal: [/^@opencode-ai\//],
  tsconfig: "tsconfig.json",
  dts: false
})
