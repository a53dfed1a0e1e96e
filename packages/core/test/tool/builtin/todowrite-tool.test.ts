import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AgentCatalog } from "../../../src/config/agent-catalog.js"
import { Permission } from "../../../src/permission/permission.js"
import { call, context, failure, project, textOf } from "./harness.js"

const todos = [
  { content: "Write the parser", status: "completed", priority: "high", id: "1" },
  { content: "Test it", status: "in_progress", priority: "medium", id: "2" },
  { content: "Document it", status: "pending", priority: "low" }
]

describe("todowrite", () => {
  it.live("returns the list as the structured result (the session's durable todo list) and as text", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx, asks } = context(p.directory)
      const result = yield* call("todowrite", { todos }, ctx)
      expect(result.structured).toEqual({ todos })
      expect(textOf(result)).toContain("3 todos, 2 open")
      expect(JSON.parse(textOf(result).slice(textOf(result).indexOf("\n") + 1))).toEqual(todos)
      expect(asks).toEqual([{ action: "todowrite", resources: ["*"], metadata: { todos } }])
      expect((yield* call("todowrite", { todos: [] }, ctx)).structured).toEqual({ todos: [] })
    })
  )

  it.live("invalid items are a readable failure; the general agent's rules deny it", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx } = context(p.directory)
      const message = yield* failure(
        call("todowrite", { todos: [{ content: "x", status: "doing", priority: "high" }] }, ctx)
      )
      expect(message).toContain("Invalid input for the todowrite tool")
      expect(message).toContain("todos.0.status")
      const rules = AgentCatalog.builtins().general.rules
      const general = context(p.directory, (request) =>
        Permission.evaluate(rules, request.action, request.resources[0]!) === "allow" ? "allow" : "deny"
      )
      expect(yield* failure(call("todowrite", { todos }, general.ctx))).toContain("Permission denied: todowrite")
    })
  )
})
