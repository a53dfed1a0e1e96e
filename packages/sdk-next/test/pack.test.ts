import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire, isBuiltin } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

/*
 * The published packages, as a stranger gets them: `@opencode-ai/client` and `@opencode-ai/sdk-next`
 * are built and packed (`pnpm pack`: it applies `publishConfig` and turns `catalog:` into versions),
 * then a fresh npm project in a temporary directory outside the workspace installs the two tarballs
 * from the npm registry (its cache first) and runs and type-checks code against them:
 * - the Promise client against a real `opencode serve` process started from the workspace build;
 * - the Effect client's entry, loaded from the tarball;
 * - `OpenCode.embedded` creating a session in its own database.
 *
 * No install script runs (`--ignore-scripts`): better-sqlite3's would download a prebuilt binary from
 * GitHub. Its native addon is copied from the workspace's build of the same version for the same Node,
 * so nothing beyond the npm registry is reached. Slow (a build, a pack and an install): it lives in
 * this one file.
 */

const run = promisify(execFile)
const workspace = path.resolve(__dirname, "../../..")
const pnpm = ["-y", "pnpm@12.4.2"]
const fresh = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-fresh-project-"))
const tarballs = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-tarballs-"))
const running: Array<ChildProcess> = []

const exec = (command: string, args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) =>
  run(command, [...args], { cwd, env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 })

/** Runs `node <file>` in the fresh project; resolves with its stdout parsed as JSON. */
const node = async (file: string, env: Record<string, string> = {}) => {
  const { stdout } = await exec(process.execPath, [file], fresh, env)
  return JSON.parse(stdout.trim().split("\n").at(-1)!)
}

/** `opencode serve` from the workspace build, on an ephemeral loopback port; resolves with its URL. */
const serve = () =>
  new Promise<string>((resolve, reject) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-pack-home-"))
    const child = spawn(
      process.execPath,
      [path.join(workspace, "packages/server/dist/bin.js"), "serve", "--port", "0", "--hostname", "127.0.0.1"],
      {
        cwd: fs.mkdtempSync(path.join(os.tmpdir(), "opencode-pack-instance-")),
        env: {
          PATH: process.env.PATH ?? "",
          HOME: home,
          XDG_DATA_HOME: path.join(home, "data"),
          XDG_CONFIG_HOME: path.join(home, "config"),
          XDG_CACHE_HOME: path.join(home, "cache"),
          OPENCODE_DISABLE_MODELS_FETCH: "1"
        },
        stdio: ["ignore", "pipe", "pipe"]
      }
    )
    running.push(child)
    let out = ""
    child.stdout!.on("data", (chunk) => {
      out += chunk
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (match) resolve(match[1]!)
    })
    child.on("exit", (code) => reject(new Error(`serve exited with ${code}: ${out}`)))
  })

/** The newest modification time among `files` and everything under the directories among them. */
const newest = (files: ReadonlyArray<string>): number =>
  Math.max(
    0,
    ...files
      .filter((file) => fs.existsSync(file))
      .map((file) =>
        fs.statSync(file).isDirectory()
          ? newest(fs.readdirSync(file).map((entry) => path.join(file, entry)))
          : fs.statSync(file).mtimeMs
      )
  )

/**
 * Builds a package unless its outputs are newer than every input of the build: the sources and
 * manifests of all workspace packages, the build configs and the declarations script. (setup.sh has
 * usually just built them.)
 */
const build = async (pkg: string, outputs: ReadonlyArray<string>) => {
  const packages = fs.readdirSync(path.join(workspace, "packages")).map((dir) => path.join(workspace, "packages", dir))
  const inputs = [
    ...packages.flatMap((dir) => ["src", "package.json", "tsup.config.ts"].map((file) => path.join(dir, file))),
    path.join(workspace, "scripts/declarations.ts"),
    path.join(workspace, "pnpm-lock.yaml")
  ]
  const built = outputs.map((file) => path.join(workspace, "packages", pkg, file))
  if (
    built.every((file) => fs.existsSync(file)) &&
    Math.min(...built.map((f) => fs.statSync(f).mtimeMs)) > newest(inputs)
  )
    return
  await exec("npx", [...pnpm, "run", "build"], path.join(workspace, "packages", pkg))
}

