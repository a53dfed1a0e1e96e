import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import type { McpServers } from "@opencode-ai/core"
import { McpGroup } from "@opencode-ai/protocol"
import { Effect, Schema } from "effect"
import { configHome, startServer } from "./harness.js"

/** The core package's MCP tool server (stdio by default). */
const toolServer = fileURLToPath(new URL("../../core/test/fixtures/mcp/tool-server.mjs", import.meta.url))

const get = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { status: response.status, body: await response.json() }
  })

describe("GET /api/mcp over the real server", () => {
  it.scopedLive(
    "lists every configured server with its status, transport, tools and error, in the contract shape",
    () =>
      Effect.gen(function* () {
        const home = configHome({
          mcp: {
            docs: { type: "local", command: [process.execPath, toolServer] },
            off: { type: "local", command: [process.execPath, toolServer], enabled: false },
            broken: { type: "local", command: [path.join(path.dirname(toolServer), "no-such-binary")] }
          }
        })
        const { url } = yield* startServer({ XDG_CONFIG_HOME: home })
        // Connections are made in the background; the list never waits for them.
        let response = yield* get(`${url}/api/mcp`)
        for (let i = 0; i < 200 && response.body.data.some((s: any) => s.status === "connecting"); i++) {
          yield* Effect.sleep("50 millis")
          response = yield* get(`${url}/api/mcp`)
        }
        expect(response.status).toBe(200)
        Schema.decodeUnknownSync(McpGroup.McpServersResponse, { onExcessProperty: "error" })(response.body)
        const [broken, docs, off] = response.body.data
        expect(broken).toMatchObject({ name: "broken", status: "failed", tools: [] })
        expect(broken.error).toEqual(expect.any(String))
        expect(docs).toEqual({
          name: "docs",
          status: "connected",
          transport: "stdio" satisfies McpServers.TransportKind,
          tools: ["docs_echo", "docs_hang", "docs_fail", "docs_add_tool", "docs_big", "docs_crash"]
        })
        expect(off).toEqual({ name: "off", status: "disabled", tools: [] })
      })
  )

  it.scoped("no configured servers is an empty list", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      expect(yield* get(`${url}/api/mcp`)).toEqual({ status: 200, body: { data: [] } })
    })
  )
})
