import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ReferenceGroup, SkillGroup } from "@opencode-ai/protocol"
import { Effect, Schema } from "effect"
import { configHome, startServer, tempDir } from "./harness.js"

const get = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    const text = await response.text()
    return { status: response.status, text, body: JSON.parse(text) }
  })

const writeSkill = (file: string, front: string, body: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, `---\n${front}\n---\n${body}\n`)
}

/** Decodes with excess properties rejected: the body has exactly the contract's shape. */
const exact = <A, I>(schema: Schema.Schema<A, I>, body: unknown) =>
  Schema.decodeUnknownSync(schema, { onExcessProperty: "error" })(body)

describe("skill and reference endpoints over the real server", () => {
  it.scoped("GET /api/skill lists the Location's skills in the contract shape, nearest definition winning", () =>
    Effect.gen(function* () {
      const home = configHome({})
      const globalSkill = path.join(home, "opencode", "skills", "review", "SKILL.md")
      writeSkill(globalSkill, "name: review\ndescription: Review a change", "Global review steps.")
      writeSkill(
        path.join(home, "opencode", "skill", "shared", "SKILL.md"),
        "name: shared\ndescription: From the global folder",
        "global"
      )
      const { url, directory } = yield* startServer({ XDG_CONFIG_HOME: home })
      const project = fs.realpathSync(directory)
      const projectSkill = path.join(project, ".opencode", "skill", "shared", "SKILL.md")
      writeSkill(projectSkill, "name: shared\ndescription: From the project\nslash: true", "Project body.")
      writeSkill(
        path.join(project, ".opencode", "skill", "broken", "SKILL.md"),
        "name: broken",
        "no description: skipped"
      )

      const response = yield* get(`${url}/api/skill`)
      expect(response.status).toBe(200)
      expect(response.body).toEqual({
        location: { directory: project, project: { id: expect.any(String), directory: project } },
        data: [
          { name: "review", description: "Review a change", location: globalSkill, content: "Global review steps." },
          {
            name: "shared",
            description: "From the project",
            slash: true,
            location: projectSkill,
            content: "Project body."
          }
        ]
      })
      exact(SkillGroup.SkillsResponse, response.body)

      // A nested Location sees its own skills too; a missing directory is a typed 400.
      const nested = path.join(project, "packages", "app")
      writeSkill(
        path.join(nested, ".opencode", "skills", "app", "SKILL.md"),
        "name: app\ndescription: The app's own",
        "App body."
      )
      const inNested = yield* get(`${url}/api/skill?location[directory]=${encodeURIComponent(nested)}`)
      expect(inNested.status).toBe(200)
      expect(inNested.body.data.map((s: { name: string }) => s.name)).toEqual(["app", "review", "shared"])
      expect(inNested.body.location.directory).toBe(nested)
      const missing = yield* get(
        `${url}/api/skill?location[directory]=${encodeURIComponent(path.join(project, "nope"))}`
      )
      expect(missing.status).toBe(400)
      expect(missing.body._tag).toBe("InvalidRequestError")
    })
  )

  it.scoped("GET /api/reference lists the configured references in the contract shape, hidden ones included", () =>
    Effect.gen(function* () {
      const dataHome = fs.realpathSync(tempDir("data"))
      const home = configHome({
        reference: {
          docs: { path: "../docs", description: "Product documentation" },
          upstream: { type: "git", repository: "https://github.com/acme/upstream.git", branch: "main", hidden: true }
        }
      })
      const { url, directory } = yield* startServer({ XDG_CONFIG_HOME: home, XDG_DATA_HOME: dataHome })
      const project = fs.realpathSync(directory)
      const response = yield* get(`${url}/api/reference`)
      expect(response.status).toBe(200)
      expect(response.body).toEqual({
        location: { directory: project, project: { id: expect.any(String), directory: project } },
        data: [
          {
            name: "docs",
            path: path.join(path.dirname(project), "docs"),
            description: "Product documentation",
            source: { type: "local", path: "../docs", description: "Product documentation" }
          },
          {
            name: "upstream",
            path: path.join(dataHome, "opencode", "reference", "github.com", "acme", "upstream@main"),
            hidden: true,
            source: { type: "git", repository: "https://github.com/acme/upstream.git", branch: "main", hidden: true }
          }
        ]
      })
      exact(ReferenceGroup.ReferencesResponse, response.body)

      const none = yield* startServer({})
      expect((yield* get(`${none.url}/api/reference`)).body.data).toEqual([])
    })
  )
})
