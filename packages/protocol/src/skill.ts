export * as SkillGroup from "./skill.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Location, Skill } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { documentLocationQuery, LocationQuery } from "./location.js"

/** `{location, data: SkillV2Info[]}` */
export const SkillsResponse = Schema.Struct({
  location: Location.LocationInfo,
  data: Schema.Array(Skill.SkillV2Info)
})
export interface SkillsResponse extends Schema.Schema.Type<typeof SkillsResponse> {}

/**
 * `GET /api/skill`: the skills discovered for the requested Location, in name order, one per name
 * (the nearest definition wins: project `.opencode/skill(s)` folders from the Location up to the
 * project root, over the global config folder's). Each carries its `SKILL.md` path and body. Every
 * skill is listed; which ones an agent may load is decided by its `skill` permission. `location` is
 * the resolved Location (400 when its directory does not exist).
 */
export const list = HttpApiEndpoint.get("list", "/api/skill")
  .setUrlParams(LocationQuery)
  .addSuccess(SkillsResponse)
  .annotate(OpenApi.Identifier, "v2.skill.list")
  .annotate(OpenApi.Summary, "List skills")
  .annotate(
    OpenApi.Description,
    "The skills available in the requested Location, from the global and project skill directories."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

export const group = HttpApiGroup.make("skills").add(list).annotate(ClientProjection.Namespace, "skills")
