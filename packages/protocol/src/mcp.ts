export * as McpGroup from "./mcp.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Mcp } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"

/** `{data: McpServerInfo[]}` */
export const McpServersResponse = Schema.Struct({ data: Schema.Array(Mcp.McpServerInfo) })
export interface McpServersResponse extends Schema.Schema.Type<typeof McpServersResponse> {}

/**
 * `GET /api/mcp` (an extension of the contract): every configured MCP server (`mcp` in
 * opencode.json), enabled or not, in name order, with its current status. The servers belong to the
 * running instance, not to a Location. Reads only; never waits for a connection.
 */
export const list = HttpApiEndpoint.get("list", "/api/mcp")
  .addSuccess(McpServersResponse)
  .annotate(OpenApi.Identifier, "v2.mcp.list")
  .annotate(OpenApi.Summary, "List MCP servers")
  .annotate(
    OpenApi.Description,
    "Extension. Every configured MCP server with its status: disabled, connecting, connected (with its transport and tool names) or failed (with the error)."
  )

export const group = HttpApiGroup.make("mcp").add(list).annotate(ClientProjection.Namespace, "mcp")
