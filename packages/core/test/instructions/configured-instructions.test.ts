import * as fs from "node:fs"
import * as path from "node:path"
import { it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { describe, expect } from "vitest"
import { Config } from "../../src/config/config.js"
import { SessionInput } from "../../src/input/session-input.js"
import { ConfiguredInstructions } from "../../src/instructions/configured-instructions.js"
import { InstructionDiscovery } from "../../src/instructions/instruction-discovery.js"
import { Locations } from "../../src/location/locations.js"
import { SessionRunner } from "../../src/runner/session-runner.js"
import { Sessions } from "../../src/session/sessions.js"
import { LLMScript } from "../../src/testing/llm-script.js"
import { ScriptedLLMServer } from "../../src/testing/scripted-llm-server.js"
import { TestDatabase } from "../../src/testing/test-database.js"
import { type World, world, write } from "./world.js"

/** InstructionDiscovery over the world's files with `instructions` and `home`. */
const discovery = (
  w: World,
  instructions: ReadonlyArray<string>,
  env: Record<string, string | undefined> = {}
): Layer.Layer<InstructionDiscovery.Service> =>
  InstructionDiscovery.layer({ configDir: w.configDir, env, instructions, home: path.join(w.dir, "home") })

describe("the `instructions` config key", () => {
  it.scoped(
    "its files follow the AGENTS.md files in config order: relative ones upward from the Location, absolute, ~/ and globs",
    () =>
      Effect.gen(function* () {
        const w = yield* world
        const home = path.join(w.dir, "home")
        const outside = path.join(w.dir, "shared")
        yield* write(path.join(w.configDir, "AGENTS.md"), "global agents")
        yield* write(path.join(w.root, "AGENTS.md"), "root agents")
        yield* write(path.join(w.root, "CONTRIBUTING.md"), "root contributing")
        yield* write(path.join(w.app, "CONTRIBUTING.md"), "app contributing")
        yield* write(path.join(w.root, "docs", "rules", "b.md"), "rule b")
        yield* write(path.join(w.root, "docs", "rules", "a.md"), "rule a")
        yield* write(path.join(w.root, "docs", "rules", "skip.txt"), "not markdown")
        yield* write(path.join(home, "style.md"), "home style")
        yield* write(path.join(outside, "one.md"), "shared one")
        yield* write(path.join(outside, "deep", "two.md"), "shared two")
        const entries = [
          "CONTRIBUTING.md",
          "docs/rules/*.md",
          "~/style.md",
          `${outside}/**/*.md`,
          "https://example.com/rules.md",
          "AGENTS.md", // already an AGENTS.md file: listed once, at its first place
          "missing.md"
        ]
        yield* Effect.gen(function* () {
          const service = yield* InstructionDiscovery.Service
          expect(service.paths(w.location)).toEqual([
            path.join(w.configDir, "AGENTS.md"),
            path.join(w.app, "AGENTS.md"),
            path.join(w.root, "packages", "AGENTS.md"),
            path.join(w.root, "AGENTS.md"),
            path.join(w.app, "CONTRIBUTING.md"),
            path.join(w.root, "packages", "CONTRIBUTING.md"),
            path.join(w.root, "CONTRIBUTING.md"),
            path.join(w.root, "docs", "rules", "a.md"),
            path.join(w.root, "docs", "rules", "b.md"),
            path.join(home, "style.md"),
            path.join(outside, "deep", "two.md"),
            path.join(outside, "one.md"),
            path.join(w.app, "missing.md"),
            path.join(w.root, "packages", "missing.md"),
            path.join(w.root, "missing.md")
          ])
          expect(yield* service.load(w.location)).toEqual([
            { path: path.join(w.configDir, "AGENTS.md"), content: "global agents" },
            { path: path.join(w.root, "AGENTS.md"), content: "root agents" },
            { path: path.join(w.app, "CONTRIBUTING.md"), content: "app contributing" },
            { path: path.join(w.root, "CONTRIBUTING.md"), content: "root contributing" },
            { path: path.join(w.root, "docs", "rules", "a.md"), content: "rule a" },
            { path: path.join(w.root, "docs", "rules", "b.md"), content: "rule b" },
            { path: path.join(home, "style.md"), content: "home style" },
            { path: path.join(outside, "deep", "two.md"), content: "shared two" },
            { path: path.join(outside, "one.md"), content: "shared one" }
          ])
        }).pipe(Effect.provide(discovery(w, entries)))
      })
  )

  it.scoped("OPENCODE_DISABLE_PROJECT_CONFIG skips relative entries; absolute and ~/ ones stay", () =>
    Effect.gen(function* () {
      const w = yield* world
      yield* write(path.join(w.root, "CONTRIBUTING.md"), "project")
      yield* write(path.join(w.dir, "home", "style.md"), "home style")
      yield* Effect.gen(function* () {
        const service = yield* InstructionDiscovery.Service
        expect(service.paths(w.location)).toEqual([
          path.join(w.configDir, "AGENTS.md"),
          path.join(w.dir, "home", "style.md")
        ])
      }).pipe(Effect.provide(discovery(w, ["CONTRIBUTING.md", "~/style.md"], { OPENCODE_DISABLE_PROJECT_CONFIG: "1" })))
    })
  )

  it("a glob stops after maxMatches files; node_modules and .git are not searched", () => {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(fs.realpathSync("/tmp"), "opencode-configured-")))
    for (let i = 0; i < ConfiguredInstructions.maxMatches + 20; i++) {
      fs.writeFileSync(path.join(dir, `rule-${String(i).padStart(3, "0")}.md`), "x")
    }
    fs.mkdirSync(path.join(dir, "node_modules", "pkg"), { recursive: true })
    fs.writeFileSync(path.join(dir, "node_modules", "pkg", "README.md"), "x")
    const found = ConfiguredInstructions.resolve([`${dir}/**/*.md`], {
      directory: dir,
      projectRoot: dir,
      home: dir,
      projectDisabled: false
    })
    expect(found).toHaveLength(ConfiguredInstructions.maxMatches)
    expect(found.some((file) => file.includes("node_modules"))).toBe(false)
  })

  it.scopedLive("the model reads a configured file in its first request, after the AGENTS.md files", () =>
    Effect.gen(function* () {
      const w = yield* world
      // No git repository: the Location directory is its own project root.
      yield* write(path.join(w.app, "AGENTS.md"), "Agents rules here.")
      yield* write(path.join(w.app, "docs", "STYLE.md"), "Write short sentences.")
      const server = yield* ScriptedLLMServer.make()
      const context = yield* Layer.build(
        TestDatabase.coreLayer({
          databaseFile: w.databaseFile,
          directory: w.app,
          configDir: w.configDir,
          dataDir: path.join(w.dir, "data"),
          env: {},
          config: Config.layerTest({ ...ScriptedLLMServer.config(server.url), instructions: ["docs/STYLE.md"] })
        })
      ).pipe(Effect.orDie)
      yield* server.enqueue(LLMScript.reply(LLMScript.text("ok"), LLMScript.finish("stop")))
      yield* Effect.gen(function* () {
        const location = yield* (yield* Locations.Service).resolve({ directory: w.app })
        const session = yield* (yield* Sessions.Service).create({ location })
        yield* (yield* SessionInput.Service).admit(session.id, { prompt: { text: "hello" } })
        yield* (yield* SessionRunner.Service).wake(session.id)
        yield* (yield* SessionRunner.Service).wait(session.id)
      }).pipe(Effect.provide(context))
      const [request] = yield* server.requests
      const system = (request!.body.messages as Array<{ role: string; content: string }>)
        .filter((message) => message.role === "system")
        .map((message) => message.content)
        .join("\n")
      const style = `Instructions loaded from ${path.join(w.app, "docs", "STYLE.md")}:\nWrite short sentences.`
      expect(system).toContain(style)
      expect(system.indexOf("Agents rules here.")).toBeGreaterThan(-1)
      expect(system.indexOf("Agents rules here.")).toBeLessThan(system.indexOf(style))
    })
  )
})
