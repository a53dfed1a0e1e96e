import { describe, expect, it } from "@effect/vitest"
import { ToolRegistry } from "@opencode-ai/core"
import { Effect, JSONSchema, type Schema } from "effect"
import { ApplyPatchTool } from "../../../src/tool/builtin/apply-patch-tool.js"
import { BashTool } from "../../../src/tool/builtin/bash-tool.js"
import { BuiltinTools } from "../../../src/tool/builtin/builtin-tools.js"
import { EditTool } from "../../../src/tool/builtin/edit-tool.js"
import { GlobTool } from "../../../src/tool/builtin/glob-tool.js"
import { GrepTool } from "../../../src/tool/builtin/grep-tool.js"
import { ReadTool } from "../../../src/tool/builtin/read-tool.js"
import { TodoWriteTool } from "../../../src/tool/builtin/todowrite-tool.js"
import { WebFetchTool } from "../../../src/tool/builtin/webfetch-tool.js"
import { WriteTool } from "../../../src/tool/builtin/write-tool.js"
import { world } from "../../runner/world.js"
import { call, context, failure, project, tool } from "./harness.js"

const inputs: Record<(typeof BuiltinTools.names)[number], Schema.Schema<any, any, never>> = {
  read: ReadTool.Input,
  write: WriteTool.Input,
  edit: EditTool.Input,
  apply_patch: ApplyPatchTool.Input,
  bash: BashTool.Input,
  glob: GlobTool.Input,
  grep: GrepTool.Input,
  todowrite: TodoWriteTool.Input,
  webfetch: WebFetchTool.Input
}

describe("BuiltinTools", () => {
  it.effect("each tool's JSON Schema is derived from its Effect Schema input (no drift), without $schema", () =>
    Effect.gen(function* () {
      for (const name of BuiltinTools.names) {
        const t = yield* tool(name)
        const { $schema: _, ...expected } = JSONSchema.make(inputs[name]) as unknown as Record<string, unknown>
        expect(t.inputSchema).toEqual(expected)
        expect(t.inputSchema.type).toBe("object")
        expect(t.inputSchema).not.toHaveProperty("$schema")
        expect(t.description.length).toBeGreaterThan(40)
      }
    })
  )

  it.effect("the parameters of the upstream tool list (read takes `path`)", () =>
    Effect.gen(function* () {
      const shape = (name: (typeof BuiltinTools.names)[number]) =>
        Effect.map(tool(name), (t) => ({
          properties: Object.keys(t.inputSchema.properties as object).sort(),
          required: [...(t.inputSchema.required as Array<string>)].sort()
        }))
      expect(yield* shape("read")).toEqual({ properties: ["limit", "offset", "path"], required: ["path"] })
      expect(yield* shape("write")).toEqual({ properties: ["content", "path"], required: ["content", "path"] })
      expect(yield* shape("edit")).toEqual({
        properties: ["newString", "oldString", "path", "replaceAll"],
        required: ["newString", "oldString", "path"]
      })
      expect(yield* shape("apply_patch")).toEqual({ properties: ["patchText"], required: ["patchText"] })
      expect(yield* shape("bash")).toEqual({
        properties: ["command", "description", "timeout", "workdir"],
        required: ["command"]
      })
      expect(yield* shape("glob")).toEqual({ properties: ["path", "pattern"], required: ["pattern"] })
      expect(yield* shape("grep")).toEqual({ properties: ["include", "path", "pattern"], required: ["pattern"] })
      expect(yield* shape("todowrite")).toEqual({ properties: ["todos"], required: ["todos"] })
    })
  )

  it.live("invalid input is a readable ToolFailure for every tool, before any permission is asked", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx, asks } = context(p.directory)
      for (const name of BuiltinTools.names) {
        const message = yield* failure(call(name, { unexpected: 1 }, ctx))
        expect(message).toContain(`Invalid input for the ${name} tool`)
        expect(message).toMatch(/is missing/)
      }
      expect(yield* failure(call("bash", { command: "true", timeout: -5 }, ctx))).toContain("timeout")
      expect(yield* failure(call("edit", { path: "a", oldString: 1, newString: "b" }, ctx))).toContain("oldString")
      expect(asks).toEqual([])
    })
  )

  it.scopedLive("every Core registers the built-ins in its ToolRegistry", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const names = (yield* w.run(Effect.flatMap(ToolRegistry.Service, (registry) => registry.list))).map((t) => t.name)
      for (const name of BuiltinTools.names) expect(names).toContain(name)
    })
  )
})
