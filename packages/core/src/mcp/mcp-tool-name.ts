export * as McpToolName from "./mcp-tool-name.js"

/**
 * The name an MCP server's tool goes by in this runtime, as upstream names it: the server's config
 * name and the tool's own name, each with every character outside `[a-zA-Z0-9_-]` replaced by `_`,
 * joined by `_`. Server `my docs` with tool `search.v2` is `my_docs_search_v2`.
 *
 * This is also the tool's permission *action*: `"permission": {"my_docs_*": "deny"}` denies every
 * tool of that server, `{"my_docs_search_v2": "deny"}` one of them. Two servers whose sanitized names
 * collide share a prefix; keep server names distinct in `[a-zA-Z0-9_-]` to tell them apart.
 */

/** `value` with every character outside `[a-zA-Z0-9_-]` replaced by `_`. */
export const sanitize = (value: string): string => value.replace(/[^a-zA-Z0-9_-]/g, "_")

/** The runtime name (and permission action) of `server`'s tool `tool`. Pure. */
export const make = (server: string, tool: string): string => `${sanitize(server)}_${sanitize(tool)}`
