export * as AgentGroup from "./agent.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Agent, Errors, Location, Model } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
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

/** `POST /api/agent/generate` body: what the agent should do, and optionally the model to ask. */
export const GenerateBody = Schema.Struct({
  description: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(10_000)).annotations({
    description: "What the agent should do, in your words (1 to 10,000 characters)."
  }),
  model: Schema.optional(Model.ModelRef).annotations({
    description: "The model that writes the configuration; default: the configured default model."
  })
})
export interface GenerateBody extends Schema.Schema.Type<typeof GenerateBody> {}

export const GenerateResponse = Schema.Struct({ data: Agent.GeneratedAgent })
export interface GenerateResponse extends Schema.Schema.Type<typeof GenerateResponse> {}

/**
 * `POST /api/agent/generate` (extension; seed 003's agent-generation request): the model proposes an
 * agent configuration for a description. Nothing is saved. A model the catalog does not offer (or
 * none configured) is a 400; a provider failure or an unusable answer is a 503
 * `ServiceUnavailableError` (asking again may succeed).
 */
export const generate = HttpApiEndpoint.post("generate", "/api/agent/generate")
  .setPayload(GenerateBody)
  .addSuccess(GenerateResponse)
  .addError(Errors.ServiceUnavailableError, { status: 503 })
  .annotate(OpenApi.Identifier, "v2.agent.generate")
  .annotate(OpenApi.Summary, "Generate an agent")
  .annotate(
    OpenApi.Description,
    "Extension. The model writes an agent configuration (an unused lowercase-hyphenated `identifier`, `whenToUse` with examples, and a `systemPrompt`) from a description. Nothing is saved: add it to the config as `agent.<identifier>` to keep it. An unknown model is a 400; a provider failure or an unusable answer is a 503."
  )

export const group = HttpApiGroup.make("agents")
  .add(list)
  .add(generate)
  .annotate(OpenApi.Title, "opencode HttpApi")
  .annotate(ClientProjection.Namespace, "agents")
