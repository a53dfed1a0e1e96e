import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { defineConfig, type Options } from "tsup"

type Plugin = NonNullable<Options["esbuildPlugins"]>[number]

/**
 * `@effect/platform-node`'s HTTP server module imports its HTTP client module for a test layer that
 * only uses the `node:http` client; that module also re-exports undici, evaluated when loaded. In the
 * bundle the server module gets the `node:http` client's module directly (the same two functions), so
 * undici is only loaded by the first outgoing request (Core's `LazyHttpClient`).
 */
const serverWithoutUndici: Plugin = {
  name: "server-without-undici",
  setup(build) {
    build.onResolve({ filter: /^\.\.\/NodeHttpClient\.js$/ }, (args) =>
      /[\\/]@effect[\\/]platform-node[\\/]dist[\\/]esm[\\/]internal[\\/]httpServer\.js$/.test(args.importer)
        ? { path: path.join(path.dirname(args.importer), "httpClient.js") }
        : undefined
    )
  }
}

/**
 * The platform's Scalar page inlines a 3 MB script that its module holds as one string constant.
 * esbuild places a module by which entries can reach it (here through `@effect/platform`'s index),
 * not by which use it, so that constant would sit in a chunk every start loads. This plugin writes
 * the script beside the bundle (`dist/api-reference-script.txt`) and gives the platform a module
 * whose `javascript` reads that file when the page is first made (the page interpolates it into its
 * HTML, which calls `toString`). Tests that run the sources use the platform's module as it is.
 */
const apiReferenceScript: Plugin = {
  name: "api-reference-script",
  setup(build) {
    build.onLoad(
      { filter: /[\\/]@effect[\\/]platform[\\/]dist[\\/]esm[\\/]internal[\\/]httpApiScalar\.js$/ },
      async (args) => {
        const { javascript } = (await import(pathToFileURL(args.path).href)) as { javascript: string }
        const outDir = build.initialOptions.outdir ?? "dist"
        fs.mkdirSync(outDir, { recursive: true })
        fs.writeFileSync(path.join(outDir, "api-reference-script.txt"), javascript)
        return {
          loader: "js",
          contents: `import { readFileSync } from "node:fs"
let text
export const javascript = { toString: () => (text ??= readFileSync(new URL("./api-reference-script.txt", import.meta.url), "utf8")) }
`
        }
      }
    )
  }
}

/**
 * `opencode` as ESM for Node 20: `dist/bin.js` and the chunks it loads. Workspace packages and npm dependencies are bundled;
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
  // `bin.js` is a small entry that turns on V8's compile cache and then imports the main chunk;
  // modules loaded on first use (the API reference page, Ajv, the MCP SDK, undici, tree-sitter,
  // turndown) are chunks of their own beside it, so a start neither reads nor compiles them.
  splitting: true,
  esbuildPlugins: [apiReferenceScript, serverWithoutUndici],
  // V8 keeps the source text of every module it loads for as long as the process runs (lazy
  // compilation and `toString` read it again): whitespace and syntax minification make that text
  // about a third smaller, and ASCII output (non-ASCII characters escaped) keeps each chunk a one-byte
  // string, where a single non-ASCII character would store the whole chunk as two bytes a character
  // (esbuild does not escape them in regular expressions: write those as `\u` escapes in the source).
  // Identifiers are not minified: names in stack traces, `Function.name` and class names stay.
  minifyWhitespace: true,
  minifySyntax: true,
  // Legal comments (bundled packages' licence headers, which may hold non-ASCII names) go to
  // `<chunk>.LEGAL.txt` files beside the chunks, so no chunk has a non-ASCII character.
  esbuildOptions: (options) => {
    options.charset = "ascii"
    options.legalComments = "external"
  },
  // Everything but those four (tsup lets noExternal win over external, so exclude it here).
  noExternal: [/^(?!(better-sqlite3|@lydell\/node-pty|web-tree-sitter|tree-sitter-bash)(\/|$))/],
  // Bundled CommonJS dependencies call require() for Node built-ins.
  banner: {
    js: `import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);`
  }
})
