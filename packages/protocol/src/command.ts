export * as CommandGroup from "./command.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Command, Location } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { documentLocationQuery, LocationQuery } from "./location.js"

/** `{location, data: CommandV2Info[]}` */
export const CommandsResponse = Schema.Struct({
  location: Location.LocationInfo,
  data: Schema.Array(Command.CommandV2Info)
})
export interface CommandsResponse extends Schema.Schema.Type<typeof CommandsResponse> {}

/**
 * `GET /api/command`: the custom commands of the requested Location, in name order, one per name:
 * the nearest definition wins (project `.opencode/command(s)` files from the Location up to the
 * project root, over the config's `command` entries, over the global config folder's
 * `command(s)` files). Each carries its template unexpanded. A prompt whose text is `/name args`
 * runs the command `name`. `location` is the resolved Location (400 when its directory does not
 * exist).
 */
export const list = HttpApiEndpoint.get("list", "/api/command")
  .setUrlParams(LocationQuery)
  .addSuccess(CommandsResponse)
  .annotate(OpenApi.Identifier, "v2.command.list")
  .annotate(OpenApi.Summary, "List commands")
  .annotate(
    OpenApi.Description,
    "The custom commands available in the requested Location, from the project and global command " +
      "directories and the config's `command` entries; a prompt whose text starts with `/name` runs one."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

export const group = HttpApiGroup.make("commands").add(list).annotate(ClientProjection.Namespace, "commands")
