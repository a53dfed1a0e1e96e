import * as fs from "node:fs"
import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { it } from "@effect/vitest"
import type { Location } from "@opencode-ai/schema"
import { Identifier } from "@opencode-ai/schema"
import { Effect, Exit, Layer } from "effect"
import { describe, expect } from "vitest"
import { SkillTool } from "../../src/skill/skill-tool.js"
import { Skills } from "../../src/skill/skills.js"
import { ToolRegistry } from "../../src/tool/tool-registry.js"
import { tempDir } from "../fixture.js"

const writeSkill = (file: string, name: string, body: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, `---\nname: ${name}\ndescription: About ${name}\n---\n${body}\n`)
}

/** A call context whose `ask` records each request and answers with `answer`. */
const context = (directory: string, answer: (request: ToolRegistry.PermissionAsk) => "allow" | "deny") => {
  const asked: Array<ToolRegistry.PermissionAsk> = []
  const ctx: ToolRegistry.CallContext = {
    sessionID: Identifier.SessionID.make("ses_test"),
    callID: "call_1",
    agent: "build",
    directory,
    ask: (request) =>
      Effect.suspend(() => {
        asked.push(request)
        return answer(request) === "allow"
          ? Effect.void
          : Effect.fail(
              new ToolRegistry.ToolFailure({
                message: `Permission denied: ${request.action} ${request.resources.join(", ")}`
              })
            )
      }),
    progress: () => Effect.void
  }
  return { ctx, asked }
}

const setup = Effect.gen(function* () {
  const dir = yield* tempDir
  const project = path.join(dir, "project")
  const configDir = path.join(dir, "config")
  fs.mkdirSync(project, { recursive: true })
  const location: Location.LocationInfo = { directory: project, project: { id: "prj", directory: project } }
  const skills = yield* Skills.Service.pipe(
    Effect.provide(Skills.layer({ configDir, env: {} }).pipe(Layer.provide(NodeContext.layer)))
  )
  const tool = SkillTool.make(skills, (directory) =>
    directory === project ? Effect.succeed(location) : Effect.fail(new Error(`no such location ${directory}`))
  )
  return { dir, project, configDir, tool }
})

const failureMessage = (exit: Exit.Exit<unknown, ToolRegistry.ToolFailure>) => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  expect(failure).toBeInstanceOf(ToolRegistry.ToolFailure)
  return failure!.message
}

describe("the skill tool", () => {
  it.scoped("loads a permitted skill: its body and location, after asking `skill` on its name", () =>
    Effect.gen(function* () {
      const w = yield* setup
      const file = path.join(w.project, ".opencode", "skill", "release", "SKILL.md")
      writeSkill(file, "release", "# Releasing\n\nRun scripts/release.sh.")
      const { ctx, asked } = context(w.project, () => "allow")
      const result = yield* w.tool.execute({ name: "release" }, ctx)
      expect(asked).toEqual([{ action: "skill", resources: ["release"], metadata: { location: file } }])
      const text = (result.content[0] as { text: string }).text
      expect(text).toContain("# Releasing\n\nRun scripts/release.sh.")
      expect(text).toContain(file)
      expect(text).toContain(path.dirname(file))
      expect(text.startsWith('<skill_content name="release">')).toBe(true)
      // Upstream's shape (the text given to the model is its `output`), with our `location`.
      expect(result.structured).toEqual({
        name: "release",
        directory: path.dirname(file),
        output: text,
        location: file
      })
      expect(w.tool.name).toBe("skill")
      expect(w.tool.inputSchema).toMatchObject({ required: ["name"] })
    })
  )

  it.scoped("a denied skill is a readable ToolFailure and its body is never returned", () =>
    Effect.gen(function* () {
      const w = yield* setup
      writeSkill(path.join(w.configDir, "skill", "secret", "SKILL.md"), "secret", "TOP SECRET")
      const { ctx, asked } = context(w.project, () => "deny")
      const message = failureMessage(yield* Effect.exit(w.tool.execute({ name: "secret" }, ctx)))
      expect(message).toBe("Permission denied: skill secret")
      expect(message).not.toContain("TOP SECRET")
      expect(asked.map((a) => a.resources)).toEqual([["secret"]])
    })
  )

  it.scoped("an unknown skill or a missing name is a readable ToolFailure, without asking", () =>
    Effect.gen(function* () {
      const w = yield* setup
      const { ctx, asked } = context(w.project, () => "allow")
      expect(failureMessage(yield* Effect.exit(w.tool.execute({ name: "nope" }, ctx)))).toBe(
        'Unknown skill "nope": use the name of one of the skills listed as available to you'
      )
      expect(failureMessage(yield* Effect.exit(w.tool.execute({}, ctx)))).toBe(
        "The skill tool needs the `name` of a skill"
      )
      expect(failureMessage(yield* Effect.exit(w.tool.execute({ name: 3 }, ctx)))).toBe(
        "The skill tool needs the `name` of a skill"
      )
      expect(asked).toEqual([])
    })
  )

  it.scoped("project skills are those of the call's Location", () =>
    Effect.gen(function* () {
      const w = yield* setup
      writeSkill(path.join(w.project, ".opencode", "skills", "local", "SKILL.md"), "local", "Local body")
      const elsewhere = context(path.join(w.dir, "elsewhere"), () => "allow")
      expect(failureMessage(yield* Effect.exit(w.tool.execute({ name: "local" }, elsewhere.ctx)))).toContain(
        "Skills cannot be looked up"
      )
      const here = context(w.project, () => "allow")
      expect(((yield* w.tool.execute({ name: "local" }, here.ctx)).content[0] as { text: string }).text).toContain(
        "Local body"
      )
    })
  )
})
