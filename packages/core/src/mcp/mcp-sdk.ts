/**
 * The parts of the MCP SDK that McpServers uses at run time, with the stdio transport built on it.
 * McpServers imports this module on its first connection, so a Core with no MCP server configured
 * never loads the SDK (nor zod, which it brings).
 */
export { Client } from "@modelcontextprotocol/sdk/client/index.js"
export { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
export { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js"
export { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
export { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
export { LocalTransport } from "./local-transport.js"
