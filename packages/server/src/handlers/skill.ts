export * as SkillHandlers from "./skill.js"

import { HttpApiBuilder } from "@effect/platform"
import { Skills } from "@opencode-ai/core"
import type { Skill } from "@opencode-ai/schema"
import { Effect } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"

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
export const layer = HttpApiBuilder.group(ServerApi.api, "skills", (handlers) =>
  Effect.gen(function* () {
    const skills = yield* Skills.Service
    return handlers.handle("list", () =>
      Effect.gen(function* () {
        const location = yield* LocationMiddleware.CurrentLocation
        const data = yield* Effect.orDie(skills.list(location))
        return { location, data: data.map(info) }
      })
    )
  })
)