beforeAll(async () => {
  // Build what is packed and what serves, from the current sources.
  await Promise.all([
    build("client", ["dist/index.js", "dist/index.d.ts", "dist/effect/index.js", "dist/effect/index.d.ts"]),
    build("sdk-next", ["dist/index.js", "dist/index.d.ts"]),
    build("server", ["dist/bin.js"])
  ])
  for (const pkg of ["client", "sdk-next"]) {
    await exec("npx", [...pnpm, "pack", "--pack-destination", tarballs], path.join(workspace, "packages", pkg))
  }
  fs.writeFileSync(
    path.join(fresh, "package.json"),
    JSON.stringify({ name: "fresh-project", private: true, type: "module" })
  )
  await exec(
    "npm",
    [
      "install",
      "--ignore-scripts",
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      ...fs.readdirSync(tarballs).map((file) => path.join(tarballs, file))
    ],
    fresh
  )
  // better-sqlite3's native addon, from the workspace's build of the same version.
  const fromWorkspace = createRequire(path.join(workspace, "packages/core/package.json"))
  const addon = path.join(path.dirname(fromWorkspace.resolve("better-sqlite3/package.json")), "build/Release")
  const installed = path.join(fresh, "node_modules/better-sqlite3")
  expect(JSON.parse(fs.readFileSync(path.join(installed, "package.json"), "utf8")).version).toBe(
    JSON.parse(fs.readFileSync(path.join(addon, "../../package.json"), "utf8")).version
  )
  fs.mkdirSync(path.join(installed, "build/Release"), { recursive: true })
  fs.copyFileSync(path.join(addon, "better_sqlite3.node"), path.join(installed, "build/Release/better_sqlite3.node"))
}, 900_000)

afterAll(() => {
  for (const child of running.splice(0)) child.kill("SIGKILL")
})

