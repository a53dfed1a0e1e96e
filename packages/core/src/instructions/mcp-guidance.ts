export * as McpGuidance from "./mcp-guidance.js"

/**
 * MCP guidance (`mcp/instructions`), an Instruction Source the runner composes explicitly: the
 * instructions of configured MCP servers that declare no tools or have at least one tool the agent
 * may use (the producer filters), in server-name order (so a reordering alone is never a change).
 * Nothing is said while there are none.
 */

import { Effect, Schema } from "effect"
import { Instructions } from "./instructions.js"

export const key: Instructions.Key = Instructions.key("mcp/instructions")

export const Server = Schema.Struct({ name: Schema.String, instructions: Schema.String }).annotations({
  identifier: "McpGuidanceItem"
})
export interface Server extends Schema.Schema.Type<typeof Server> {}

export const Value = Schema.Array(Server).annotations({ identifier: "McpGuidance" })
export type Value = typeof Value.Type

const list = (servers: Value): string =>
  [
    "<mcp_instructions>",
    ...servers.flatMap((server) => [
      `  <server name="${server.name}">`,
      ...server.instructions.split("\n").map((line) => `    ${line}`),
      "  </server>"
    ]),
    "</mcp_instructions>"
  ].join("\n")

const none = "No MCP server instructions apply any more."

export const baseline = (servers: Value): string => (servers.length === 0 ? "" : list(servers))

/** The newly effective set; stated plainly when the model was told of none before. */
export const update = (servers: Value, previous: Value): string =>
  previous.length === 0
    ? baseline(servers)
    : servers.length === 0
      ? none
      : ["The MCP server instructions now in effect:", list(servers)].join("\n")

export const removed = (previous: Value): string => (previous.length === 0 ? "" : none)

const byName = (servers: Value): Value => [...servers].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

/** The MCP guidance source, observed with `load`. */
export const make = <R>(load: Effect.Effect<Instructions.Observation<Value>, never, R>): Instructions.Instructions<R> =>
  Instructions.make({
    key,
    codec: Value,
    load: Effect.map(load, (observed) => (Array.isArray(observed) ? byName(observed as Value) : observed)),
    baseline,
    update,
    removed
  })
