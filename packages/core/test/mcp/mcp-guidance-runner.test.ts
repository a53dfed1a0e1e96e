import { describe, expect, it } from "@effect/vitest"
import { McpServers } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { local, world } from "./world.js"

const { reply, text, finish } = LLMScript

const docs = {
  MCP_FIXTURE_INSTRUCTIONS: "Search the docs before answering.\nCite page titles.",
  MCP_FIXTURE_TOOLS: "search"
}
const block = [
  "<mcp_instructions>",
  '  <server name="docs">',
  "    Search the docs before answering.",
  "    Cite page titles.",
  "  </server>",
  "</mcp_instructions>"
].join("\n")

describe("MCP guidance in the runner", () => {
  it.scopedLive("the first request's baseline carries a connected server's instructions", () =>
    Effect.gen(function* () {
      const w = yield* world({ mcp: { docs: local(docs) } })
      yield* w.run(Effect.flatMap(McpServers.Service, (servers) => servers.settled))
      yield* w.server.enqueue(reply(text("ok"), finish("stop")))
      yield* w.prompt("hello")
      yield* w.wait
      const [system] = yield* w.systems
      expect(system).toContain(block)
    })
  )

  it.scopedLive(
    "an agent denied every tool of the server gets no block; a server without tools is still described",
    () =>
      Effect.gen(function* () {
        const w = yield* world({
          mcp: { docs: local(docs), notes: local({ MCP_FIXTURE_INSTRUCTIONS: "Notes are read-only." }) },
          agent: { build: { permission: { "docs_*": "deny" } } }
        })
        yield* w.run(Effect.flatMap(McpServers.Service, (servers) => servers.settled))
        yield* w.server.enqueue(reply(text("ok"), finish("stop")))
        yield* w.prompt("hello")
        yield* w.wait
        const [system] = yield* w.systems
        expect(system).toContain('<server name="notes">\n    Notes are read-only.\n  </server>')
        expect(system).not.toContain('<server name="docs"')
      })
  )

  it.scopedLive(
    "a server still connecting delays the first baseline only until it settles; it never strands the prompt",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ mcp: { docs: local({ ...docs, MCP_FIXTURE_DELAY_MS: "1500" }) } })
        // The prompt arrives while the server is still connecting: the first boundary is Blocked.
        const before = yield* w.run(Effect.flatMap(McpServers.Service, (servers) => servers.list))
        expect(before[0]!.status._tag).toBe("Connecting")
        yield* w.server.enqueue(reply(text("ok"), finish("stop")))
        yield* w.prompt("hello")
        yield* w.wait
        const [system] = yield* w.systems
        expect(system).toContain(block)
      })
  )

  it.scopedLive("a server that cannot start never fails Core startup: it is absent and logged", () =>
    Effect.gen(function* () {
      const w = yield* world({
        mcp: {
          broken: local({ MCP_FIXTURE_CRASH: "no index", MCP_FIXTURE_INSTRUCTIONS: "Broken rules." }),
          docs: local(docs)
        }
      })
      yield* w.server.enqueue(reply(text("ok"), finish("stop")))
      yield* w.prompt("hello")
      yield* w.wait
      const [system] = yield* w.systems
      expect(system).toContain(block)
      expect(system).not.toContain("broken")
      expect(
        w.logs.some((line) => line.includes("MCP server broken failed to connect") && line.includes("no index"))
      ).toBe(true)
    })
  )
})
