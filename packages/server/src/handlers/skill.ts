export * as SkillHandlers from "./skill.js"

import { HttpApiBuilder } from "@effect/platform"
import { Locations, Skills } from "@opencode-ai/core"
import { Api } from "@opencode-ai/protocol"
import type { Skill } from "@opencode-ai/schema"
import { Effect } from "effect"

/** A discovered skill in the wire shape. */
export const info = (skill: Skills.Info): Skill.SkillV2Info => ({
  name: skill.name,
  description: skill.description,
  ...(skill.slash === undefined ? {} : { slash: skill.slash }),
  location: skill.location,
  content: skill.content
})

/**
 * The `skills` group: the skills of the requested Location, read from disk at each request. A skill
 * folder that cannot be searched (not merely missing) is a defect here (500): the contract declares
 * no error for it.
 */
export const layer = HttpApiBuilder.group(Api.OpenCodeApi, "skills", (handlers) =>
  Effect.gen(function* () {
    const skills = yield* Skills.Service
    const locations = yield* Locations.Service
    return handlers.handle("list", ({ urlParams }) =>
      Effect.gen(function* () {
        const location = yield* locations.resolve(urlParams.location)
        const data = yield* Effect.orDie(skills.list(location))
        return { location, data: data.map(info) }
      })
    )
  })
)
