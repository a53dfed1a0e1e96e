import * as fs from "node:fs"
import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { describe, expect } from "vitest"
import { InstructionDiscovery } from "../../src/instructions/instruction-discovery.js"
import { Instructions } from "../../src/instructions/instructions.js"
import { TestDatabase } from "../../src/testing/test-database.js"
import { unreadable, type World, world, write } from "./world.js"

// The Location-scoped service over real files. The pure value and renderers are covered in
// instruction-discovery.test.ts.

const discovery = (w: World, env: Record<string, string | undefined> = {}) =>
  InstructionDiscovery.layer({ configDir: w.configDir, env }).pipe(Layer.provide(NodeContext.layer))

const load = (location: World["location"]) =>
  Effect.flatMap(InstructionDiscovery.Service, (service) => service.load(location))

const layout = (w: World) => ({
  global: path.join(w.configDir, "AGENTS.md"),
  root: path.join(w.root, "AGENTS.md"),
  packages: path.join(w.root, "packages", "AGENTS.md"),
  app: path.join(w.app, "AGENTS.md"),
  above: path.join(w.dir, "AGENTS.md")
})

describe("InstructionDiscovery service", () => {
  describe("Ambient discovery reads global and upward-project AGENTS.md files and honors OPENCODE_DISABLE_PROJECT_CONFIG for project files.", () => {
    it.scoped(
      "global first, then the project files from the Location directory up to the project root, nearest first",
      () =>
        Effect.gen(function* () {
          const w = yield* world
          const files = layout(w)
          yield* write(files.global, "global")
          yield* write(files.root, "root")
          yield* write(files.packages, "packages")
          yield* write(files.app, "app")
          // Above the project root: never part of the project's instructions.
          yield* write(files.above, "above")
          yield* Effect.gen(function* () {
            const service = yield* InstructionDiscovery.Service
            expect(service.paths(w.location)).toEqual([files.global, files.app, files.packages, files.root])
            expect(yield* load(w.location)).toEqual([
              { path: files.global, content: "global" },
              { path: files.app, content: "app" },
              { path: files.packages, content: "packages" },
              { path: files.root, content: "root" }
            ])
          }).pipe(Effect.provide(discovery(w)))
        })
    )

    it.scoped(
      "a Location outside its project root is searched alone; a path shared by global and project is listed once",
      () =>
        Effect.gen(function* () {
          const w = yield* world
          const outside = { directory: w.dir, project: { id: "prj_x", directory: w.root } }
          const selfConfig = { directory: w.configDir, project: { id: "prj_y", directory: w.configDir } }
          yield* Effect.gen(function* () {
            const service = yield* InstructionDiscovery.Service
            expect(service.paths(outside)).toEqual([layout(w).global, path.join(w.dir, "AGENTS.md")])
            expect(service.paths(selfConfig)).toEqual([layout(w).global])
          }).pipe(Effect.provide(discovery(w)))
        })
    )
  })

  describe("InstructionDiscovery observes ambient instructions as one ordered aggregate Instruction Source.", () => {
    it.scoped("every discovered file is one value under one key; a change to any file is a change of that value", () =>
      Effect.gen(function* () {
        const w = yield* world
        const files = layout(w)
        yield* write(files.global, "global")
        yield* write(files.app, "app")
        yield* Effect.gen(function* () {
          const source = (yield* InstructionDiscovery.Service).instructions(w.location)
          expect(source.keys).toEqual([InstructionDiscovery.key])
          const baseline = (yield* Instructions.initialize(source)) as Instructions.Complete
          expect(baseline.applied.sources).toHaveLength(1)
          expect(baseline.text.indexOf(files.global)).toBeLessThan(baseline.text.indexOf(files.app))

          yield* write(files.root, "root")
          const updated = (yield* Instructions.reconcile(source, baseline.applied)) as Instructions.Updated
          expect(updated._tag).toBe("Updated")
          // The complete current ordered set, superseding the earlier one.
          for (const file of [files.global, files.app, files.root]) expect(updated.text).toContain(file)
          expect(updated.applied.sources).toHaveLength(1)
        }).pipe(Effect.provide(discovery(w)))
      })
    )
  })

  describe("Ambient project instruction discovery honors OPENCODE_DISABLE_PROJECT_CONFIG; global instructions remain eligible.", () => {
    for (const value of ["1", "true", "TRUE"]) {
      it.scoped(`OPENCODE_DISABLE_PROJECT_CONFIG=${value} keeps only the global file`, () =>
        Effect.gen(function* () {
          const w = yield* world
          const files = layout(w)
          yield* write(files.global, "global")
          yield* write(files.app, "app")
          yield* Effect.gen(function* () {
            expect(yield* load(w.location)).toEqual([{ path: files.global, content: "global" }])
          }).pipe(Effect.provide(discovery(w, { OPENCODE_DISABLE_PROJECT_CONFIG: value })))
        })
      )
    }

    it.scoped("unset, empty or false leaves project files on", () =>
      Effect.gen(function* () {
        const w = yield* world
        const files = layout(w)
        yield* write(files.app, "app")
        for (const env of [{}, { OPENCODE_DISABLE_PROJECT_CONFIG: "" }, { OPENCODE_DISABLE_PROJECT_CONFIG: "false" }]) {
          expect(yield* Effect.provide(load(w.location), discovery(w, env))).toEqual([
            { path: files.app, content: "app" }
          ])
        }
      })
    )

    it.scoped("Core reads the global file from $XDG_CONFIG_HOME/opencode when no configDir is given", () =>
      Effect.gen(function* () {
        const w = yield* world
        const xdg = path.join(w.dir, "xdg")
        yield* write(path.join(xdg, "opencode", "AGENTS.md"), "from xdg")
        const core = TestDatabase.coreLayer({
          databaseFile: w.databaseFile,
          directory: w.dir,
          env: { XDG_CONFIG_HOME: xdg }
        })
        expect(yield* Effect.provide(load(w.location), core)).toEqual([
          { path: path.join(xdg, "opencode", "AGENTS.md"), content: "from xdg" }
        ])
      })
    )
  })

  describe("Unavailable Instruction Source uses stale-while-revalidate semantics and is distinct from a successfully loaded absence, which may emit removal text.", () => {
    it.scoped("missing files are simply absent from the set; no files at all is the empty set, not unavailable", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* Effect.gen(function* () {
          expect(yield* load(w.location)).toEqual([])
          yield* write(layout(w).root, "root")
          // A directory named AGENTS.md is not an instruction file.
          fs.mkdirSync(layout(w).app)
          expect(yield* load(w.location)).toEqual([{ path: layout(w).root, content: "root" }])
        }).pipe(Effect.provide(discovery(w)))
      })
    )

    it.scoped("a file that exists but cannot be read makes the whole aggregate unavailable", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* write(layout(w).global, "global")
        yield* unreadable(layout(w).app)
        yield* Effect.gen(function* () {
          expect(Instructions.isUnavailable(yield* load(w.location))).toBe(true)
        }).pipe(Effect.provide(discovery(w)))
      })
    )

    // Root reads through any permission bits, so this variant only proves something as another user.
    it.scoped.skipIf(process.getuid?.() === 0)("a permission error makes the aggregate unavailable", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* write(layout(w).app, "app")
        fs.chmodSync(layout(w).app, 0o000)
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.chmodSync(layout(w).app, 0o644)))
        yield* Effect.gen(function* () {
          expect(Instructions.isUnavailable(yield* load(w.location))).toBe(true)
        }).pipe(Effect.provide(discovery(w)))
      })
    )
  })
})
