import * as fs from "node:fs"
import { createRequire } from "node:module"
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
 * Our sources import Effect's packages through their index (`import { Effect, Schema } from "effect"`).
 * In this bundle every module is initialised on first use (esbuild wraps them, as code loaded later
 * imports them), and initialising a package's index initialises every module it re-exports: all of
 * `effect` (fast-check included), all of `@effect/platform` (msgpackr, which then looks for its native
 * addon, the worker and terminal modules), and so on, at every start. This plugin rewrites, in the
 * workspace's sources only, each value import from such an index into imports of the modules that
 * hold those names (`import * as Effect from "effect/Effect"`), read from the index itself: a start
 * initialises only what it uses, and what nothing imports leaves the bundle. Type-only names are
 * dropped (esbuild erases them anyway); a name the index does not re-export from one module stays an
 * import from the index. The rewritten import keeps its line count, so source maps stay exact.
 */
const moduleImports: Plugin = {
  name: "module-imports",
  setup(build) {
    const indexImport = /import\s*\{([^}]*)\}\s*from\s*"(effect|@effect\/[a-z-]+)";?/g
    // package → exported name → the module that exports it, and whether as a namespace.
    const indexes = new Map<string, Promise<Map<string, { module: string; namespace: boolean }>>>()
    const indexOf = (name: string, resolveDir: string) => {
      let index = indexes.get(name)
      if (index === undefined) {
        index = build.resolve(name, { resolveDir, kind: "import-statement" }).then((resolved) => {
          const text = fs.readFileSync(resolved.path, "utf8")
          const names = new Map<string, { module: string; namespace: boolean }>()
          for (const [, exported, file] of text.matchAll(/export \* as (\w+) from "\.\/([\w/]+)\.js"/g))
            names.set(exported!, { module: `${name}/${file}`, namespace: true })
          for (const [, list, file] of text.matchAll(/export \{([^}]*)\} from "\.\/([\w/]+)\.js"/g))
            for (const exported of list!.split(",").map((item) => item.trim()))
              if (/^\w+$/.test(exported)) names.set(exported, { module: `${name}/${file}`, namespace: false })
          return names
        })
        indexes.set(name, index)
      }
      return index
    }
    build.onLoad({ filter: /[\\/]packages[\\/][a-z-]+[\\/]src[\\/].*\.ts$/ }, async (args) => {
      const text = await fs.promises.readFile(args.path, "utf8")
      const matches = [...text.matchAll(indexImport)]
      if (matches.length === 0) return undefined
      const resolveDir = path.dirname(args.path)
      let contents = ""
      let from = 0
      for (const match of matches) {
        const [statement, list, name] = match as unknown as [string, string, string]
        const names = await indexOf(name, resolveDir)
        const imports: Array<string> = []
        const rest: Array<string> = []
        for (const item of list.split(",").map((part) => part.trim())) {
          if (item === "" || item.startsWith("type ")) continue
          const [imported, local = imported] = item.split(/\s+as\s+/) as [string, string?]
          const target = names.get(imported)
          if (target === undefined) rest.push(item)
          else if (target.namespace) imports.push(`import * as ${local} from "${target.module}";`)
          else imports.push(`import { ${item} } from "${target.module}";`)
        }
        if (rest.length > 0) imports.push(`import { ${rest.join(", ")} } from "${name}";`)
        const lines = statement.split("\n").length - 1
        contents += text.slice(from, match.index) + imports.join(" ") + "\n".repeat(lines)
        from = match.index! + statement.length
      }
      return { contents: contents + text.slice(from), loader: "ts" }
    })
  }
}

/**
 * `effect/FastCheck` re-exports fast-check, which `effect/Schema` and `effect/Arbitrary` import for
 * making arbitraries, which a server never does. In the bundle that module becomes one whose exports
 * are getters that load fast-check (its own vendor bundle) on first read, so a start neither
 * compiles nor initialises the library. The names are fast-check's own, read here.
 */
const lazyFastCheck: Plugin = {
  name: "lazy-fast-check",
  setup(build) {
    build.onLoad({ filter: /[\\/]effect[\\/]dist[\\/]esm[\\/]FastCheck\.js$/ }, (args) => {
      const names = Object.keys(createRequire(args.path)("fast-check") as object)
      return {
        loader: "js",
        contents: `let loaded
const load = () => (loaded ??= require("fast-check"))
for (const name of ${JSON.stringify(names)})
  Object.defineProperty(exports, name, { enumerable: true, get: () => load()[name] })
`
      }
    })
  }
}

/**
 * Both `mime` packages in the bundle build their database of some two thousand types when their
 * index module is initialised: version 4's index makes a default instance (Core uses only its `Mime`
 * class, and builds its own database on first lookup), version 3's index is that instance
 * (`@effect/platform-node` asks it for a file response's type). Together about 5 ms of every start.
 * Here version 4's index has no default instance, and version 3's builds its instance on first use.
 */
