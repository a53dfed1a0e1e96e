import * as fs from "node:fs"
import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { it } from "@effect/vitest"
import type { Location } from "@opencode-ai/schema"
import { Effect, Layer, Option } from "effect"
import { describe, expect } from "vitest"
import { Commands } from "../../src/command/commands.js"
import { Config } from "../../src/config/config.js"
import type { ConfigInfo } from "../../src/config/config-info.js"
import { collectingWarnings, configTree as setup } from "../fixture.js"

const write = (file: string, text: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text)
}

const layer = (
  configDir: string,
  command: ConfigInfo.Info["command"] = undefined,
  env: Record<string, string | undefined> = {}
) =>
  Commands.layer({ configDir, env }).pipe(
    Layer.provide(Layer.merge(NodeContext.layer, Config.layerTest(command === undefined ? {} : { command })))
  )

const list = (location: Location.LocationInfo) => Effect.flatMap(Commands.Service, (c) => c.list(location))

describe("Commands", () => {
  it.scoped("discovers .md files in the global and project command folders, named by their path", () =>
    Effect.gen(function* () {
      const w = yield* setup
      write(path.join(w.configDir, "commands", "hello.md"), "Say hello to $ARGUMENTS.\n")
      write(
        path.join(w.root, ".opencode", "command", "git", "commit.md"),
        "---\ndescription: Commit the staged work\nagent: build\nmodel: openai/gpt-5\nsubtask: false\n---\nCommit: !`git diff --cached`\n"
      )
      write(
        path.join(w.app, ".opencode", "commands", "review.md"),
        "---\ndescription: Review\nsubtask: true\n---\nReview @$1\n"
      )
      // Not a .md file, and above the project root: neither is discovered.
      write(path.join(w.root, ".opencode", "command", "notes.txt"), "not a command")
      write(path.join(w.dir, ".opencode", "command", "outside.md"), "above the root")

      const commands = yield* list(w.location).pipe(Effect.provide(layer(w.configDir)))
      expect(commands).toEqual([
        {
          name: "git/commit",
          template: "Commit: !`git diff --cached`",
          description: "Commit the staged work",
          agent: "build",
          model: { providerID: "openai", id: "gpt-5" },
          subtask: false,
          source: path.join(w.root, ".opencode", "command", "git", "commit.md")
        },
        { name: "hello", template: "Say hello to $ARGUMENTS.", source: path.join(w.configDir, "commands", "hello.md") },
        {
          name: "review",
          template: "Review @$1",
          description: "Review",
          subtask: true,
          source: path.join(w.app, ".opencode", "commands", "review.md")
        }
      ])
    })
  )

  it.scoped("lists config `command` entries", () =>
    Effect.gen(function* () {
      const w = yield* setup
      const commands = yield* list(w.location).pipe(
        Effect.provide(
          layer(w.configDir, {
            test: {
              template: "Run the tests for $1",
              description: "Tests",
              agent: "plan",
              model: "anthropic/claude-x"
            },
            plain: { template: "Plain" }
          })
        )
      )
      expect(commands).toEqual([
        { name: "plain", template: "Plain", source: "config" },
        {
          name: "test",
          template: "Run the tests for $1",
          description: "Tests",
          agent: "plan",
          model: { providerID: "anthropic", id: "claude-x" },
          source: "config"
        }
      ])
    })
  )

  it.scoped("the nearest definition wins: Location folder, then root, then config, then global", () =>
    Effect.gen(function* () {
      const w = yield* setup
      for (const name of ["a", "b", "c", "d"]) write(path.join(w.configDir, "command", `${name}.md`), `global ${name}`)
      // Within one folder pair, `commands/` wins over `command/`.
      write(path.join(w.configDir, "commands", "d.md"), "global commands d")
      for (const name of ["a", "b"]) write(path.join(w.root, ".opencode", "commands", `${name}.md`), `root ${name}`)
      write(path.join(w.app, ".opencode", "command", "a.md"), "app a")
      const commands = yield* list(w.location).pipe(
        Effect.provide(
          layer(w.configDir, { a: { template: "config a" }, b: { template: "config b" }, c: { template: "config c" } })
        )
      )
      expect(commands.map((c) => [c.name, c.template])).toEqual([
        ["a", "app a"],
        ["b", "root b"],
        ["c", "config c"],
        ["d", "global commands d"]
      ])
    })
  )

  it.scoped("OPENCODE_DISABLE_PROJECT_CONFIG leaves out the project folders", () =>
    Effect.gen(function* () {
      const w = yield* setup
      write(path.join(w.configDir, "command", "g.md"), "global")
      write(path.join(w.root, ".opencode", "command", "p.md"), "project")
      const commands = yield* list(w.location).pipe(
        Effect.provide(layer(w.configDir, undefined, { OPENCODE_DISABLE_PROJECT_CONFIG: "true" }))
      )
      expect(commands.map((c) => c.name)).toEqual(["g"])
    })
  )

  it.scoped("a bad file or model is skipped with one warning naming it; the others are listed", () =>
    Effect.gen(function* () {
      const w = yield* setup
      const bad = path.join(w.root, ".opencode", "command", "bad.md")
      const badModel = path.join(w.root, ".opencode", "command", "bad-model.md")
      write(bad, "---\nsubtask: sometimes\n---\nbody")
      write(badModel, "---\nmodel: just-a-name\n---\nbody")
      write(path.join(w.root, ".opencode", "command", "good.md"), "good")
      const service = layer(w.configDir, { cfg: { template: "x", model: "nope" } })
      const { result, warnings } = yield* collectingWarnings(
        Effect.gen(function* () {
          const commands = yield* Commands.Service
          const first = yield* commands.list(w.location)
          yield* commands.list(w.location)
          return first
        }).pipe(Effect.provide(service))
      )
      expect(result.map((c) => c.name)).toEqual(["good"])
      // Once each (the second listing warns no more); files load concurrently, so in any order.
      expect([...warnings].sort()).toEqual(
        [
          `config command "cfg" skipped: \`model\`: "nope" is not a model reference; expected "provider/model"`,
          `invalid command file ${badModel} skipped: \`model\`: "just-a-name" is not a model reference; expected "provider/model"`,
          `invalid command file ${bad} skipped: \`subtask\` must be true or false`
        ].sort()
      )
    })
  )

  it.scoped("get finds one command by name", () =>
    Effect.gen(function* () {
      const w = yield* setup
      write(path.join(w.root, ".opencode", "command", "x.md"), "the x")
      const found = yield* Effect.flatMap(Commands.Service, (c) =>
        Effect.all([c.get(w.location, "x"), c.get(w.location, "y")])
      ).pipe(Effect.provide(layer(w.configDir)))
      expect(Option.map(found[0], (c) => c.template)).toEqual(Option.some("the x"))
      expect(found[1]).toEqual(Option.none())
    })
  )
})
