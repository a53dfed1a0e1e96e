import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { type ConfigInfo, McpServers, PermissionRequests } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { gone, tempDir, world } from "./world.js"

const { reply, text, toolCall, finish } = LLMScript

/** The MCP tool server of these tests (see its header for its tools and environment). */
const toolServer = fileURLToPath(new URL("../fixtures/mcp/tool-server.mjs", import.meta.url))

/** A `local` entry running the tool server over stdio, logging to `logFile`. */
const stdio = (logFile: string): ConfigInfo.McpLocal => ({
  type: "local",
  command: [process.execPath, toolServer],
  environment: { MCP_FIXTURE_LOG: logFile }
})

/**
 * The tool server as its own process over HTTP, for the test's scope: resolves with its base URL once
 * it listens; the scope's close kills it.
 */
const httpServer = (logFile: string) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly child: childProcess.ChildProcess }>((resume) => {
      const child = childProcess.spawn(process.execPath, [toolServer], {
        env: { ...process.env, MCP_FIXTURE_TRANSPORT: "http", MCP_FIXTURE_LOG: logFile },
        stdio: ["ignore", "pipe", "inherit"]
      })
      let out = ""
      child.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString()
        const match = /listening (\S+)/.exec(out)
        if (match !== null) resume(Effect.succeed({ url: match[1]!, child }))
      })
    }),
    ({ child }) => Effect.sync(() => child.kill("SIGKILL"))
  )

/** Whether the log file has `line` yet, polled (at most ~10 s). */
const logged = (file: string, line: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 200; i++) {
      if (fs.existsSync(file) && fs.readFileSync(file, "utf8").split("\n").includes(line)) return true
      yield* Effect.sleep("50 millis")
    }
    return false
  })

type World = Effect.Effect.Success<ReturnType<typeof world>>

const settled = (w: World) => w.run(Effect.flatMap(McpServers.Service, (servers) => servers.settled))

/** The tool names offered in the `index`-th provider request (0-based). */
const offered = (w: World, index: number) =>
  Effect.map(w.server.requests, (requests) =>
    ((requests[index]!.body.tools ?? []) as Array<{ function: { name: string } }>).map((tool) => tool.function.name)
  )

const settlement = (w: World, callID: string) =>
  Effect.map(w.events, (events) =>
    events.find(
      (e) =>
        (e.type === "session.next.tool.success" || e.type === "session.next.tool.failed") &&
        (e.data as any).callID === callID
    )
  )

const outputText = (event: { readonly data: unknown } | undefined): string =>
  ((event?.data as any)?.content ?? []).map((part: any) => part.text ?? "").join("")

/** Each transport the tool server is reached over: its config entry and the transport it must report. */
const transports: ReadonlyArray<{
  readonly name: string
  readonly entry: (logFile: string) => Effect.Effect<ConfigInfo.Mcp, never, import("effect").Scope.Scope>
  readonly kind: McpServers.TransportKind
}> = [
  { name: "stdio", entry: (logFile) => Effect.succeed(stdio(logFile)), kind: "stdio" },
  {
    name: "streamable HTTP",
    entry: (logFile) =>
      Effect.map(httpServer(logFile), ({ url }): ConfigInfo.Mcp => ({ type: "remote", url: `${url}/mcp` })),
    kind: "streamable-http"
  },
  {
    name: "HTTP+SSE (the fallback)",
    entry: (logFile) =>
      Effect.map(httpServer(logFile), ({ url }): ConfigInfo.Mcp => ({ type: "remote", url: `${url}/sse` })),
    kind: "sse"
  }
]

