import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterEach, describe, expect, it, vi } from "vitest"
import { CompileCache } from "../src/compile-cache.js"
import { tempDir } from "./harness.js"

/**
 * Start-up of the built binary (`dist/bin.js`, built by the global setup): what a start loads, and
 * that what it leaves for later still works when it is first used. The figures (time, RSS, heap) are
 * in `bench/startup.ts`; nothing here is timed.
 */

// Child processes on a shared machine: generous bounds, never timed assertions.
vi.setConfig({ testTimeout: 180_000 })

const dist = path.resolve(__dirname, "../dist")
const bin = path.join(dist, "bin.js")

const children: Array<ChildProcess> = []
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL")
})

/** The files a start evaluates: `bin.js`, the main chunk it imports, and their static imports, transitively. */
const startFiles = (): ReadonlySet<string> => {
  const seen = new Set<string>()
  const visit = (file: string, withDynamic: boolean) => {
    if (seen.has(file)) return
    seen.add(file)
    const source = fs.readFileSync(path.join(dist, file), "utf8")
    for (const match of source.matchAll(/\bfrom\s*"\.\/([^"]+\.js)"/g)) visit(match[1]!, false)
    // bin.js imports the main chunk as soon as the compile cache is on: part of every start.
    if (withDynamic) for (const match of source.matchAll(/\bimport\("\.\/([^"]+\.js)"\)/g)) visit(match[1]!, false)
  }
  visit("bin.js", true)
  return seen
}

/** The chunk holding `marker` (exactly one), for the positive half of each check. */
const chunkWith = (marker: string): string => {
  const holders = fs
    .readdirSync(dist)
    .filter((file) => file.endsWith(".js"))
    .filter((file) => fs.readFileSync(path.join(dist, file), "utf8").includes(marker))
  expect(holders, marker).toHaveLength(1)
  return holders[0]!
}

/** `opencode serve --port 0` with `env`; resolves with its URL once it listens. */
const serve = (env: Record<string, string>) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--hostname", "127.0.0.1"], {
      cwd: tempDir("startup-project"),
      env,
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
  it("loads none of the modules a server needs only later", () => {
    const loaded = startFiles()
    expect(loaded.size).toBeGreaterThan(1)
    const startSource = [...loaded].map((file) => fs.readFileSync(path.join(dist, file), "utf8")).join("\n")
    // Each of these lives in a chunk of its own, loaded on first use.
    for (const marker of [
      "llhttp_simd", // undici (Core's outgoing HTTP client)
      "notifications/tools/list_changed", // the MCP SDK
      "mixmark-io/domino" // turndown's DOM (webfetch's HTML conversion)
    ]) {
      const chunk = chunkWith(marker)
      expect(loaded.has(chunk), `${marker} is in ${chunk}, which a start loads`).toBe(false)
    }
    // tree-sitter (external) is imported when the first bash command is checked, not at start.
    expect(startSource).toContain('import("web-tree-sitter")')
    expect(startSource).not.toMatch(/from\s*"web-tree-sitter"/)
    // The API reference page's 3 MB script is a file beside the bundle, read when the page is first made.
    expect(startSource).not.toContain("Minified by jsDelivr")
    expect(fs.readFileSync(path.join(dist, "api-reference-script.txt"), "utf8")).toContain("Minified by jsDelivr")
  })

  it("keeps every chunk ASCII, so V8 holds each source as a one-byte string", () => {
    // V8 keeps the source of every loaded module for the process's life; a single non-ASCII
    // character (esbuild escapes them in strings but not in regular expressions) doubles the size
    // of the whole chunk's copy: 1.8 MB more heap for the main chunk.
    for (const file of fs.readdirSync(dist).filter((name) => name.endsWith(".js"))) {
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
    const url = await serve({
      PATH: process.env.PATH ?? "",
      HOME: root,
      TMPDIR: notADirectory,
      XDG_DATA_HOME: path.join(root, "data"),
      XDG_CONFIG_HOME: path.join(root, "config"),
      XDG_CACHE_HOME: path.join(root, "cache"),
      OPENCODE_DISABLE_MODELS_FETCH: "1"
    })
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
})

describe("CompileCache.enable", () => {
  it("reports what it did and never throws, whatever the directory", () => {
    const file = path.join(tempDir("compile-cache"), "file")
    fs.writeFileSync(file, "")
    expect(["failed", "unavailable", "enabled"]).toContain(
      CompileCache.enable({ NODE_COMPILE_CACHE: path.join(file, "x") })
    )
    expect(["disabled", "unavailable"]).toContain(CompileCache.enable({ NODE_DISABLE_COMPILE_CACHE: "1" }))
  })
})
