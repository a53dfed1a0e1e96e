export * as McpHandlers from "./mcp.js"

import { HttpApiBuilder } from "@effect/platform"
import { McpServers, McpToolName, Traced } from "@opencode-ai/core"
import type { Mcp } from "@opencode-ai/schema"
import { Effect } from "effect"
import { ServerApi } from "../api.js"

/** One server's status in the wire shape. */
const info = ({ name, status }: McpServers.Server): Mcp.McpServerInfo => {
  switch (status._tag) {
    case "Disabled":
      return { name, status: "disabled", tools: [] }
    case "Connecting":
      return { name, status: "connecting", tools: [] }
    case "Connected":
      return {
        name,
        status: "connected",
        transport: status.transport,
        tools: status.tools.map((tool) => McpToolName.make(name, tool))
      }
    case "Failed":
      return { name, status: "failed", tools: [], error: status.message }
  }
}

/** The `mcp` group: the configured MCP servers and their statuses. */
export const layer = HttpApiBuilder.group(ServerApi.api, "mcp", (handlers) =>
  Effect.gen(function* () {
    const servers = yield* McpServers.Service
    return handlers.handle(
      "list",
      Traced.fn("McpHandlers.list")(function* () {
        return { data: (yield* servers.list).map(info) }
      })
    )
  })
)
