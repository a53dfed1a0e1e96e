import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { Config, type ConfigInfo, Instructions, McpServers, McpToolName, ToolRegistry } from "@opencode-ai/core"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { alive, captureLogs, gone, local, tempDir } from "./world.js"

const toolServer = fileURLToPath(new URL("../fixtures/mcp/tool-server.mjs", import.meta.url))
const hostExitChild = fileURLToPath(new URL("./host-exit.child.ts", import.meta.url))

/** A local tool server that starts a `sleep` child of its own, logging its pid to `logFile`. */
const spawning = (logFile: string): ConfigInfo.McpLocal => ({
  type: "local",
  command: [process.execPath, toolServer],
  environment: { MCP_FIXTURE_LOG: logFile, MCP_FIXTURE_SPAWN: "1" }
})

/** The pid the tool server logged for its own child (polled, at most ~5 s). */
const childPid = (logFile: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 100; i++) {
      const match = fs.existsSync(logFile) ? /^child (\d+)$/m.exec(fs.readFileSync(logFile, "utf8")) : null
      if (match !== null) return Number(match[1])
      yield* Effect.sleep("50 millis")
    }
    throw new Error("the server logged no child")
  })

/** The process group of `pid` (field 5 of /proc/PID/stat). */
const processGroup = (pid: number): number => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2])
}

const allowAll = [{ action: "*", resource: "*", effect: "allow" as const }]
const deny = (action: string) => [...allowAll, { action, resource: "*", effect: "deny" as const }]

/** McpServers over `mcp`, built in `scope` (default: the test's), with its logs captured. */
const servers = (mcp: Readonly<Record<string, ConfigInfo.Mcp>>, scope?: Scope.Scope) =>
  Effect.gen(function* () {
    const logs = captureLogs()
    const layer = McpServers.layer({ env: {}, directory: tempDir("opencode-mcp-cwd-") }).pipe(
      Layer.provideMerge(ToolRegistry.layer),
      Layer.provide(Config.layerTest({ mcp }))
    )
    const built = scope === undefined ? Layer.build(layer) : Layer.buildWithScope(layer, scope)
    const context = yield* built.pipe(Effect.provide(logs.layer), Effect.orDie)
    return {
      service: Context.get(context, McpServers.Service),
      registry: Context.get(context, ToolRegistry.Service),
      logs: logs.lines
    }
  })

const statusOf = (service: McpServers.Interface, name: string) =>
  Effect.map(service.list, (list) => list.find((server) => server.name === name)!.status)