const lazyMime: Plugin = {
  name: "lazy-mime",
  setup(build) {
    build.onLoad({ filter: /[\\/]mime[\\/]dist[\\/]src[\\/]index\.js$/ }, () => ({
      loader: "js",
      contents: `export { default as Mime } from "./Mime.js"\n`
    }))
    build.onLoad({ filter: /[\\/]node_modules[\\/]mime[\\/]index\.js$/ }, () => ({
      loader: "js",
      contents: `let mime
const instance = () => (mime ??= new (require("./Mime"))(require("./types/standard"), require("./types/other")))
module.exports = {
  getType: (path) => instance().getType(path),
  getExtension: (type) => instance().getExtension(type),
  define: (types, force) => instance().define(types, force)
}
`
    }))
  }
}

/**
 * undici's cookie helpers build, when its index is loaded, a brand check that also accepts Node's own
 * `Headers` class, and reading the global `Headers` loads Node's bundled copy of undici (its fetch) into
 * a process that uses the vendored undici only: about 12 MiB in a bare `node`, and in the server 3–4
 * MiB and 25–35 ms (see BodyLimit, the other reader). The vendored copy's check accepts
 * its own `Headers` only; no code here passes Node's to those helpers. The build fails if the text it
 * replaces is no longer there (an undici upgrade), rather than leaving the cost behind unnoticed.
 */
const undiciCookiesWithoutGlobalHeaders: Plugin = {
  name: "undici-cookies-without-global-headers",
  setup(build) {
    build.onLoad({ filter: /[\\/]undici[\\/]lib[\\/]web[\\/]cookies[\\/]index\.js$/ }, async (args) => {
      const text = await fs.promises.readFile(args.path, "utf8")
      const global = "[Headers, globalThis.Headers].filter(Boolean)"
      if (!text.includes(global)) throw new Error(`${args.path} no longer reads the global Headers as expected`)
      return { contents: text.replace(global, "[Headers]"), loader: "js" }
    })
  }
}

/**
 * The PostgreSQL driver asks, when `pg/lib/stream.js` is loaded, whether it runs in a Cloudflare Worker:
 * with no global `navigator` (Node 20 has none) it constructs a `Response` to see whether the runtime
 * keeps its `cf` option, and reading the global `Response` loads Node's bundled copy of undici (see
 * undiciCookiesWithoutGlobalHeaders for what that costs). This bundle runs on Node only, where the
 * answer is always no: the probe is left out, and the driver uses Node's sockets as it would have. The
 * build fails if the text it replaces is no longer there (a `pg` upgrade).
 */
const pgWithoutCloudflareProbe: Plugin = {
  name: "pg-without-cloudflare-probe",
  setup(build) {
    build.onLoad({ filter: /[\\/]pg[\\/]lib[\\/]stream\.js$/ }, async (args) => {
      const text = await fs.promises.readFile(args.path, "utf8")
      const probe = "if (typeof Response === 'function') {"
      if (!text.includes(probe)) throw new Error(`${args.path} no longer probes for Cloudflare as expected`)
      return { contents: text.replace(probe, "if (false) {"), loader: "js" }
    })
  }
}

/**
 * Packages that only code loaded on first use imports, and that share no module with the rest of the
 * bundle: each is bundled on its own into `dist/vendor/<name>.cjs`, so a start neither reads nor
 * compiles them (the main bundle is one CommonJS file, where esbuild cannot split chunks off).
 *
 * In the main bundle, an import of one of these packages (any subpath) becomes a small module that
 * requires the package's vendor bundle and takes that specifier's exports from it. Once the main
 * bundle is written, each package's vendor bundle is built from the specifiers the main bundle
 * imported, with the same esbuild, resolved from where they were imported. Each specifier's exports
 * are marked as an ES module's, so default and named imports keep their meaning.
 */
const vendorPackages = ["undici", "turndown", "ajv", "@modelcontextprotocol/sdk", "fast-check"]

const packageOf = (specifier: string): string | undefined =>
  vendorPackages.find((name) => specifier === name || specifier.startsWith(`${name}/`))

const vendorFile = (name: string) => `vendor/${name.replace(/^@/, "").replace(/\//g, "-")}.cjs`

