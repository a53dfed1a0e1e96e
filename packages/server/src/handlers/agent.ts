export * as AgentHandlers from "./agent.js"

import { HttpApiBuilder } from "@effect/platform"
import { type AgentCatalog, AgentGeneration, AgentPrompt, Config, Traced } from "@opencode-ai/core"
import { Agent } from "@opencode-ai/schema"
import { Effect, Schema } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"

const isColor = Schema.is(Agent.AgentColor)

const withSystem = (system: string | undefined) => (system === undefined ? {} : { system })

/**
 * An agent of the catalog in the wire shape. `system` is the agent's own system text: its config
 * `prompt`, else its built-in one (`AgentPrompt.own`: explore, compaction, title, summary); absent for
 * agents that take their model family's prompt, as upstream leaves it. `color` is the config's `agent.<name>.color` when it is a valid colour.
 */
export const info = (agent: AgentCatalog.Agent, color: string | undefined): Agent.AgentV2Info => ({
  id: agent.name,
  ...(agent.model === undefined ? {} : { model: agent.model }),
  request: { headers: {}, body: {} },
  ...withSystem(agent.prompt ?? AgentPrompt.own(agent.name)),
  ...(agent.description === undefined ? {} : { description: agent.description }),
  mode: agent.mode,
  hidden: agent.hidden,
  ...(color !== undefined && isColor(color) ? { color } : {}),
  ...(agent.steps === undefined ? {} : { steps: agent.steps }),
  permissions: agent.permission
})

/**
 * The `agents` group: the enabled agents in catalog order. Disabled agents are absent; hidden ones
 * are listed with `hidden: true`. The request's `location` is resolved and echoed; the catalog is
 * the instance's. `generate` is the agent-generation request (see AgentGeneration).
 */
export const layer = HttpApiBuilder.group(ServerApi.api, "agents", (handlers) =>
  Effect.gen(function* () {
    const config = yield* Config.Service
    const generation = yield* AgentGeneration.Service
    const agents = config.agents.map((agent) => info(agent, config.info.agent?.[agent.name]?.color))
    return handlers
      .handle("list", () => Effect.map(LocationMiddleware.CurrentLocation, (location) => ({ location, data: agents })))
      .handle(
        "generate",
        Traced.fn("AgentHandlers.generate")(function* ({ payload }) {
          return { data: yield* generation.generate(payload) }
        })
      )
  })
)
