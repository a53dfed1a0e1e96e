import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { McpServers, SessionInput, SessionRunner } from "@opencode-ai/core"
import { ChatRequest, LLMScript, SampleFiles } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { world } from "./world.js"

const { reply, text, toolCall, finish } = LLMScript

/**
 * The agent's reach in one session: a PNG attachment the provider sees natively, an MCP tool on a
 * stdio server and one on an HTTP server, a delegation to `explore` that greps and reads, and a
 * web page fetched from a loopback server, all real processes and sockets.
 */

const toolServer = fileURLToPath(new URL("../fixtures/mcp/tool-server.mjs", import.meta.url))

const { png } = SampleFiles

/** The MCP tool server over HTTP, for the test's scope. */
const mcpOverHttp = Effect.acquireRelease(
  Effect.async<{ readonly url: string; readonly child: childProcess.ChildProcess }>((resume) => {
    const child = childProcess.spawn(process.execPath, [toolServer], {
      env: { ...process.env, MCP_FIXTURE_TRANSPORT: "http" },
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

/** A loopback web server with one HTML page. */
const webPage = Effect.acquireRelease(
  Effect.async<http.Server>((resume) => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
      res.end("<html><body><h1>Release notes</h1><p>Version <strong>7</strong> is out.</p></body></html>")
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.sync(() => server.close())
)

describe("the agent's reach", () => {
  it.scopedLive(
    "one session: a PNG attachment seen by the provider, MCP tools on stdio and HTTP, explore greps and reads, a page fetched",
    () =>
      Effect.gen(function* () {
        const remote = yield* mcpOverHttp
        const page = yield* webPage
        const w = yield* world({
          input: ["text", "image"],
          mcp: {
            local: { type: "local", command: [process.execPath, toolServer] },
            remote: { type: "remote", url: `${remote.url}/mcp` }
          },
          agent: { build: { permission: { webfetch: "allow" } } }
        })
        yield* w.run(Effect.flatMap(McpServers.Service, (servers) => servers.settled))
        fs.writeFileSync(path.join(w.directory, "shot.png"), png)
        fs.writeFileSync(path.join(w.directory, "notes.txt"), "the release is version 7\n")
        const pageURL = `http://127.0.0.1:${(page.address() as AddressInfo).port}/notes`

        yield* w.server.enqueue(
          // The parent calls everything at once.
          reply(
            toolCall("call_local", "local_echo", { text: "over stdio" }),
            toolCall("call_remote", "remote_echo", { text: "over http" }),
            toolCall("call_fetch", "webfetch", { url: pageURL, format: "markdown" }),
            toolCall("call_task", "task", {
              description: "Find the version",
              prompt: "Find the release version in this project's notes and report it.",
              subagent_type: "explore"
            }),
            finish("tool-calls")
          ),
          // The explore child greps, reads, and reports.
          reply(
            toolCall("call_grep", "grep", { pattern: "release" }),
            toolCall("call_read", "read", { path: "notes.txt" }),
            finish("tool-calls")
          ),
          reply(text("notes.txt: the release is version 7."), finish("stop")),
          // The parent answers.
          reply(text("Version 7, everywhere."), finish("stop"))
        )
        yield* w.run(
          Effect.gen(function* () {
            yield* (yield* SessionInput.Service).admit(w.session.id, {
              prompt: { text: "What version does this screenshot show?", files: [{ uri: "shot.png" }] }
            })
            yield* (yield* SessionRunner.Service).wake(w.session.id)
          })
        )
        yield* w.wait

        const [first, childFirst, childSecond, last] = yield* w.server.requests
        // The PNG went to the provider as an image part.
        const user = (first!.body.messages as Array<any>).find((message) => message.role === "user")
        expect(user.content).toEqual(
          expect.arrayContaining([
            { type: "image_url", image_url: { url: `data:image/png;base64,${png.toString("base64")}` } }
          ])
        )
        // The child grepped and read.
        expect(childFirst!.headers["x-session-id"]).not.toBe(w.session.id)
        expect(ChatRequest.toolResult(childSecond!, "call_grep")).toContain("notes.txt")
        expect(ChatRequest.toolResult(childSecond!, "call_read")).toContain("the release is version 7")
        // Every result reached the parent's next request.
        expect(ChatRequest.toolResult(last!, "call_local")).toBe("echo: over stdio")
        expect(ChatRequest.toolResult(last!, "call_remote")).toBe("echo: over http")
        expect(ChatRequest.toolResult(last!, "call_fetch")).toContain("# Release notes")
        expect(ChatRequest.toolResult(last!, "call_fetch")).toContain("Version **7** is out.")
        expect(ChatRequest.toolResult(last!, "call_task")).toContain("notes.txt: the release is version 7.")
        const types = yield* w.types
        expect(types.filter((type) => type === "tool.failed")).toEqual([])
        expect(types.at(-1)).toBe("step.ended")
      }),
    120_000
  )
})
