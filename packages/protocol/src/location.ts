export * as LocationGroup from "./location.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Location } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"

/**
 * The `location` query parameter in deepObject style: `?location[directory]=/x&location[workspace]=wrk_…`.
 * Decoded, it is `{ location?: { directory?, workspace? } }`.
 */
export const LocationQuery = Schema.transform(
  Schema.Struct({
    "location[directory]": Schema.optional(Schema.String),
    "location[workspace]": Schema.optional(Schema.String)
  }),
  Schema.Struct({
    location: Schema.optional(
      Schema.Struct({ directory: Schema.optional(Schema.String), workspace: Schema.optional(Schema.String) })
    )
  }),
  {
    strict: true,
    decode: (flat) => {
      const location = {
        ...(flat["location[directory]"] !== undefined ? { directory: flat["location[directory]"] } : {}),
        ...(flat["location[workspace]"] !== undefined ? { workspace: flat["location[workspace]"] } : {})
      }
      return Object.keys(location).length === 0 ? {} : { location }
    },
    encode: ({ location }) => ({
      ...(location?.directory !== undefined ? { "location[directory]": location.directory } : {}),
      ...(location?.workspace !== undefined ? { "location[workspace]": location.workspace } : {})
    })
  }
)

/**
 * An `OpenApi.Transform` for an operation whose query includes {@link LocationQuery}: documents the
 * bracketed keys as the one deepObject `location` parameter they are on the wire.
 */
export const documentLocationQuery = (operation: Record<string, unknown>): Record<string, unknown> => ({
  ...operation,
  parameters: [
    ...(operation.parameters as ReadonlyArray<{ readonly name: string }>).filter(
      (p) => !p.name.startsWith("location[")
    ),
    {
      name: "location",
      in: "query",
      schema: {
        type: "object",
        properties: { directory: { type: "string" }, workspace: { type: "string" } },
        additionalProperties: false
      },
      required: false,
      style: "deepObject",
      explode: true
    }
  ]
})

/** `GET /api/location`: resolves the requested (or the server's default) Location. */
export const get = HttpApiEndpoint.get("get", "/api/location")
  .setUrlParams(LocationQuery)
  .addSuccess(Location.LocationInfo)
  .annotate(OpenApi.Identifier, "v2.location.get")
  .annotate(OpenApi.Summary, "Resolve a location")
  .annotate(
    OpenApi.Description,
    "Resolves a directory (default: the server's working directory) to its project, worktree root and Location, as every Location-scoped route does."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

export const group = HttpApiGroup.make("location")
  .add(get)
  .annotate(OpenApi.Title, "opencode HttpApi")
  .annotate(ClientProjection.Namespace, "location")
