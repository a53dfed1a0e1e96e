import { describe, expect, it } from "vitest"
import { InstructionLowering } from "../../src/llm/instruction-lowering.js"
import { LLMRequest } from "../../src/llm/llm-request.js"

const wrapped = (text: string) => LLMRequest.text(InstructionLowering.wrap(text))

describe("InstructionLowering.lower", () => {
  it("wraps the text unchanged", () => {
    expect(InstructionLowering.wrap("a\nb")).toBe("<instruction-update>\na\nb\n</instruction-update>")
  })

  it("opens the next user message with the pending blocks, in order", () => {
    expect(
      InstructionLowering.lower([
        LLMRequest.user("one"),
        LLMRequest.instructionUpdate("u1"),
        LLMRequest.instructionUpdate("u2"),
        LLMRequest.user("two", "three")
      ])
    ).toEqual([
      LLMRequest.user("one"),
      { role: "user", content: [wrapped("u1"), wrapped("u2"), LLMRequest.text("two"), LLMRequest.text("three")] }
    ])
  })

  it("inserts a synthetic user turn before an assistant message or at the end, after tool results", () => {
    const call = LLMRequest.assistant(LLMRequest.toolCall("c1", "t", {}))
    const results = LLMRequest.tool(LLMRequest.toolResult("c1", "t", "ok"))
    const answer = LLMRequest.assistant(LLMRequest.text("done"))
    expect(
      InstructionLowering.lower([
        LLMRequest.user("go"),
        call,
        LLMRequest.instructionUpdate("before results"),
        results,
        answer,
        LLMRequest.instructionUpdate("at the end")
      ])
    ).toEqual([
      LLMRequest.user("go"),
      call,
      results,
      { role: "user", content: [wrapped("before results")] },
      answer,
      { role: "user", content: [wrapped("at the end")] }
    ])
  })

  it("leaves a history without updates as it is", () => {
    const history = [LLMRequest.user("a"), LLMRequest.assistant(LLMRequest.text("b"))]
    expect(InstructionLowering.lower(history)).toEqual(history)
  })
})

describe("LLMRequest.resultsInCallOrder", () => {
  it("orders results by the calls they answer; unknown ids last, in their order", () => {
    const calls = LLMRequest.assistant(
      LLMRequest.toolCall("a", "t", {}),
      LLMRequest.text("x"),
      LLMRequest.toolCall("b", "t", {})
    )
    const message = LLMRequest.tool(
      LLMRequest.toolResult("z", "t", "z"),
      LLMRequest.toolResult("b", "t", "b"),
      LLMRequest.toolResult("y", "t", "y"),
      LLMRequest.toolResult("a", "t", "a")
    )
    expect(LLMRequest.resultsInCallOrder(message, calls).map((r) => r.callID)).toEqual(["a", "b", "z", "y"])
  })
})