/** A loopback HTTP server for the test's scope, closed (with its open streams) when the scope closes. */
const listen = (handler: http.RequestListener) =>
  Effect.acquireRelease(
    Effect.async<http.Server>((resume) => {
      const server = http.createServer(handler)
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`))

describe("McpServers", () => {
  it("tool names are the sanitized server and tool names joined by _ (the permission action)", () => {
    expect(McpToolName.make("docs", "search")).toBe("docs_search")
    expect(McpToolName.make("my docs", "search.v2")).toBe("my_docs_search_v2")
    expect(McpToolName.make("a-b", "c_d")).toBe("a-b_c_d")
  })

  it("select: usable servers by name; none while one is connecting; failed ones simply absent", () => {
    const connected = (instructions: string | undefined, tools: ReadonlyArray<string>): McpServers.Status => ({
      _tag: "Connected",
      transport: "stdio",
      tools,
      ...(instructions === undefined ? {} : { instructions })
    })
    const all: ReadonlyArray<McpServers.Server> = [
      { name: "zeta", status: connected("Zeta rules.", ["run"]) },
      { name: "alpha", status: connected("Alpha rules.", []) },
      { name: "quiet", status: connected(undefined, []) },
      { name: "blank", status: connected("  \n", ["x"]) },
      { name: "broken", status: { _tag: "Failed", message: "exit 1" } },
      { name: "off", status: { _tag: "Disabled" } }
    ]
    expect(McpServers.select(all, allowAll)).toEqual([
      { name: "alpha", instructions: "Alpha rules." },
      { name: "zeta", instructions: "Zeta rules." }
    ])
    // Denying every tool of a server withdraws it; a server without tools stays.
    expect(McpServers.select(all, deny("zeta_*"))).toEqual([{ name: "alpha", instructions: "Alpha rules." }])
    expect(McpServers.select(all, deny("*"))).toEqual([{ name: "alpha", instructions: "Alpha rules." }])
    // Denying some resources only is not denying the tool.
    expect(
      McpServers.select(all, [...allowAll, { action: "zeta_run", resource: "/secret", effect: "deny" }])
    ).toHaveLength(2)
    // A later allow of one tool re-enables the server.
    expect(
      McpServers.select(all, [...deny("zeta_*"), { action: "zeta_run", resource: "*", effect: "allow" }])
    ).toHaveLength(2)
    expect(McpServers.select([{ name: "off", status: { _tag: "Disabled" } }], allowAll)).toBe(Instructions.absent)
    expect(McpServers.select([...all, { name: "slow", status: { _tag: "Connecting" } }], allowAll)).toBe(
      Instructions.unavailable
    )
  })

  it.scopedLive("a local server: its instructions and tools over stdio, with its own environment", () =>
    Effect.gen(function* () {
      const { service } = yield* servers({
        docs: local({
          MCP_FIXTURE_INSTRUCTIONS: "Search the docs first.\nCite titles.",
          MCP_FIXTURE_TOOLS: "search,fetch"
        }),
        off: { ...local({ MCP_FIXTURE_INSTRUCTIONS: "Never." }), enabled: false }
      })
      yield* service.settled
      const status = yield* statusOf(service, "docs")
      expect(status).toMatchObject({
        _tag: "Connected",
        transport: "stdio",
        instructions: "Search the docs first.\nCite titles.",
        tools: ["search", "fetch"]
      })
      expect(yield* statusOf(service, "off")).toEqual({ _tag: "Disabled" })
      expect(yield* service.guidance(allowAll)).toEqual([
        { name: "docs", instructions: "Search the docs first.\nCite titles." }
      ])
      // Denying one of its two tools keeps it; denying both withdraws it.
      expect(yield* service.guidance(deny("docs_fetch"))).toHaveLength(1)
      expect(yield* service.guidance(deny("docs_*"))).toBe(Instructions.absent)
    })
  )

  it.scopedLive("closing the scope kills a local server's process", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const { service } = yield* servers(
        { docs: local({ MCP_FIXTURE_INSTRUCTIONS: "Rules.", MCP_FIXTURE_TOOLS: "search" }) },
        scope
      )
      yield* service.settled
      const status = yield* statusOf(service, "docs")
      if (status._tag !== "Connected" || status.pid === undefined)
        throw new Error(`not connected: ${JSON.stringify(status)}`)
      expect(alive(status.pid)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(yield* gone(status.pid)).toBe(true)
    })
  )

  it.scopedLive("a local server leads its own process group; closing the scope ends its whole tree", () =>
    Effect.gen(function* () {
      const logFile = path.join(tempDir("opencode-mcp-log-"), "log")
      const scope = yield* Scope.make()
      const { service } = yield* servers({ docs: spawning(logFile) }, scope)
      yield* service.settled
      const status = yield* statusOf(service, "docs")
      if (status._tag !== "Connected" || status.pid === undefined)
        throw new Error(`not connected: ${JSON.stringify(status)}`)
      expect(processGroup(status.pid)).toBe(status.pid)
      expect(processGroup(status.pid)).not.toBe(processGroup(process.pid))
      const child = yield* childPid(logFile)
      expect(alive(child)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(yield* gone(status.pid)).toBe(true)
      // The server's own child (which ignores stdin) went with it.
      expect(yield* gone(child)).toBe(true)
    })
  )

  it.scopedLive("a host that exits with a local server still connected takes the server's tree with it", () =>
    Effect.gen(function* () {
      const logFile = path.join(tempDir("opencode-mcp-log-"), "log")
      const output = yield* Effect.async<string>((resume) => {
        const host = childProcess.spawn(
          process.execPath,
          ["--import", "tsx", hostExitChild, JSON.stringify(spawning(logFile))],
          { stdio: ["ignore", "pipe", "inherit"] }
        )
        let out = ""
        host.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()))
        host.once("exit", () => resume(Effect.succeed(out)))
      })
      const match = /connected (\d+)/.exec(output)
      expect(match, output).not.toBeNull()
      const pid = Number(match![1])
      const child = yield* childPid(logFile)
      expect(yield* gone(pid)).toBe(true)
      expect(yield* gone(child)).toBe(true)
    })
  )

  it.scopedLive("a server that fails to start is Failed, logged with its stderr, and absent; the others connect", () =>
    Effect.gen(function* () {
      const { service, logs } = yield* servers({
        broken: local({ MCP_FIXTURE_CRASH: "cannot open the index", MCP_FIXTURE_INSTRUCTIONS: "Broken rules." }),
        missing: { type: "local", command: [path.join(tempDir("opencode-mcp-none-"), "no-such-binary")] },
        empty: { type: "local", command: [] },
        docs: local({ MCP_FIXTURE_INSTRUCTIONS: "Docs rules." })
      })
      yield* service.settled
      const broken = yield* statusOf(service, "broken")
      expect(broken._tag).toBe("Failed")
      expect(broken._tag === "Failed" && broken.message).toContain("cannot open the index")
      expect((yield* statusOf(service, "missing"))._tag).toBe("Failed")
      expect((yield* statusOf(service, "empty"))._tag).toBe("Failed")
      expect(yield* service.guidance(allowAll)).toEqual([{ name: "docs", instructions: "Docs rules." }])
      expect(
        logs.some(
          (line) =>
            line.startsWith("WARN") &&
            line.includes("MCP server broken failed to connect") &&
            line.includes("cannot open the index")
        )
      ).toBe(true)
      expect(logs.some((line) => line.includes("MCP server missing failed to connect"))).toBe(true)
    })
  )

  it.scopedLive("connecting is unavailable, never waited for; the deadline ends it and kills the process", () =>
    Effect.gen(function* () {
      const pidFile = path.join(tempDir("opencode-mcp-pid-"), "pid")
      const { service, logs } = yield* servers({
        slow: local(
          { MCP_FIXTURE_INSTRUCTIONS: "Slow rules.", MCP_FIXTURE_DELAY_MS: "60000", MCP_FIXTURE_PIDFILE: pidFile },
          { timeout: 1500 }
        )
      })
      expect((yield* statusOf(service, "slow"))._tag).toBe("Connecting")
      expect(yield* service.guidance(allowAll)).toBe(Instructions.unavailable)
      yield* service.settled
      const status = yield* statusOf(service, "slow")
      expect(status).toEqual({ _tag: "Failed", message: "not connected within 1500 ms" })
      // Failed is a successful observation: absent, not unavailable.
      expect(yield* service.guidance(allowAll)).toBe(Instructions.absent)
      expect(
        logs.some((line) => line.includes("MCP server slow failed to connect: not connected within 1500 ms"))
      ).toBe(true)
      expect(yield* gone(Number(fs.readFileSync(pidFile, "utf8")))).toBe(true)
    })
  )

  it.scopedLive("a remote server over streamable HTTP on loopback, with the configured headers", () =>
    Effect.gen(function* () {
      const tokens: Array<string | undefined> = []
      const url = yield* listen(async (req, res) => {
        tokens.push(req.headers["x-token"] as string | undefined)
        const server = new McpServer({ name: "remote", version: "1.0.0" }, { instructions: "Remote rules." })
        server.registerTool("lookup", { description: "Look up" }, async () => ({
          content: [{ type: "text", text: "ok" }]
        }))
        const transport = new StreamableHTTPServerTransport({}) // stateless: no session ids
        res.on("close", () => void server.close())
        await server.connect(transport)
        await transport.handleRequest(req, res)
      })
      const { service } = yield* servers({
        remote: { type: "remote", url: `${url}/mcp`, headers: { "x-token": "secret" } }
      })
      yield* service.settled
      expect(yield* statusOf(service, "remote")).toEqual({
        _tag: "Connected",
        transport: "streamable-http",
        instructions: "Remote rules.",
        tools: ["lookup"]
      })
      expect(tokens.length).toBeGreaterThan(0)
      expect(tokens.every((token) => token === "secret")).toBe(true)
      expect(yield* service.guidance(deny("remote_lookup"))).toBe(Instructions.absent)
    })
  )

  it.scopedLive("a remote server that only speaks the older HTTP+SSE transport is reached through the fallback", () =>
    Effect.gen(function* () {
      const sessions = new Map<string, SSEServerTransport>()
      const url = yield* listen(async (req, res) => {
        const target = new URL(req.url ?? "/", "http://127.0.0.1")
        if (req.method === "GET" && target.pathname === "/sse") {
          const transport = new SSEServerTransport("/messages", res)
          sessions.set(transport.sessionId, transport)
          await new McpServer({ name: "legacy", version: "1.0.0" }, { instructions: "Legacy rules." }).connect(
            transport
          )
          return
        }
        const transport = sessions.get(target.searchParams.get("sessionId") ?? "")
        if (req.method === "POST" && target.pathname === "/messages" && transport !== undefined) {
          await transport.handlePostMessage(req, res)
          return
        }
        res.writeHead(405).end()
      })
      const { service } = yield* servers({ legacy: { type: "remote", url: `${url}/sse` } })
      yield* service.settled
      expect(yield* statusOf(service, "legacy")).toEqual({
        _tag: "Connected",
        transport: "sse",
        instructions: "Legacy rules.",
        tools: []
      })
      expect(yield* service.guidance(deny("*"))).toEqual([{ name: "legacy", instructions: "Legacy rules." }])
    })
  )

  it.scopedLive("an unreachable remote server is Failed after both transports, without failing anything else", () =>
    Effect.gen(function* () {
      const url = yield* listen((_req, res) => void res.writeHead(404).end())
      const { service, logs } = yield* servers({ gone: { type: "remote", url: `${url}/mcp`, timeout: 5000 } })
      yield* service.settled
      const status = yield* statusOf(service, "gone")
      expect(status._tag).toBe("Failed")
      expect(status._tag === "Failed" && status.message).toMatch(/streamable-http: .*; sse: /)
      expect(logs.some((line) => line.includes("MCP server gone failed to connect"))).toBe(true)
    })
  )
})
