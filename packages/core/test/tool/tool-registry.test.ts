import { describe, expect, it } from "@effect/vitest"
import { Identifier } from "@opencode-ai/schema"
import { Effect, Exit, Scope } from "effect"
import { ToolRegistry } from "../../src/tool/tool-registry.js"

const tool = (name: string, reply: string): ToolRegistry.Tool => ({
  name,
  description: `the ${name} tool`,
  inputSchema: { type: "object" },
  execute: () => Effect.succeed({ content: [{ type: "text", text: reply }] })
})

const context: ToolRegistry.CallContext = {
  sessionID: Identifier.SessionID.make("ses_1"),
  callID: "call_1",
  agent: "build",
  directory: "/tmp",
  ask: () => Effect.void,
  progress: () => Effect.void
}

const textOf = (result: ToolRegistry.Result) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("")

describe("ToolRegistry", () => {
  it.effect("registrations are scoped and the last one of a name wins; removing it shows the previous one again", () =>
    Effect.gen(function* () {
      const registry = yield* ToolRegistry.make
      const outer = yield* Scope.make()
      const inner = yield* Scope.make()
      yield* registry.register(tool("echo", "first")).pipe(Scope.extend(outer))
      yield* registry.register(tool("echo", "second")).pipe(Scope.extend(inner))
      const run = Effect.flatMap(
        registry.materialize((names) => names),
        (m) => m.settle({ id: "c", name: "echo", input: {} }, context)
      )
      expect(textOf(yield* run)).toBe("second")
      yield* Scope.close(inner, Exit.void)
      expect(textOf(yield* run)).toBe("first")
      yield* Scope.close(outer, Exit.void)
      expect(yield* registry.list).toEqual([])
    })
  )

  it.effect("lists tools by name in code-unit order, the same on every host whatever its locale", () =>
    Effect.gen(function* () {
      const registry = yield* ToolRegistry.make
      yield* Effect.scoped(
        Effect.gen(function* () {
          for (const name of ["read", "mcp_Zeta", "Task", "mcp_alpha", "bash", "éditer"]) {
            yield* registry.register(tool(name, name))
          }
          // A collator would put "bash" before "Task" and "mcp_alpha" before "mcp_Zeta".
          const expected = ["Task", "bash", "mcp_Zeta", "mcp_alpha", "read", "éditer"]
          expect((yield* registry.list).map((t) => t.name)).toEqual(expected)
          expect((yield* registry.materialize((names) => names)).definitions.map((d) => d.name)).toEqual(expected)
        })
      )
    })
  )

  it.effect("materialize offers only the visible tools; a hidden or unknown name settles as a readable failure", () =>
    Effect.gen(function* () {
      const registry = yield* ToolRegistry.make
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* registry.register(tool("read", "r"))
          yield* registry.register(tool("bash", "b"))
          const m = yield* registry.materialize((names) => names.filter((n) => n !== "bash"))
          expect(m.definitions.map((d) => d.name)).toEqual(["read"])
          const hidden = yield* m.settle({ id: "c", name: "bash", input: {} }, context).pipe(Effect.flip)
          expect(hidden.message).toBe("Unknown tool: bash. Available tools: read")
          const invalid = yield* m
            .settle({ id: "c", name: "read", input: {}, inputError: "not JSON" }, context)
            .pipe(Effect.flip)
          expect(invalid.message).toBe("Invalid tool input: not JSON")
          expect(textOf(yield* m.settle({ id: "c", name: "read", input: {} }, context))).toBe("r")
        })
      )
    })
  )
})
