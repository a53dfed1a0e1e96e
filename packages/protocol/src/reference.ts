export * as ReferenceGroup from "./reference.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Location, Reference } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { documentLocationQuery, LocationQuery } from "./location.js"

/** `{location, data: ReferenceInfo[]}` */
export const ReferencesResponse = Schema.Struct({
  location: Location.LocationInfo,
  data: Schema.Array(Reference.ReferenceInfo)
})
export interface ReferencesResponse extends Schema.Schema.Type<typeof ReferencesResponse> {}

/**
 * `GET /api/reference`: the configured project references (`reference` in opencode.json), in name
 * order, hidden ones included, each resolved for the requested Location: a local path against the
 * project root, a git repository to the directory its checkout belongs in. `location` is the
 * resolved Location (400 when its directory does not exist).
 */
export const list = HttpApiEndpoint.get("list", "/api/reference")
  .setUrlParams(LocationQuery)
  .addSuccess(ReferencesResponse)
  .annotate(OpenApi.Identifier, "v2.reference.list")
  .annotate(OpenApi.Summary, "List project references")
  .annotate(
    OpenApi.Description,
    "The project references configured for the requested Location: extra directories or git repositories the agent may consult."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

export const group = HttpApiGroup.make("reference").add(list).annotate(ClientProjection.Namespace, "reference")
