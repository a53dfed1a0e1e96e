import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { afterEach, describe, expect, it, vi } from "vitest"
import { configHome, tempDir } from "./harness.js"

/**
 * Start-up of the built binary (`dist/bin.js`, built by the global setup): what a start loads, that
 * what it leaves for later still works when it is first used, and V8's code cache it runs through.
 * The figures (time, RSS, heap) are in `bench/startup.ts`; nothing here is timed.
 */

// Child processes on a shared machine: generous bounds, never timed assertions.
vi.setConfig({ testTimeout: 180_000 })

const dist = path.resolve(__dirname, "../dist")
const bin = path.join(dist, "bin.js")

const children: Array<ChildProcess> = []
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL")
})

/** The bundle's JavaScript files: `bin.js`, `main.cjs` and the vendor bundles. */
const bundleFiles = (): ReadonlyArray<string> =>
  fs
    .readdirSync(dist, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".js") || file.endsWith(".cjs"))

/**
 * `opencode serve --port 0` with its home, XDG directories and cwd under `root` (the model database
 * refresh off), and `env` over those; resolves with its URL once it listens.
 */
const serve = (root: string, env: Record<string, string> = {}, nodeFlags: ReadonlyArray<string> = []) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags, bin, "serve", "--port", "0", "--hostname", "127.0.0.1"], {
      cwd: tempDir("startup-project"),
      env: {
        PATH: process.env.PATH ?? "",
        HOME: root,
        XDG_DATA_HOME: path.join(root, "data"),
        XDG_CONFIG_HOME: path.join(root, "config"),
        XDG_CACHE_HOME: path.join(root, "cache"),
        OPENCODE_DISABLE_MODELS_FETCH: "1",
        ...env
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    children.push(child)
    let out = ""
    let err = ""
    child.stdout!.on("data", (chunk) => {
      out += chunk
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (match) resolve(match[1]!)
    })
    child.stderr!.on("data", (chunk) => (err += chunk))
    child.on("exit", (code) => reject(new Error(`serve exited with ${code}: ${out}\n${err}`)))
  })