describe("the packed client and sdk-next in a fresh project outside the workspace", () => {
  it("install with no workspace package among their dependencies; their code imports only what they declare", () => {
    for (const name of ["client", "sdk-next"]) {
      const dir = path.join(fresh, "node_modules/@opencode-ai", name)
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"))
      const declared = Object.keys(manifest.dependencies ?? {})
      expect(declared.filter((dep) => dep.startsWith("@opencode-ai/"))).toEqual([])
      // Every bare import of the built code (static and dynamic) is a Node built-in or a declared dependency.
      const code = fs
        .readdirSync(path.join(dir, "dist"), { recursive: true, encoding: "utf8" })
        .filter((file) => file.endsWith(".js"))
        .map((file) => fs.readFileSync(path.join(dir, "dist", file), "utf8"))
        .join("\n")
      const specifiers = [
        ...code.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s*["']([^"'.][^"']*)["']/gm),
        ...code.matchAll(/^\s*import\s*["']([^"'.][^"']*)["']/gm),
        ...code.matchAll(/\bimport\(\s*["']([^"'.][^"']*)["']\s*\)/g)
      ].map((match) => match[1]!)
      expect(specifiers.length).toBeGreaterThan(0)
      const packageOf = (specifier: string) =>
        specifier
          .split("/")
          .slice(0, specifier.startsWith("@") ? 2 : 1)
          .join("/")
      const undeclared = specifiers
        .filter((s) => !isBuiltin(s))
        .map(packageOf)
        .filter((pkg) => !declared.includes(pkg))
      expect([...new Set(undeclared)]).toEqual([])
    }
  })

  it("the Promise client talks to a real server; the Effect client entry loads", async () => {
    const url = await serve()
    fs.writeFileSync(
      path.join(fresh, "promise-client.mjs"),
      `import { createOpencodeClient } from "@opencode-ai/client"
import { OpencodeClient } from "@opencode-ai/client/effect"
const client = createOpencodeClient({ baseUrl: process.env.OPENCODE_URL })
const health = await client.health.get()
const created = await client.sessions.create({})
const fetched = await client.sessions.get({ sessionID: created.id })
const page = await client.sessions.list({ limit: 10 })
console.log(JSON.stringify({ health, created: created.id, fetched: fetched.id, listed: page.items.map((s) => s.id), effect: typeof OpencodeClient.make }))
`
    )
    const result = await node("promise-client.mjs", { OPENCODE_URL: url })
    expect(result.health).toMatchObject({ healthy: true })
    expect(result.created).toMatch(/^ses_/)
    expect(result.fetched).toBe(result.created)
    expect(result.listed).toEqual([result.created])
    expect(result.effect).toBe("function")
  }, 300_000)

  it("OpenCode.embedded creates a session in its own database; OpenCode.layer takes a config value and a Host Tool", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-pack-embedded-"))
    fs.writeFileSync(
      path.join(fresh, "embedded.mjs"),
      `import { HostTool, OpenCode } from "@opencode-ai/sdk-next"
import { Effect, Schema } from "effect"
const dir = process.env.EMBEDDED_DIR
const echo = HostTool.make({
  name: "echo",
  description: "Echoes",
  parameters: Schema.Struct({ say: Schema.String }),
  execute: ({ say }) => Effect.succeed(say)
})
const program = Effect.scoped(Effect.gen(function* () {
  const opencode = yield* OpenCode.embedded({ databaseFile: dir + "/opencode.db", directory: dir, configDir: dir + "/config", env: {} })
  const session = yield* opencode.sessions.create()
  const page = yield* opencode.sessions.list({})
  return { id: session.id, directory: session.location.directory, listed: page.items.map((s) => s.id) }
}))
// The same host as a Layer, with a typed config document and a Host Tool.
const agents = Effect.gen(function* () {
  const opencode = yield* OpenCode.Service
  return (yield* opencode.agents.list()).data.map((agent) => agent.id)
}).pipe(
  Effect.provide(
    OpenCode.layer({
      databaseFile: dir + "/layer.db",
      directory: dir,
      env: {},
      config: { agent: { reviewer: { mode: "primary", description: "Reviews" } } },
      tools: [echo]
    })
  )
)
console.log(JSON.stringify({ ...(await Effect.runPromise(program)), agents: await Effect.runPromise(agents) }))
`
    )
    const result = await node("embedded.mjs", { EMBEDDED_DIR: dir })
    expect(result.id).toMatch(/^ses_/)
    expect(result.directory).toBe(dir)
    expect(result.listed).toEqual([result.id])
    expect(fs.existsSync(path.join(dir, "opencode.db"))).toBe(true)
    expect(result.agents).toContain("reviewer")
  }, 300_000)

  it("type-checks against the packed declarations (nodenext resolution, no workspace path)", async () => {
    fs.writeFileSync(
      path.join(fresh, "check.ts"),
      `import { createOpencodeClient } from "@opencode-ai/client"
import { OpencodeClient } from "@opencode-ai/client/effect"
import { OpenCode, Session } from "@opencode-ai/sdk-next"
import { Effect } from "effect"

export const promise = (baseUrl: string): Promise<string> =>
  createOpencodeClient({ baseUrl }).sessions.create({}).then((session) => session.id)
export const effect = OpencodeClient.make({ baseUrl: "http://127.0.0.1:1" })
export const embedded: Effect.Effect<Session.SessionV2Info, unknown, never> = Effect.scoped(
  Effect.flatMap(OpenCode.embedded({ databaseFile: "x.db" }), (opencode) => opencode.sessions.create())
)
// @ts-expect-error: sessions.create takes an object, not a number
export const wrong = createOpencodeClient({ baseUrl: "x" }).sessions.create(42)
`
    )
    fs.writeFileSync(
      path.join(fresh, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
          lib: ["ES2022", "DOM"]
        },
        files: ["check.ts"]
      })
    )
    const tsc = createRequire(path.join(workspace, "package.json")).resolve("typescript/bin/tsc")
    const { stdout } = await exec(process.execPath, [tsc, "-p", "tsconfig.json"], fresh).catch(
      (error: { stdout: string }) => ({ stdout: error.stdout })
    )
    expect(stdout).toBe("")
  }, 300_000)
})
