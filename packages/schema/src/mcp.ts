export * as Mcp from "./mcp.js"

import { Schema } from "effect"

/**
 * A configured MCP server and where it stands (`GET /api/mcp`): `status` is `disabled`
 * (`enabled: false`), `connecting`, `connected` or `failed`. A connected server names the
 * `transport` it was reached over and its `tools` by their runtime names (server-prefixed, the
 * permission actions); a failed one says why in `error`. `tools` is empty unless connected.
 */
export const McpServerInfo = Schema.Struct({
  name: Schema.String,
  status: Schema.Literal("disabled", "connecting", "connected", "failed"),
  transport: Schema.optional(Schema.Literal("stdio", "streamable-http", "sse")),
  tools: Schema.Array(Schema.String),
  error: Schema.optional(Schema.String)
}).annotations({ identifier: "McpServerInfo" })
export interface McpServerInfo extends Schema.Schema.Type<typeof McpServerInfo> {}
