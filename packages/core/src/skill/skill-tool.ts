export * as SkillTool from "./skill-tool.js"

/**
 * The `skill` tool: loads one skill's instructions into the conversation. The model names a skill
 * from its skill guidance; the tool finds it for the call's Location, asks permission (`skill` on the
 * skill's name, under the rules of the agent that issued the call), then returns the body and where
 * the skill lives, so relative paths in it can be resolved. An unknown skill, a denied or rejected
 * permission, or a skill folder that cannot be searched is a ToolFailure the model can read.
 */

import * as nodePath from "node:path"
import type { Location, ToolStructured } from "@opencode-ai/schema"
import { Effect, Layer, Option } from "effect"
import { Locations } from "../location/locations.js"
import { ToolRegistry } from "../tool/tool-registry.js"
import { Skills } from "./skills.js"

export const name = "skill"

export const description = [
  "Load a skill: specialised instructions and workflows for a particular kind of task.",
  "Call it with the name of one of the skills listed as available to you when a task fits that skill's description;",
  "the skill's instructions are returned, with the directory its relative paths refer to."
].join(" ")

export const inputSchema = {
  type: "object",
  properties: {
    name: { type: "string", description: "The name of the skill to load, as listed among the available skills" }
  },
  required: ["name"],
  additionalProperties: false
} as const

/** What the model reads: the skill's instructions, framed with its name and base directory. */
export const render = (skill: Skills.Info): string =>
  [
    `<skill_content name="${skill.name}">`,
    skill.content,
    "",
    `This skill is defined in ${skill.location}.`,
    `Paths it mentions relative to itself (scripts, references, assets) are inside ${nodePath.dirname(skill.location)}.`,
    "</skill_content>"
  ].join("\n")

/**
 * The tool over `skills`; `resolve` gives the Location of a call's directory (so project skills are
 * looked up where the session works).
 */
export const make = (
  skills: Pick<Skills.Interface, "get">,
  resolve: (directory: string) => Effect.Effect<Location.LocationInfo, unknown>
): ToolRegistry.Tool => ({
  name,
  description,
  inputSchema,
  execute: (input, context) =>
    Effect.gen(function* () {
      const requested = typeof input.name === "string" ? input.name.trim() : ""
      if (requested === "")
        return yield* new ToolRegistry.ToolFailure({ message: "The skill tool needs the `name` of a skill" })
      const location = yield* resolve(context.directory).pipe(
        Effect.mapError(
          () => new ToolRegistry.ToolFailure({ message: `Skills cannot be looked up in ${context.directory}` })
        )
      )
      const found = yield* skills
        .get(location, requested)
        .pipe(
          Effect.mapError(
            (error) => new ToolRegistry.ToolFailure({ message: `Skills cannot be loaded: ${error.message}` })
          )
        )
      if (Option.isNone(found)) {
        return yield* new ToolRegistry.ToolFailure({
          message: `Unknown skill "${requested}": use the name of one of the skills listed as available to you`
        })
      }
      const skill = found.value
      yield* context.ask({ action: "skill", resources: [skill.name], metadata: { location: skill.location } })
      const output = render(skill)
      // Structured as upstream's skill result (with our `location`): the text is also its `output`.
      const structured: ToolStructured.Skill = {
        name: skill.name,
        directory: nodePath.dirname(skill.location),
        output,
        location: skill.location
      }
      return { content: [{ type: "text" as const, text: output }], structured }
    })
})

/**
 * Registers the skill tool in the ToolRegistry for the lifetime of the layer (project skills are
 * those of the calling session's Location).
 */
export const layer: Layer.Layer<never, never, ToolRegistry.Service | Skills.Service | Locations.Service> =
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const registry = yield* ToolRegistry.Service
      const skills = yield* Skills.Service
      const locations = yield* Locations.Service
      yield* registry.register(make(skills, (directory) => locations.resolve({ directory })))
    })
  )