const vendorBundles: Plugin = {
  name: "vendor-bundles",
  setup(build) {
    // specifier → the directory it was first imported from, per package.
    const imported = new Map<string, Map<string, string>>()
    build.onResolve({ filter: /^[@a-z]/ }, (args) => {
      const name = packageOf(args.path)
      if (name === undefined || args.namespace === "vendor") return undefined
      const specifiers = imported.get(name) ?? new Map<string, string>()
      imported.set(name, specifiers)
      if (!specifiers.has(args.path)) specifiers.set(args.path, args.resolveDir)
      return { path: args.path, namespace: "vendor", pluginData: name }
    })
    build.onLoad({ filter: /.*/, namespace: "vendor" }, (args) => ({
      loader: "js",
      contents: `module.exports = require(${JSON.stringify(`./${vendorFile(args.pluginData as string)}`)}).modules[${JSON.stringify(args.path)}]`
    }))
    build.onResolve({ filter: /^\.\/vendor\//, namespace: "vendor" }, (args) => ({ path: args.path, external: true }))
    build.onEnd(async (result) => {
      if (result.errors.length > 0) return
      const outDir = build.initialOptions.outdir ?? "dist"
      for (const [name, specifiers] of imported) {
        const entries = [...specifiers]
        await build.esbuild.build({
          stdin: {
            contents: [
              ...entries.map(([specifier], index) => `import * as m${index} from ${JSON.stringify(specifier)}`),
              'const esModule = (namespace) => Object.freeze(Object.defineProperty({ ...namespace }, "__esModule", { value: true }))',
              `export const modules = { ${entries.map(([specifier], index) => `${JSON.stringify(specifier)}: esModule(m${index})`).join(", ")} }`
            ].join("\n"),
            resolveDir: entries[0]![1],
            sourcefile: `vendor-${name}.js`
          },
          outfile: path.join(outDir, vendorFile(name)),
          bundle: true,
          format: "cjs",
          platform: "node",
          target: "node20",
          minifyWhitespace: true,
          minifySyntax: true,
          charset: "ascii",
          legalComments: "external",
          logLevel: "warning",
          plugins: [undiciCookiesWithoutGlobalHeaders]
        })
      }
    })
  }
}

const externals = ["better-sqlite3", "@lydell/node-pty", "web-tree-sitter", "tree-sitter-bash"]

// Both builds write into `dist`; it is emptied once, here, before either starts. Its package.json
// makes `bin.js` CommonJS: a CommonJS entry spares a start Node's ES module loader (about 50 ms and
// 10 MiB of RSS here), and the path users and the README run stays `dist/bin.js`.
fs.rmSync("dist", { recursive: true, force: true })
fs.mkdirSync("dist")
fs.writeFileSync("dist/package.json", `${JSON.stringify({ type: "commonjs" })}\n`)

/** `import.meta.url` in a CommonJS bundle: the file's own URL. */
const importMetaUrl: Options = {
  define: { "import.meta.url": "__import_meta_url" },
  banner: { js: `var __import_meta_url = require("node:url").pathToFileURL(__filename).href;` }
}

/**
 * `opencode` for Node 20: `dist/bin.js`, a small CommonJS entry that runs `dist/main.cjs` through V8's code
 * cache (`CodeCache.run`), and `main.cjs`, everything else as one CommonJS bundle. Workspace packages
 * and npm dependencies are bundled; better-sqlite3 and @lydell/node-pty stay external because they
 * are native addons (node-pty's prebuilt binary comes from its per-platform optional dependency), and
 * so do web-tree-sitter and tree-sitter-bash (bash's parser): they load their .wasm files from their
 * own package directories. The packages in `vendorPackages` are bundles of their own beside it.
 */
export default defineConfig([
  {
    entry: { bin: "src/bin.ts" },
    format: ["cjs"],
    outExtension: () => ({ js: ".js" }),
    platform: "node",
    target: "node20",
    outDir: "dist",
    sourcemap: true,
    ...importMetaUrl
  },
  {
    entry: { main: "src/main.ts" },
    format: ["cjs"],
    platform: "node",
    target: "node20",
    outDir: "dist",
    sourcemap: true,
    // One file, so that V8's code cache covers all of it: esbuild splits chunks only for ES modules.
    // Modules loaded on first use (the API reference page, the cluster, PostgreSQL, the MCP client)
    // are in it, but evaluated only when first required; what they alone import is in `vendor/`.
    splitting: false,
    esbuildPlugins: [
      moduleImports,
      lazyFastCheck,
      lazyMime,
      apiReferenceScript,
      serverWithoutUndici,
      pgWithoutCloudflareProbe,
      vendorBundles
    ],
    // V8 keeps the source text of the bundle for as long as the process runs (lazy compilation and
    // `toString` read it again): whitespace and syntax minification make that text about a third
    // smaller, and ASCII output (non-ASCII characters escaped) keeps it a one-byte string, where a
    // single non-ASCII character would store the whole bundle as two bytes a character (esbuild does
    // not escape them in regular expressions: write those as `\u` escapes in the source). Identifiers
    // are not minified: names in stack traces, `Function.name` and class names stay.
    minifyWhitespace: true,
    minifySyntax: true,
    esbuildOptions: (options) => {
      options.charset = "ascii"
      // Legal comments (bundled packages' licence headers, which may hold non-ASCII names) go to
      // `<file>.LEGAL.txt` beside the bundle, so the bundle has no non-ASCII character.
      options.legalComments = "external"
      // `import()` becomes `require()`: the bundle runs as a script, where `import()` has no referrer.
      options.supported = { ...options.supported, "dynamic-import": false }
    },
    // Bash's parser and the inspector's files are found from the bundle's URL.
    ...importMetaUrl,
    // Everything but the externals (tsup lets noExternal win over external, so exclude them here).
    noExternal: [new RegExp(`^(?!(${externals.join("|").replace(/\//g, "\\/")})(\\/|$))`)]
  }
])
