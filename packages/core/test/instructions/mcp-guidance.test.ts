import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Instructions } from "../../src/instructions/instructions.js"
import { McpGuidance } from "../../src/instructions/mcp-guidance.js"

describe("McpGuidance", () => {
  it.effect("MCP guidance nests each server's instruction lines under its name", () =>
    Effect.gen(function* () {
      const baseline = (yield* Instructions.initialize(
        McpGuidance.make(Effect.succeed([{ name: "docs", instructions: "Line one\nLine two" }]))
      )) as Instructions.Complete
      assert.strictEqual(
        baseline.text,
        [
          "<mcp_instructions>",
          '  <server name="docs">',
          "    Line one",
          "    Line two",
          "  </server>",
          "</mcp_instructions>"
        ].join("\n")
      )
    })
  )
})