describe("start-up of the built binary", () => {
  it("loads none of the modules a server needs only later", async () => {
    // Each of these is in a vendor bundle, which the main bundle requires on first use.
    const main = fs.readFileSync(path.join(dist, "main.cjs"), "utf8")
    for (const [marker, vendor] of [
      ["llhttp_simd", "undici.cjs"], // Core's outgoing HTTP client
      ["notifications/tools/list_changed", "modelcontextprotocol-sdk.cjs"], // the MCP SDK
      ["mixmark-io/domino", "turndown.cjs"], // turndown's DOM (webfetch's HTML conversion)
      ["$dynamicAnchor", "ajv.cjs"], // Ajv's 2020-12 meta-schema (JSON Schema validation)
      ["Property failed after", "fast-check.cjs"] // fast-check, behind effect's Arbitrary, never used by a server
    ] as const) {
      expect(main, marker).not.toContain(marker)
      expect(fs.readFileSync(path.join(dist, "vendor", vendor), "utf8"), marker).toContain(marker)
    }
    // Of Effect's packages, the bundle holds the modules its code imports, not everything their
    // indexes re-export (which a start would initialise): neither of these is imported by anything.
    const sources = (JSON.parse(fs.readFileSync(path.join(dist, "main.cjs.map"), "utf8")) as { sources: Array<string> })
      .sources
    expect(sources.some((source) => source.endsWith("/@effect/platform/src/HttpApiBuilder.ts"))).toBe(true)
    for (const unused of ["/effect/src/TReentrantLock.ts", "/@effect/platform/src/WorkerRunner.ts"])
      expect(sources.filter((source) => source.endsWith(unused))).toEqual([])
    // The API reference page's 3 MB script is a file beside the bundle, read when the page is first made.
    expect(main).not.toContain("Minified by jsDelivr")
    expect(fs.readFileSync(path.join(dist, "api-reference-script.txt"), "utf8")).toContain("Minified by jsDelivr")

    // What a listening server has required: the main bundle, and neither a vendor bundle nor
    // tree-sitter (imported when the first bash command is checked) nor node-pty (the first PTY).
    const root = tempDir("startup-loaded")
    const report = path.join(root, "required.json")
    const probe = path.join(root, "probe.cjs")
    fs.writeFileSync(
      probe,
      `process.on("SIGUSR2", () => require("node:fs").writeFileSync(${JSON.stringify(report)}, JSON.stringify(Object.keys(require.cache))))\n`
    )
    const url = await serve(root, {}, ["--require", probe])
    expect((await fetch(`${url}/api/health`)).status).toBe(200)
    children.at(-1)!.kill("SIGUSR2")
    await vi.waitFor(() => expect(fs.existsSync(report)).toBe(true), { timeout: 30_000, interval: 50 })
    const required = JSON.parse(fs.readFileSync(report, "utf8")) as ReadonlyArray<string>
    expect(required).toContain(path.join(dist, "bin.js"))
    expect(required.filter((file) => file.startsWith(path.join(dist, "vendor")))).toEqual([])
    expect(required.filter((file) => /web-tree-sitter|node-pty/.test(file))).toEqual([])
  })

  it("keeps every bundle ASCII, so V8 holds each source as a one-byte string", () => {
    // V8 keeps the source of every loaded module for the process's life; a single non-ASCII
    // character (esbuild escapes them in strings but not in regular expressions) doubles the size
    // of the whole bundle's copy: about 4 MB more heap for the main bundle.
    expect(bundleFiles()).toEqual(expect.arrayContaining(["bin.js", "main.cjs", path.join("vendor", "undici.cjs")]))
    for (const file of bundleFiles()) {
      const bytes = fs.readFileSync(path.join(dist, file))
      const at = bytes.findIndex((byte) => byte > 0x7f)
      const around = bytes.subarray(Math.max(0, at - 40), at + 10).toString("latin1")
      expect(at, `${file}: non-ASCII at ${at}: ${JSON.stringify(around)}`).toBe(-1)
    }
  })

  it("starts with an unusable compile cache directory, and serves the API reference page on first use", async () => {
    // TMPDIR is a regular file: the compile cache directory under it cannot be created.
    const notADirectory = path.join(tempDir("startup-tmp"), "file")
    fs.writeFileSync(notADirectory, "")
    const root = tempDir("startup")
    const url = await serve(root, { TMPDIR: notADirectory })
    const health = await fetch(`${url}/api/health`)
    expect(health.status).toBe(200)
    expect(await health.json()).toMatchObject({ healthy: true })

    const [first, second] = await Promise.all([fetch(`${url}/doc/ui`), fetch(`${url}/doc/ui`)])
    for (const response of [first, second]) {
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toContain("text/html")
    }
    const page = await first.text()
    expect(await second.text()).toBe(page)
    expect(page).toContain('id="api-reference"')
    expect(page).toContain("Minified by jsDelivr")
    expect(page.length).toBeGreaterThan(1_000_000)
  })
  it("vendor bundles give each specifier's exports as the main bundle imports them, default included", () => {
    const vendor = (file: string) =>
      createRequire(bin)(path.join(dist, "vendor", file)).modules as Record<string, Record<string, any>>
    const { undici } = vendor("undici.cjs")
    expect(undici).toMatchObject({ __esModule: true, Agent: expect.any(Function), request: expect.any(Function) })
    const Turndown = vendor("turndown.cjs").turndown!.default
    expect(new Turndown({ headingStyle: "atx" }).turndown("<h1>Title</h1><p>a <em>b</em></p>")).toBe("# Title\n\na _b_")
    const ajv = vendor("ajv.cjs")
    const schema = { type: "object", properties: { n: { type: "number" } }, required: ["n"] }
    for (const Ajv of [ajv.ajv!.Ajv, ajv["ajv/dist/2020.js"]!.Ajv2020]) {
      const validate = new Ajv().compile(schema)
      expect([validate({ n: 1 }), validate({ n: "1" })]).toEqual([true, false])
    }
    const fc = vendor("fast-check.cjs")["fast-check"]!
    expect(fc.sample(fc.integer({ min: 1, max: 3 }), 20).every((n: number) => n >= 1 && n <= 3)).toBe(true)
  })

  it("connects an MCP server through the SDK's vendor bundle, and lists its tools", async () => {
    const root = tempDir("startup-mcp")
    const toolServer = path.resolve(__dirname, "../../core/test/fixtures/mcp/tool-server.mjs")
    const url = await serve(root, {
      XDG_CONFIG_HOME: configHome({ mcp: { docs: { type: "local", command: [process.execPath, toolServer] } } })
    })
    await vi.waitFor(
      async () => {
        const body = (await (await fetch(`${url}/api/mcp`)).json()) as { data: ReadonlyArray<unknown> }
        expect(body.data).toEqual([expect.objectContaining({ name: "docs", status: "connected" })])
      },
      { timeout: 60_000, interval: 100 }
    )
    const body = (await (await fetch(`${url}/api/mcp`)).json()) as { data: ReadonlyArray<{ tools: Array<string> }> }
    expect(body.data[0]!.tools).toContain("docs_echo")
  })
})