describe("MCP tools in the runner", () => {
  for (const transport of transports) {
    describe(`over ${transport.name}`, () => {
      it.scopedLive("the model is offered the server's tools by prefixed name and calls one", () =>
        Effect.gen(function* () {
          const logFile = path.join(tempDir("opencode-mcp-log-"), "log")
          const w = yield* world({ mcp: { docs: yield* transport.entry(logFile) } })
          yield* settled(w)
          const [status] = yield* w.run(Effect.flatMap(McpServers.Service, (servers) => servers.list))
          expect(status!.status).toMatchObject({ _tag: "Connected", transport: transport.kind })
          yield* w.server.enqueue(
            reply(toolCall("call_echo", "docs_echo", { text: "hello mcp" }), finish("tool-calls")),
            reply(text("done"), finish("stop"))
          )
          yield* w.prompt("echo something")
          yield* w.wait
          const tools = (yield* w.server.requests)[0]!.body.tools as Array<any>
          const echo = tools.find((tool) => tool.function.name === "docs_echo")
          expect(echo.function.description).toBe("Echoes its text")
          expect(echo.function.parameters).toMatchObject({
            type: "object",
            properties: { text: { type: "string" } },
            required: ["text"]
          })
          expect(yield* offered(w, 0)).toEqual(
            expect.arrayContaining(["docs_echo", "docs_hang", "docs_fail", "docs_add_tool", "read", "bash"])
          )
          const success = yield* settlement(w, "call_echo")
          expect(success?.type).toBe("session.next.tool.success")
          expect(outputText(success)).toBe("echo: hello mcp")
          expect((success!.data as any).structured).toEqual({ length: 9 })
          // The model read the result on the next request.
          expect((yield* w.server.requests)[1]!.text).toContain("echo: hello mcp")
        })
      )

      it.scopedLive("a tool that hangs is interrupted: the call settles as interrupted and the server is told", () =>
        Effect.gen(function* () {
          const logFile = path.join(tempDir("opencode-mcp-log-"), "log")
          const w = yield* world({ mcp: { docs: yield* transport.entry(logFile) } })
          yield* settled(w)
          yield* w.server.enqueue(reply(toolCall("call_hang", "docs_hang", {}), finish("tool-calls")))
          yield* w.prompt("hang")
          expect(yield* logged(logFile, "hang started")).toBe(true)
          yield* w.interrupt
          yield* w.wait
          const failed = yield* settlement(w, "call_hang")
          expect(failed?.type).toBe("session.next.tool.failed")
          expect((failed!.data as any).error.message).toBe("Tool execution interrupted")
          // The SDK sent notifications/cancelled: the server saw the call's signal abort.
          expect(yield* logged(logFile, "hang cancelled")).toBe(true)
          // The server is still usable afterwards.
          yield* w.server.enqueue(
            reply(toolCall("call_echo", "docs_echo", { text: "again" }), finish("tool-calls")),
            reply(text("done"), finish("stop"))
          )
          yield* w.prompt("echo again")
          yield* w.wait
          expect(outputText(yield* settlement(w, "call_echo"))).toBe("echo: again")
        })
      )

      it.scopedLive("tools/list_changed: the next Step offers the new tool, and it can be called", () =>
        Effect.gen(function* () {
          const logFile = path.join(tempDir("opencode-mcp-log-"), "log")
          const w = yield* world({ mcp: { docs: yield* transport.entry(logFile) } })
          yield* settled(w)
          yield* w.server.enqueue(
            reply(toolCall("call_add", "docs_add_tool", { name: "extra" }), finish("tool-calls")),
            reply(toolCall("call_extra", "docs_extra", { text: "new" }), finish("tool-calls")),
            reply(text("done"), finish("stop"))
          )
          yield* w.prompt("add a tool")
          yield* w.wait
          expect(yield* offered(w, 0)).not.toContain("docs_extra")
          expect(yield* offered(w, 1)).toContain("docs_extra")
          const extra = yield* settlement(w, "call_extra")
          expect(extra?.type).toBe("session.next.tool.success")
          expect(outputText(extra)).toBe("extra: new")
          const [status] = yield* w.run(Effect.flatMap(McpServers.Service, (servers) => servers.list))
          expect(status!.status._tag === "Connected" && status!.status.tools).toContain("extra")
        })
      )
    })
  }

  it.scopedLive(
    "an error result and a server that exits mid-call are readable tool failures, never a crashed Step",
    () =>
      Effect.gen(function* () {
        const logFile = path.join(tempDir("opencode-mcp-log-"), "log")
        const w = yield* world({ mcp: { docs: stdio(logFile) } })
        yield* settled(w)
        const [before] = yield* w.run(Effect.flatMap(McpServers.Service, (servers) => servers.list))
        const pid = before!.status._tag === "Connected" ? before!.status.pid : undefined
        yield* w.server.enqueue(
          reply(toolCall("call_fail", "docs_fail", {}), finish("tool-calls")),
          reply(toolCall("call_crash", "docs_crash", {}), finish("tool-calls")),
          reply(toolCall("call_after", "docs_echo", { text: "late" }), finish("tool-calls")),
          reply(text("the server is gone"), finish("stop"))
        )
        yield* w.prompt("break things")
        yield* w.wait
        const failed = yield* settlement(w, "call_fail")
        expect(failed?.type).toBe("session.next.tool.failed")
        expect((failed!.data as any).error.message).toBe("the fixture failed on purpose")
        const crashed = yield* settlement(w, "call_crash")
        expect(crashed?.type).toBe("session.next.tool.failed")
        expect((crashed!.data as any).error.message).toMatch(/^MCP server docs failed the crash call: /)
        // The server is Failed; the next Step no longer offers its tools, and a call says why.
        const [after] = yield* w.run(Effect.flatMap(McpServers.Service, (servers) => servers.list))
        expect(after!.status).toEqual({ _tag: "Failed", message: "connection closed" })
        expect(yield* offered(w, 2)).not.toContain("docs_echo")
        expect(yield* offered(w, 2)).toContain("read")
        const late = yield* settlement(w, "call_after")
        expect((late!.data as any).error.message).toContain("Unknown tool: docs_echo")
        // The Step ran to its end: the model's last reply is there.
        const types = (yield* w.events).map((e) => e.type)
        expect(types).toContain("session.next.step.ended")
        expect(types).not.toContain("session.next.step.failed")
        if (pid !== undefined) expect(yield* gone(pid)).toBe(true)
      })
  )

  it.scopedLive("the agent's rules hide denied tools and an `ask` is asked before the server is called", () =>
    Effect.gen(function* () {
      const logFile = path.join(tempDir("opencode-mcp-log-"), "log")
      const w = yield* world({
        mcp: { docs: stdio(logFile) },
        permission: { docs_fail: "deny", docs_hang: "ask" }
      })
      yield* settled(w)
      yield* w.server.enqueue(
        reply(toolCall("call_hang", "docs_hang", {}), finish("tool-calls")),
        reply(text("not allowed"), finish("stop"))
      )
      yield* w.prompt("try")
      // The call waits for an answer; the server has not been called.
      const pending = yield* w.run(
        Effect.gen(function* () {
          const permissions = yield* PermissionRequests.Service
          for (let i = 0; i < 200; i++) {
            const list = yield* permissions.list(w.session.id)
            if (list.length > 0) return list
            yield* Effect.sleep("50 millis")
          }
          return []
        })
      )
      expect(pending).toHaveLength(1)
      expect(pending[0]).toMatchObject({ action: "docs_hang", resources: ["*"] })
      expect(fs.existsSync(logFile) && fs.readFileSync(logFile, "utf8")).toBeFalsy()
      yield* w.run(
        Effect.flatMap(PermissionRequests.Service, (permissions) =>
          permissions.reply(w.session.id, pending[0]!.id, { reply: "reject" })
        )
      )
      yield* w.wait
      expect(yield* offered(w, 0)).not.toContain("docs_fail")
      expect(yield* offered(w, 0)).toContain("docs_echo")
      expect((yield* settlement(w, "call_hang"))?.type).toBe("session.next.tool.failed")
      expect(fs.existsSync(logFile) && fs.readFileSync(logFile, "utf8")).toBeFalsy()
    })
  )

  it.scopedLive("an MCP tool's output is bounded like every tool's", () =>
    Effect.gen(function* () {
      const logFile = path.join(tempDir("opencode-mcp-log-"), "log")
      const w = yield* world({ mcp: { docs: stdio(logFile) } })
      yield* settled(w)
      yield* w.server.enqueue(
        reply(toolCall("call_big", "docs_big", { bytes: 500_000 }), finish("tool-calls")),
        reply(text("done"), finish("stop"))
      )
      yield* w.prompt("big")
      yield* w.wait
      const success = yield* settlement(w, "call_big")
      expect(success?.type).toBe("session.next.tool.success")
      expect(Buffer.byteLength(outputText(success))).toBeLessThanOrEqual(50 * 1024)
      const [managed] = (success!.data as any).outputPaths as Array<string>
      expect(fs.statSync(managed!).size).toBeGreaterThanOrEqual(500_000)
      expect((yield* w.server.requests)[1]!.text.length).toBeLessThan(200_000)
    })
  )
})
