// A tiny real MCP server over stdio, built with the SDK's server classes, for the McpServers tests.
// Plain .mjs so that Node 20 runs it without a loader. Configured by its environment:
//   MCP_FIXTURE_INSTRUCTIONS  the `instructions` of its initialize result (none when unset)
//   MCP_FIXTURE_TOOLS         comma-separated tool names (no tools capability when unset or empty)
//   MCP_FIXTURE_DELAY_MS      wait this long before answering anything (a slow start)
//   MCP_FIXTURE_PIDFILE       write the process id here once started
//   MCP_FIXTURE_CRASH         print this to stderr and exit 3 at once (a server that cannot start)
import * as fs from "node:fs"

const env = process.env
// Before loading the SDK, so that the pid is known even if the process is killed while loading.
if (env.MCP_FIXTURE_PIDFILE) fs.writeFileSync(env.MCP_FIXTURE_PIDFILE, String(process.pid))
if (env.MCP_FIXTURE_CRASH) {
  process.stderr.write(`${env.MCP_FIXTURE_CRASH}\n`)
  process.exit(3)
}
const { McpServer } = await import("@modelcontextprotocol/sdk/server/mcp.js")
const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js")

const server = new McpServer(
  { name: "fixture", version: "1.0.0" },
  env.MCP_FIXTURE_INSTRUCTIONS ? { instructions: env.MCP_FIXTURE_INSTRUCTIONS } : {}
)
for (const name of (env.MCP_FIXTURE_TOOLS ?? "").split(",").filter((name) => name !== "")) {
  server.registerTool(name, { description: `The ${name} tool` }, async () => ({
    content: [{ type: "text", text: name }]
  }))
}

const delay = Number(env.MCP_FIXTURE_DELAY_MS ?? 0)
if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay))
await server.connect(new StdioServerTransport())
