import * as fs from "node:fs"
import * as path from "node:path"
import { FileSystem } from "@effect/platform"
import { SystemError } from "@effect/platform/Error"
import { NodeContext } from "@effect/platform-node"
import { it } from "@effect/vitest"
import type { Location } from "@opencode-ai/schema"
import { Effect, Exit, Layer, Option } from "effect"
import { describe, expect } from "vitest"
import type { AgentCatalog } from "../../src/config/agent-catalog.js"
import { Instructions } from "../../src/instructions/instructions.js"
import { Skills } from "../../src/skill/skills.js"
import { collectingWarnings, configTree as setup } from "../fixture.js"

const skill = (file: string, name: string, description: string, body = `Body of ${name}`) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`)
}

const layer = (configDir: string, env: Record<string, string | undefined> = {}) =>
  Skills.layer({ configDir, env }).pipe(Layer.provide(NodeContext.layer))

const list = (location: Location.LocationInfo) => Effect.flatMap(Skills.Service, (skills) => skills.list(location))

const rules = (...entries: ReadonlyArray<[string, string, "allow" | "ask" | "deny"]>): AgentCatalog.Ruleset =>
  entries.map(([action, resource, effect]) => ({ action, resource, effect }))

describe("Skills", () => {
  it.scoped("discovers SKILL.md files at any depth in the global and project skill folders, in name order", () =>
    Effect.gen(function* () {
      const w = yield* setup
      skill(path.join(w.configDir, "skills", "global-one", "SKILL.md"), "global-one", "A global skill")
      skill(path.join(w.root, ".opencode", "skill", "deep", "nested", "tree", "SKILL.md"), "deep", "Deep in the root")
      skill(path.join(w.app, ".opencode", "skills", "app", "SKILL.md"), "app", "In the Location directory")
      // Not a skill file name, and above the project root: neither is discovered.
      skill(path.join(w.root, ".opencode", "skill", "notes", "README.md"), "readme", "Not a skill")
      skill(path.join(w.dir, ".opencode", "skill", "outside", "SKILL.md"), "outside", "Above the project root")

      const skills = yield* list(w.location).pipe(Effect.provide(layer(w.configDir)))
      expect(skills).toEqual([
        {
          name: "app",
          description: "In the Location directory",
          location: path.join(w.app, ".opencode", "skills", "app", "SKILL.md"),
          content: "Body of app"
        },
        {
          name: "deep",
          description: "Deep in the root",
          location: path.join(w.root, ".opencode", "skill", "deep", "nested", "tree", "SKILL.md"),
          content: "Body of deep"
        },
        {
          name: "global-one",
          description: "A global skill",
          location: path.join(w.configDir, "skills", "global-one", "SKILL.md"),
          content: "Body of global-one"
        }
      ])
    })
  )

  it.scoped(
    "precedence on a name clash: nearer project folders over farther ones over global; skills/ over skill/",
    () =>
      Effect.gen(function* () {
        const w = yield* setup
        skill(path.join(w.configDir, "skill", "a", "SKILL.md"), "shared", "global skill/")
        skill(path.join(w.configDir, "skills", "a", "SKILL.md"), "shared", "global skills/")
        skill(path.join(w.configDir, "skills", "b", "SKILL.md"), "global-only", "global skills/")
        skill(path.join(w.root, ".opencode", "skills", "a", "SKILL.md"), "shared", "root skills/")
        skill(path.join(w.root, ".opencode", "skills", "c", "SKILL.md"), "root-only", "root skills/")
        skill(path.join(w.root, "packages", ".opencode", "skill", "a", "SKILL.md"), "shared", "packages skill/")
        skill(path.join(w.app, ".opencode", "skill", "a", "SKILL.md"), "shared", "app skill/")
        skill(path.join(w.app, ".opencode", "skill", "d", "SKILL.md"), "root-only", "app skill/")

        const service = yield* Skills.Service.pipe(Effect.provide(layer(w.configDir)))
        expect(service.folders(w.location)).toEqual([
          path.join(w.configDir, "skill"),
          path.join(w.configDir, "skills"),
          path.join(w.root, ".opencode", "skill"),
          path.join(w.root, ".opencode", "skills"),
          path.join(w.root, "packages", ".opencode", "skill"),
          path.join(w.root, "packages", ".opencode", "skills"),
          path.join(w.app, ".opencode", "skill"),
          path.join(w.app, ".opencode", "skills")
        ])
        const byName = Object.fromEntries((yield* service.list(w.location)).map((s) => [s.name, s.description]))
        expect(byName).toEqual({ shared: "app skill/", "global-only": "global skills/", "root-only": "app skill/" })

        // From the project root, the nested package's skills are not in scope.
        const atRoot = yield* service.list({ directory: w.root, project: w.location.project })
        expect(Object.fromEntries(atRoot.map((s) => [s.name, s.description]))).toEqual({
          shared: "root skills/",
          "global-only": "global skills/",
          "root-only": "root skills/"
        })
        expect(yield* service.get(w.location, "global-only")).toEqual(
          Option.some(expect.objectContaining({ location: path.join(w.configDir, "skills", "b", "SKILL.md") }))
        )
        expect(yield* service.get(w.location, "nope")).toEqual(Option.none())
      })
  )

  it.scoped("OPENCODE_DISABLE_PROJECT_CONFIG turns project skills off; global ones remain", () =>
    Effect.gen(function* () {
      const w = yield* setup
      skill(path.join(w.configDir, "skill", "g", "SKILL.md"), "g", "global")
      skill(path.join(w.app, ".opencode", "skill", "p", "SKILL.md"), "p", "project")
      const skills = yield* list(w.location).pipe(
        Effect.provide(layer(w.configDir, { OPENCODE_DISABLE_PROJECT_CONFIG: "true" }))
      )
      expect(skills.map((s) => s.name)).toEqual(["g"])
    })
  )

  it.scoped("follows symbolic links to skill folders, each real directory once (a link cycle ends)", () =>
    Effect.gen(function* () {
      const w = yield* setup
      const shared = path.join(w.dir, "shared-skills", "lint")
      skill(path.join(shared, "SKILL.md"), "lint", "Linked in")
      fs.mkdirSync(path.join(w.app, ".opencode", "skill"), { recursive: true })
      fs.symlinkSync(shared, path.join(w.app, ".opencode", "skill", "lint"))
      fs.symlinkSync(path.join(w.app, ".opencode", "skill"), path.join(w.app, ".opencode", "skill", "loop"))
      fs.symlinkSync(path.join(w.dir, "missing"), path.join(w.app, ".opencode", "skill", "dangling"))
      const skills = yield* list(w.location).pipe(Effect.provide(layer(w.configDir)))
      expect(skills.map((s) => [s.name, s.location])).toEqual([
        ["lint", path.join(w.app, ".opencode", "skill", "lint", "SKILL.md")]
      ])
    })
  )

  it.scoped("invalid files are skipped with a warning naming the file and the reason, once per problem", () =>
    Effect.gen(function* () {
      const w = yield* setup
      skill(path.join(w.app, ".opencode", "skill", "good", "SKILL.md"), "good", "Fine")
      const bad = path.join(w.app, ".opencode", "skill", "bad", "SKILL.md")
      fs.mkdirSync(path.dirname(bad), { recursive: true })
      fs.writeFileSync(bad, "---\nname: bad\n---\nno description")
      const noFrontMatter = path.join(w.configDir, "skill", "plain", "SKILL.md")
      fs.mkdirSync(path.dirname(noFrontMatter), { recursive: true })
      fs.writeFileSync(noFrontMatter, "# Plain markdown")
      // A name clash with an invalid nearer file: the valid farther definition stays in effect.
      skill(path.join(w.root, ".opencode", "skill", "bad", "SKILL.md"), "bad", "The valid one")

      yield* Effect.gen(function* () {
        const service = yield* Skills.Service
        const first = yield* collectingWarnings(service.list(w.location))
        expect(first.result.map((s) => [s.name, s.description])).toEqual([
          ["bad", "The valid one"],
          ["good", "Fine"]
        ])
        expect(first.warnings).toHaveLength(2)
        expect(first.warnings.find((m) => m.includes(bad))).toContain("`description` must be a non-empty string")
        expect(first.warnings.find((m) => m.includes(noFrontMatter))).toContain("no front matter")
        // The same problems again: not repeated at every look-up.
        const again = yield* collectingWarnings(service.list(w.location))
        expect(again.warnings).toEqual([])
        // A new problem in the same file is reported.
        fs.writeFileSync(bad, "---\nname: [unclosed\n---\n")
        const changed = yield* collectingWarnings(service.list(w.location))
        expect(changed.warnings).toHaveLength(1)
        expect(changed.warnings[0]).toContain("invalid YAML front matter")
      }).pipe(Effect.provide(layer(w.configDir)))
    })
  )

  it.scoped("every look-up reads the files again: an edit applies at the next one", () =>
    Effect.gen(function* () {
      const w = yield* setup
      const file = path.join(w.app, ".opencode", "skill", "x", "SKILL.md")
      yield* Effect.gen(function* () {
        const service = yield* Skills.Service
        expect(yield* service.list(w.location)).toEqual([])
        skill(file, "x", "first")
        expect((yield* service.list(w.location)).map((s) => s.description)).toEqual(["first"])
        skill(file, "x", "second")
        expect((yield* service.list(w.location)).map((s) => s.description)).toEqual(["second"])
      }).pipe(Effect.provide(layer(w.configDir)))
    })
  )

  describe("Selected-agent available-skill guidance lists only names and descriptions permitted for that agent", () => {
    it.scoped("denied skills are omitted; asked ones are listed; bodies and locations never appear", () =>
      Effect.gen(function* () {
        const w = yield* setup
        skill(path.join(w.app, ".opencode", "skill", "docs", "SKILL.md"), "docs", "Write docs", "SECRET BODY docs")
        skill(
          path.join(w.app, ".opencode", "skill", "deploy", "SKILL.md"),
          "deploy",
          "Deploy the app",
          "SECRET BODY deploy"
        )
        skill(
          path.join(w.app, ".opencode", "skill", "internal-x", "SKILL.md"),
          "internal-x",
          "Internal",
          "SECRET BODY internal"
        )
        yield* Effect.gen(function* () {
          const service = yield* Skills.Service
          const all = yield* service.guidance(w.location, rules(["*", "*", "allow"]))
          expect(all).toEqual([
            { name: "deploy", description: "Deploy the app" },
            { name: "docs", description: "Write docs" },
            { name: "internal-x", description: "Internal" }
          ])
          const some = yield* service.guidance(
            w.location,
            rules(["*", "*", "allow"], ["skill", "internal-*", "deny"], ["skill", "deploy", "ask"])
          )
          expect(some).toEqual([
            { name: "deploy", description: "Deploy the app" },
            { name: "docs", description: "Write docs" }
          ])
          expect(JSON.stringify(some)).not.toContain("SECRET")
          expect(JSON.stringify(some)).not.toContain("SKILL.md")
          // Only one allowed after a blanket deny.
          expect(
            yield* service.guidance(
              w.location,
              rules(["*", "*", "allow"], ["skill", "*", "deny"], ["skill", "docs", "allow"])
            )
          ).toEqual([{ name: "docs", description: "Write docs" }])
          // The skill tool denied outright: the guidance is absent.
          expect(
            Instructions.isAbsent(
              yield* service.guidance(w.location, rules(["*", "*", "allow"], ["skill", "*", "deny"]))
            )
          ).toBe(true)
        }).pipe(Effect.provide(layer(w.configDir)))
      })
    )

    it.scoped("absent when there are no skills; unavailable (prior belief kept) when a folder cannot be searched", () =>
      Effect.gen(function* () {
        const w = yield* setup
        const allow = rules(["*", "*", "allow"])
        const none = yield* Effect.flatMap(Skills.Service, (s) => s.guidance(w.location, allow)).pipe(
          Effect.provide(layer(w.configDir))
        )
        expect(Instructions.isAbsent(none)).toBe(true)

        // A file system on which the app's skill folder cannot be listed (permission denied).
        const blocked = path.join(w.app, ".opencode", "skill")
        fs.mkdirSync(blocked, { recursive: true })
        const denying = Layer.effect(
          FileSystem.FileSystem,
          Effect.map(FileSystem.FileSystem, (real) => ({
            ...real,
            readDirectory: (p: string, o?: FileSystem.ReadDirectoryOptions) =>
              p === blocked
                ? Effect.fail(
                    new SystemError({
                      reason: "PermissionDenied",
                      module: "FileSystem",
                      method: "readDirectory",
                      pathOrDescriptor: p
                    })
                  )
                : real.readDirectory(p, o)
          }))
        ).pipe(Layer.provide(NodeContext.layer))
        const service = Skills.layer({ configDir: w.configDir, env: {} }).pipe(Layer.provide(denying))
        const observed = yield* Effect.flatMap(Skills.Service, (s) => s.guidance(w.location, allow)).pipe(
          Effect.provide(service)
        )
        expect(Instructions.isUnavailable(observed)).toBe(true)
        const listed = yield* Effect.exit(list(w.location).pipe(Effect.provide(service)))
        expect(Exit.isFailure(listed)).toBe(true)
        if (Exit.isFailure(listed)) expect(JSON.stringify(listed.cause)).toContain("SkillDiscoveryError")
      })
    )
  })
})
