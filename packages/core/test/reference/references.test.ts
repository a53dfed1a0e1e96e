import * as fs from "node:fs"
import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { it } from "@effect/vitest"
import type { Location } from "@opencode-ai/schema"
import { Effect, Either, Layer } from "effect"
import { describe, expect } from "vitest"
import { Config } from "../../src/config/config.js"
import type { ConfigInfo } from "../../src/config/config-info.js"
import { Instructions } from "../../src/instructions/instructions.js"
import { References } from "../../src/reference/references.js"
import { captureLogs, layer as configLayer, load, world } from "../config/world.js"

const references = (config: Layer.Layer<Config.Service, unknown>, dataDir: string, home: string) =>
  References.layer({ dataDir, home }).pipe(Layer.provide(Layer.merge(config, NodeContext.layer)))

describe("References", () => {
  describe("the `reference` config key", () => {
    it.scoped("reads local and git references in the upstream shape; a later document replaces an entry whole", () =>
      Effect.gen(function* () {
        const w = yield* world
        w.write(path.join(w.configDir, "opencode.json"), {
          reference: {
            docs: { repository: "https://github.com/acme/docs.git", branch: "main", description: "Product docs" },
            design: { type: "local", path: "~/design", hidden: true }
          }
        })
        w.write(path.join(w.worktree, "opencode.json"), {
          reference: {
            docs: { path: "../docs", description: "Local docs checkout" },
            api: { type: "git", repository: "git@github.com:acme/api.git" }
          }
        })
        const config = yield* load(w.options())
        expect(config.info.reference).toEqual({
          // Replaced whole: no `repository`/`branch` left over from the global definition.
          docs: { path: "../docs", description: "Local docs checkout" },
          design: { type: "local", path: "~/design", hidden: true },
          api: { type: "git", repository: "git@github.com:acme/api.git" }
        })
      })
    )

    it.scoped("an entry that is neither local nor git fails startup naming the key; a stray key only warns", () =>
      Effect.gen(function* () {
        const w = yield* world
        const file = w.write(
          path.join(w.worktree, "opencode.json"),
          `{\n  "reference": {\n    "docs": { "description": "no path" }\n  }\n}`
        )
        const failed = yield* Effect.either(load(w.options()))
        expect(Either.isLeft(failed)).toBe(true)
        if (Either.isLeft(failed)) {
          expect(failed.left.file).toBe(file)
          expect(failed.left.message).toContain("reference.docs")
        }
        w.write(path.join(w.worktree, "opencode.json"), { reference: { docs: { path: "docs", colour: "blue" } } })
        const { result, warnings } = yield* captureLogs(load(w.options()))
        expect(Either.isRight(result) && result.right.info.reference).toEqual({ docs: { path: "docs" } })
        expect(warnings.some((m) => m.includes("reference.docs.colour"))).toBe(true)
      })
    )
  })

  it("resolves local paths against the project root (absolute as is, ~ against home) and git repositories to their checkout directory", () => {
    const options = { dataDir: "/data", home: "/home/me", root: "/work/repo" }
    expect(References.resolve("docs", { path: "../docs", description: "D" }, options)).toEqual({
      name: "docs",
      path: "/work/docs",
      description: "D",
      source: { type: "local", path: "../docs", description: "D" }
    })
    expect(References.resolve("abs", { type: "local", path: "/srv/spec", hidden: false }, options)).toEqual({
      name: "abs",
      path: "/srv/spec",
      hidden: false,
      source: { type: "local", path: "/srv/spec", hidden: false }
    })
    expect(References.resolve("home", { path: "~/notes" }, options).path).toBe("/home/me/notes")
    expect(References.resolve("home", { path: "~" }, options).path).toBe("/home/me")
    expect(
      References.resolve(
        "api",
        { repository: "git@github.com:acme/api.git", branch: "release/2", hidden: true },
        options
      )
    ).toEqual({
      name: "api",
      path: "/data/reference/github.com/acme/api@release_2",
      hidden: true,
      source: { type: "git", repository: "git@github.com:acme/api.git", branch: "release/2", hidden: true }
    })
    expect(References.checkoutPath("/data", "https://user@example.com:8443/group/sub/proj.git/")).toBe(
      "/data/reference/example.com/8443/group/sub/proj"
    )
    expect(References.checkoutPath("/data", "../../etc")).toBe("/data/reference/etc")
  })

  it.scoped("list: every reference in name order, hidden ones included, resolved for the Location's project", () =>
    Effect.gen(function* () {
      const w = yield* world
      const info = {
        reference: {
          zeta: { path: "zeta", description: "Last" },
          alpha: { repository: "https://github.com/acme/alpha", hidden: true }
        }
      } as ConfigInfo.Info
      const location: Location.LocationInfo = { directory: w.directory, project: { id: "prj", directory: w.worktree } }
      const listed = yield* Effect.flatMap(References.Service, (s) => s.list(location)).pipe(
        Effect.provide(references(Config.layerTest(info), path.join(w.root, "data"), path.join(w.root, "home")))
      )
      expect(listed).toEqual([
        {
          name: "alpha",
          path: path.join(w.root, "data", "reference", "github.com", "acme", "alpha"),
          hidden: true,
          source: { type: "git", repository: "https://github.com/acme/alpha", hidden: true }
        },
        {
          name: "zeta",
          path: path.join(w.worktree, "zeta"),
          description: "Last",
          source: { type: "local", path: "zeta", description: "Last" }
        }
      ])
    })
  )

  it.scoped(
    "reference guidance: described, non-hidden references (a git one once checked out), by name, path and description",
    () =>
      Effect.gen(function* () {
        const w = yield* world
        const dataDir = path.join(w.root, "data")
        const info = {
          reference: {
            docs: { path: "../docs", description: "Product documentation" },
            undescribed: { path: "other" },
            secret: { path: "secret", description: "Hidden from the model", hidden: true },
            upstream: { repository: "https://github.com/acme/upstream", description: "The upstream project" }
          }
        } as ConfigInfo.Info
        const location: Location.LocationInfo = {
          directory: w.directory,
          project: { id: "prj", directory: w.worktree }
        }
        yield* Effect.gen(function* () {
          const service = yield* References.Service
          expect(yield* service.guidance(location)).toEqual([
            { name: "docs", path: path.join(w.root, "docs"), description: "Product documentation" }
          ])
          const checkout = path.join(dataDir, "reference", "github.com", "acme", "upstream")
          fs.mkdirSync(checkout, { recursive: true })
          expect(yield* service.guidance(location)).toEqual([
            { name: "docs", path: path.join(w.root, "docs"), description: "Product documentation" },
            { name: "upstream", path: checkout, description: "The upstream project" }
          ])
        }).pipe(Effect.provide(references(Config.layerTest(info), dataDir, path.join(w.root, "home"))))

        const none = yield* Effect.flatMap(References.Service, (s) => s.guidance(location)).pipe(
          Effect.provide(references(configLayer(w.options()), dataDir, path.join(w.root, "home")))
        )
        expect(Instructions.isAbsent(none)).toBe(true)
      })
  )
})
