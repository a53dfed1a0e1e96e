export * as TodoWriteTool from "./todowrite-tool.js"

import { Effect, Schema } from "effect"
import { Traced } from "../../observability/traced.js"
import type { ToolRegistry } from "../tool-registry.js"
import { BuiltinTool } from "./builtin-tool.js"

/** One item of the session's todo list (the contract's `Todo`, plus an optional id). */
export const Todo = Schema.Struct({
  content: Schema.String.annotations({ description: "What to do, briefly" }),
  status: Schema.Literal("pending", "in_progress", "completed", "cancelled").annotations({
    description: "pending, in_progress (one item at a time), completed or cancelled"
  }),
  priority: Schema.Literal("high", "medium", "low").annotations({ description: "high, medium or low" }),
  id: Schema.optional(Schema.String).annotations({ description: "A stable identifier for the item" })
})
export type Todo = typeof Todo.Type

export const Input = Schema.Struct({
  todos: Schema.Array(Todo).annotations({ description: "The whole updated todo list; it replaces the previous one" })
})
export type Input = typeof Input.Type

const description = `Replaces the session's todo list, to plan and track multi-step work.

- Use it for tasks with three or more steps, or when the user gives several tasks; skip it for trivial ones.
- Send the whole list each time. Keep exactly one item in_progress while working, and mark items completed as soon as they are done.`

/**
 * The `todowrite` tool. The list is stored where the session already keeps tool results durably:
 * the call's structured result is `{ todos }`, so the session's current todo list is the `todos` of
 * its latest successful `todowrite` call (each call sends the whole list). Asks `todowrite` (the
 * `general` agent denies it).
 */
export const make = Effect.succeed(
  BuiltinTool.define({
    name: "todowrite",
    description,
    input: Input,
    execute: Traced.fn("TodoWriteTool.execute")(function* (input: Input, context: ToolRegistry.CallContext) {
      yield* context.ask({ action: "todowrite", resources: ["*"], metadata: { todos: input.todos } })
      const open = input.todos.filter((todo) => todo.status !== "completed" && todo.status !== "cancelled").length
      return BuiltinTool.text(
        `${input.todos.length} todo${input.todos.length === 1 ? "" : "s"}, ${open} open:\n${JSON.stringify(input.todos, null, 2)}`,
        { todos: input.todos }
      )
    })
  })
)