describe("CodeCache.run", () => {
  /** A CommonJS bundle in a fresh directory, exporting `value` and whether it ran with CommonJS's free variables. */
  const bundle = (value: number) => {
    const file = path.join(tempDir("code-cache-bundle"), "main.cjs")
    fs.writeFileSync(file, source(value))
    return file
  }
  const source = (value: number) =>
    `module.exports = { value: ${value}, wrapped: typeof require === "function" && __filename.endsWith("main.cjs"), doubled: [1, 2].map((n) => n * 2) }\n`
  const entries = (directory: string) => (fs.existsSync(directory) ? fs.readdirSync(directory) : [])

  /**
   * `CodeCache.run(file, env)` and then `save()` twice, in a process of its own: within one process V8
   * finds a script it compiled before in its own memory, and never looks at the cached data.
   */
  const runAndSave = (file: string, env: Record<string, string>) => {
    const script = `import { CodeCache } from ${JSON.stringify(path.resolve(__dirname, "../src/code-cache.ts"))}
const loaded = CodeCache.run(${JSON.stringify(file)}, ${JSON.stringify(env)})
console.log(JSON.stringify({ status: loaded.status, exports: loaded.exports, saved: [loaded.save(), loaded.save()] }))`
    const output = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: path.resolve(__dirname, ".."),
      encoding: "utf8"
    })
    return JSON.parse(output) as { status: string; exports: unknown; saved: [boolean, boolean] }
  }

  it("runs the bundle, saves its bytecode once, and uses it on the next run", () => {
    const file = bundle(1)
    const env = { NODE_COMPILE_CACHE: path.join(tempDir("code-cache"), "cache") }
    expect(runAndSave(file, env)).toEqual({
      status: "missing",
      exports: { value: 1, wrapped: true, doubled: [2, 4] },
      saved: [true, false]
    })
    expect(entries(env.NODE_COMPILE_CACHE)).toHaveLength(1)
    expect(runAndSave(file, env)).toEqual({
      status: "used",
      exports: { value: 1, wrapped: true, doubled: [2, 4] },
      saved: [false, false]
    })
  })

  it("decodes the bundle as UTF-8 and keeps its line numbers", () => {
    const file = path.join(tempDir("code-cache-bundle"), "main.cjs")
    fs.writeFileSync(
      file,
      [
        `const text = "naïve – ✓ 𝄞"`,
        "",
        `const line = () => Number(/main\\.cjs:(\\d+)/.exec(new Error().stack)[1])`,
        "module.exports = { text, line: line() }",
        ""
      ].join("\n")
    )
    const env = { NODE_COMPILE_CACHE: path.join(tempDir("code-cache"), "cache") }
    expect(runAndSave(file, env)).toMatchObject({ status: "missing", exports: { text: "naïve – ✓ 𝄞", line: 3 } })
    expect(runAndSave(file, env)).toMatchObject({ status: "used", exports: { text: "naïve – ✓ 𝄞", line: 3 } })
  })

  it("keys entries by content: a changed bundle of the same length gets its own entry, and replaces the old one", () => {
    const file = bundle(1)
    const env = { NODE_COMPILE_CACHE: path.join(tempDir("code-cache"), "cache") }
    expect(runAndSave(file, env).saved).toEqual([true, false])
    const [old] = entries(env.NODE_COMPILE_CACHE)

    // Same length, other code: V8's own check of cached data would accept it.
    fs.writeFileSync(file, source(2))
    expect(runAndSave(file, env)).toMatchObject({ status: "missing", exports: { value: 2 }, saved: [true, false] })
    expect(entries(env.NODE_COMPILE_CACHE)).toHaveLength(1)
    expect(entries(env.NODE_COMPILE_CACHE)).not.toContain(old)
    expect(runAndSave(file, env)).toMatchObject({ status: "used", exports: { value: 2 } })
  })

  it("compiles from the source when the entry is corrupt, and writes it again", () => {
    const file = bundle(3)
    const env = { NODE_COMPILE_CACHE: path.join(tempDir("code-cache"), "cache") }
    expect(runAndSave(file, env).saved).toEqual([true, false])
    const [entry] = entries(env.NODE_COMPILE_CACHE)
    fs.writeFileSync(path.join(env.NODE_COMPILE_CACHE, entry!), "not bytecode")

    expect(runAndSave(file, env)).toMatchObject({ status: "rejected", exports: { value: 3 }, saved: [true, false] })
    expect(runAndSave(file, env)).toMatchObject({ status: "used", exports: { value: 3 } })
  })

  it("runs the bundle whatever the cache directory, and is off with NODE_DISABLE_COMPILE_CACHE", () => {
    const file = bundle(4)
    const notADirectory = path.join(tempDir("code-cache"), "file")
    fs.writeFileSync(notADirectory, "")
    expect(runAndSave(file, { NODE_COMPILE_CACHE: path.join(notADirectory, "cache") })).toMatchObject({
      status: "missing",
      exports: { value: 4 },
      saved: [false, false]
    })
    expect(fs.readdirSync(path.dirname(notADirectory))).toEqual(["file"])

    const directory = path.join(tempDir("code-cache"), "cache")
    expect(runAndSave(file, { NODE_COMPILE_CACHE: directory, NODE_DISABLE_COMPILE_CACHE: "1" })).toMatchObject({
      status: "disabled",
      exports: { value: 4 },
      saved: [false, false]
    })
    expect(entries(directory)).toEqual([])
  })

  it("is written by a served start, under NODE_COMPILE_CACHE", async () => {
    const root = tempDir("startup-cache")
    const directory = path.join(root, "compile-cache")
    const url = await serve(root, { NODE_COMPILE_CACHE: directory })
    expect((await fetch(`${url}/api/health`)).status).toBe(200)
    // Saved two seconds into the start.
    await vi.waitFor(() => expect(entries(directory).filter((name) => name.endsWith(".v8"))).toHaveLength(1), {
      timeout: 60_000,
      interval: 100
    })
    expect(entries(directory)[0]).toMatch(/^main\.cjs-[0-9a-f]{8}-[0-9a-f]{32}\.v8$/)
  })
})
