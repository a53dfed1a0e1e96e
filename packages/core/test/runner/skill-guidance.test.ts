import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { SessionSelection } from "@opencode-ai/core"
import { ChatRequest, LLMScript } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { world } from "./world.js"

const { reply, text, toolCall, finish } = LLMScript

const writeSkill = (directory: string, name: string, description: string, body: string) => {
  const file = path.join(directory, ".opencode", "skill", name, "SKILL.md")
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`)
  return file
}

const systemOf = ChatRequest.system

describe("selected-agent skill guidance and reference guidance through the runner", () => {
  it.scopedLive(
    "the baseline lists only the skills the agent may use; the skill tool loads a permitted one and refuses a denied one",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ agent: { build: { permission: { skill: { secret: "deny" } } } } })
        const docs = writeSkill(w.directory, "docs", "Writing documentation", "DOCS BODY: use short sentences.")
        writeSkill(w.directory, "secret", "Internal procedures", "SECRET BODY")
        yield* w.server.enqueue(
          reply(
            toolCall("call_docs", "skill", { name: "docs" }),
            toolCall("call_secret", "skill", { name: "secret" }),
            finish("tool-calls")
          ),
          reply(text("done"), finish("stop"))
        )
        yield* w.prompt("write the docs")
        yield* w.wait

        const [first, second] = yield* w.server.requests
        const system = systemOf(first!)
        expect(system).toContain("<available_skills>")
        expect(system).toContain("<name>docs</name>")
        expect(system).toContain("<description>Writing documentation</description>")
        expect(system).not.toContain("<name>secret</name>")
        expect(system).not.toContain("Internal procedures")
        // Bodies and locations reach the model only through the tool.
        expect(system).not.toContain("DOCS BODY")
        expect(system).not.toContain("SKILL.md")
        expect((first!.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toContain(
          "skill"
        )

        const events = yield* w.events
        const success = events.find(
          (e) => e.type === "session.next.tool.success" && (e.data as any).callID === "call_docs"
        )!.data as any
        expect(success.content[0].text).toContain("DOCS BODY: use short sentences.")
        expect(success.content[0].text).toContain(docs)
        expect(success.structured).toEqual({
          name: "docs",
          location: docs,
          directory: path.dirname(docs),
          output: success.content[0].text
        })
        const failed = events.find(
          (e) => e.type === "session.next.tool.failed" && (e.data as any).callID === "call_secret"
        )!.data as any
        expect(failed.error.message).toContain("secret")
        expect(JSON.stringify(failed)).not.toContain("SECRET BODY")

        const results = (
          second!.body.messages as Array<{ role: string; content: unknown; tool_call_id?: string }>
        ).filter((m) => m.role === "tool")
        expect(results.map((m) => m.tool_call_id)).toEqual(["call_docs", "call_secret"])
        expect(String(results[0]!.content)).toContain("DOCS BODY")
        expect(String(results[1]!.content)).not.toContain("SECRET BODY")
      })
  )

  it.scopedLive(
    "An agent switch that changes selected-agent guidance produces an Instruction Update while preserving the current baseline.",
    () =>
      Effect.gen(function* () {
        const w = yield* world({
          agent: {
            build: { permission: { skill: { secret: "deny" } } },
            // Permits the same skills as build: switching to it says nothing.
            twin: { mode: "primary", permission: { skill: { secret: "deny" } } },
            // Permits only docs.
            reviewer: { mode: "primary", permission: { skill: { "*": "deny", docs: "allow" } } }
          }
        })
        writeSkill(w.directory, "docs", "Writing documentation", "docs body")
        writeSkill(w.directory, "deploy", "Deploying the app", "deploy body")
        writeSkill(w.directory, "secret", "Internal procedures", "secret body")
        yield* w.server.enqueue(
          reply(text("one"), finish("stop")),
          reply(text("two"), finish("stop")),
          reply(text("three"), finish("stop"))
        )
        const switchAgent = (agent: string) =>
          w.run(Effect.flatMap(SessionSelection.Service, (s) => s.switchAgent(w.session.id, agent)))

        yield* w.prompt("first")
        yield* w.wait
        yield* switchAgent("twin")
        yield* w.prompt("second")
        yield* w.wait
        expect((yield* w.types).filter((t) => t === "context.updated")).toHaveLength(0)

        yield* switchAgent("reviewer")
        yield* w.prompt("third")
        yield* w.wait
        const types = yield* w.types
        const updates = (yield* w.events).filter((e) => e.type === "session.next.context.updated")
        expect(updates).toHaveLength(1)
        // Admitted at the boundary, before the third prompt is promoted.
        expect(types.indexOf("context.updated")).toBeGreaterThan(types.lastIndexOf("agent.switched"))
        expect(types.indexOf("context.updated")).toBeLessThan(types.lastIndexOf("prompted"))
        const update = (updates[0]!.data as { text: string }).text
        expect(update).toContain("<name>docs</name>")
        expect(update).not.toContain("<name>deploy</name>")
        expect(update).not.toContain("<name>secret</name>")

        const requests = yield* w.server.requests
        expect(requests).toHaveLength(3)
        const baseline = systemOf(requests[0]!)
        expect(baseline).toContain("<name>deploy</name>")
        expect(baseline).toContain("<name>docs</name>")
        // The baseline is preserved verbatim; the update reaches the model in the third request only.
        expect(systemOf(requests[1]!)).toBe(baseline)
        expect(systemOf(requests[2]!)).toBe(baseline)
        expect(JSON.stringify(requests[1]!.body.messages)).not.toContain("The skills available to you are now")
        expect(JSON.stringify(requests[2]!.body.messages)).toContain("The skills available to you are now")
      })
  )

  it.scopedLive(
    "reference guidance: the configured, described, non-hidden references, with paths resolved against the project",
    () =>
      Effect.gen(function* () {
        const w = yield* world({
          reference: {
            docs: { path: "../docs", description: "Product documentation" },
            plain: { path: "plain" },
            internal: { path: "internal", description: "Not for the model", hidden: true }
          }
        })
        yield* w.server.enqueue(reply(text("ok"), finish("stop")))
        yield* w.prompt("hello")
        yield* w.wait
        const system = systemOf((yield* w.server.requests)[0]!)
        expect(system).toContain("<available_references>")
        expect(system).toContain(
          [
            "  <reference>",
            "    <name>docs</name>",
            `    <path>${path.join(path.dirname(w.directory), "docs")}</path>`,
            "    <description>Product documentation</description>",
            "  </reference>"
          ].join("\n")
        )
        expect(system).not.toContain("<name>plain</name>")
        expect(system).not.toContain("<name>internal</name>")
        expect(system).not.toContain("<available_skills>")
      })
  )
})
