export * as AgentGroup from "./agent.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Agent, Location } from "@opencode-ai/schema"
import { Schema } from "effect"
import { documentLocationQuery, LocationQuery } from "./location.js"

/** `{location, data: AgentV2Info[]}` */
export const AgentsResponse = Schema.Struct({
  location: Location.LocationInfo,
  data: Schema.Array(Agent.AgentV2Info)
})
export interface AgentsResponse extends Schema.Schema.Type<typeof AgentsResponse> {}

/**
 * `GET /api/agent`: the enabled agents in catalog order (the built-ins, then those the config
 * defines). An agent the config disables (`agent.<name>.disable`) is absent; hidden agents (the
 * compaction, title and summary agents, or `hidden: true` in the config) are listed with
 * `hidden: true`, for clients to leave out of pickers. `location` is the resolved Location of the
 * request (400 when its directory does not exist).
 */
export const list = HttpApiEndpoint.get("list", "/api/agent")
  .setUrlParams(LocationQuery)
  .addSuccess(AgentsResponse)
  .annotate(OpenApi.Identifier, "v2.agent.list")
  .annotate(OpenApi.Summary, "List agents")
  .annotate(
    OpenApi.Description,
    "The agents of the configuration for the requested Location: the built-in ones (build, plan, general, explore and the hidden ones) with the configured overrides and additions, each with its mode, model, prompt and permission rules."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

export const group = HttpApiGroup.make("agents").add(list).annotate(OpenApi.Title, "opencode HttpApi")
