import { describe, expect, it } from "vitest"
import { ContextBudget } from "../../src/compaction/context-budget.js"
import { ToolOutputPrune } from "../../src/compaction/tool-output-prune.js"
import type { PromptFiles } from "../../src/input/prompt-files.js"
import { Anthropic } from "../../src/llm/anthropic.js"
import { Gemini } from "../../src/llm/gemini.js"
import { LLMRequest } from "../../src/llm/llm-request.js"
import { OpenAICompatible } from "../../src/llm/openai-compatible.js"
import { ModelContext } from "../../src/runner/model-context.js"

/**
 * A Step lowers its whole history, and the next Step lowers nearly the same history again: each
 * lowering is kept with the stored message it came from (LoweringMemo) and reused while the message
 * and what the lowering depends on are the same. Here every reused lowering is checked against a cold
 * one, made from a structural copy of the same history (new objects, so nothing is reused), as the
 * inputs it depends on change: the model (which decides what is replayable), the agent (the `@agent`
 * mention hint), the files read for the Step, and pruning.
 */

let counter = 0
const id = () => `msg_${String(++counter).padStart(26, "0")}` as any
const time = { created: 1, completed: 2 }

const completed = (output: string) =>
  ({
    status: "completed",
    input: { path: output.slice(0, 8) },
    structured: {},
    content: [{ type: "text", text: output }]
  }) as const

const user = (text: string, extra: object = {}): any => ({
  id: id(),
  type: "user",
  text,
  time: { created: 1 },
  ...extra
})

/** A Step of `modelID` with reasoning, text and two calls (answered in the other order). */
const step = (modelID: string, output: string): any => ({
  id: id(),
  type: "assistant",
  agent: "build",
  model: { id: modelID, providerID: "p" },
  time,
  content: [
    { type: "reasoning", id: "r", text: "thinking", providerMetadata: { p: { signature: "s" } } },
    { type: "text", id: "t", text: `reading ${output.length}` },
    {
      type: "tool",
      id: `call_a${counter}`,
      name: "read",
      provider: { executed: false, metadata: { p: { n: 1 } } },
      state: completed(output),
      time: { created: 1 }
    },
    { type: "tool", id: `call_b${counter}`, name: "grep", state: completed(`${output}!`), time: { created: 1 } }
  ],
  finish: "tool-calls"
})

const history = (): Array<any> => [
  user("first"),
  step("m1", "a".repeat(4000)),
  { id: id(), type: "system", text: "an instruction update", time: { created: 1 } },
  user("second, ask @explore", { agents: [{ name: "explore" }] }),
  step("m2", "b".repeat(4000)),
  { id: id(), type: "shell", callID: "sh", command: "ls", output: "a b", time },
  { id: id(), type: "synthetic", sessionID: "ses_x", text: "synthetic", time: { created: 1 } },
  user("third", { files: [{ type: "file", mime: "image/png", uri: "file:///tmp/x.png", name: "x.png" }] }),
  step("m1", "c".repeat(400))
]

const provider = { id: "p" } as any
const model = (id: string) => ({ id, apiID: id, limit: { context: 0, output: 0 } }) as any
const agent = (task: "allow" | "deny") =>
  ({ name: "build", permission: [{ action: "task", resource: "*", effect: task }] }) as any
const noFiles: PromptFiles.Lowered = { user: new Map(), tool: new Map() }

const lowered = (h: ReadonlyArray<any>, modelID: string, files: PromptFiles.Lowered, withAgent: any) =>
  ModelContext.messages(h, provider, model(modelID), files, withAgent)

/** A provider request of `messages`. */
const request = (messages: ReadonlyArray<LLMRequest.Message>): LLMRequest.Request => ({
  model: { providerID: "p", modelID: "m1" },
  system: "system text",
  messages
})

describe("lowerings reused across Steps", () => {
  it("ModelContext.messages: the same history lowers to the same objects, equal to a cold lowering, as the model, agent and files change", () => {
    const h = history()
    const allow = agent("allow")
    const deny = agent("deny")
    const cold = (modelID: string, files: PromptFiles.Lowered, withAgent: any) =>
      lowered(structuredClone(h), modelID, files, withAgent)

    const first = lowered(h, "m1", noFiles, allow)
    const again = lowered(h, "m1", noFiles, allow)
    expect(again).toHaveLength(first.length)
    for (const [i, message] of again.entries()) expect(message).toBe(first[i])
    expect(again).toEqual(cold("m1", noFiles, allow))

    // Another model: what m1 wrote is no longer replayable, what m2 wrote is.
    const other = lowered(h, "m2", noFiles, allow)
    expect(other).toEqual(cold("m2", noFiles, allow))
    expect(other).not.toEqual(first)
    expect(lowered(h, "m1", noFiles, allow)).toEqual(first)

    // Another agent: only the user turn with a mention lowers differently.
    expect(lowered(h, "m1", noFiles, deny)).toEqual(cold("m1", noFiles, deny))
    expect(lowered(h, "m1", noFiles, deny)).not.toEqual(first)
    expect(lowered(h, "m1", noFiles, allow)).toEqual(first)

    // Files read for this Step: the user turn carries them, the tool result its notes; the next Step
    // without them lowers without them.
    const files: PromptFiles.Lowered = {
      user: new Map([[h[7].id, [LLMRequest.file("image/png", "data:image/png;base64,AA==", "x.png")]]]),
      tool: new Map([[h[8].content[2].id, { files: [], notes: ["(The file y.pdf cannot be shown.)"] }]])
    }
    const withFiles = lowered(h, "m1", files, allow)
    expect(withFiles).toEqual(cold("m1", files, allow))
    expect(withFiles).not.toEqual(first)
    expect(lowered(h, "m1", noFiles, allow)).toEqual(first)
  })

  it("ToolOutputPrune: a message pruned the same way is the same copy at the next Step, and equal to a cold prune", () => {
    const h = history()
    const pruned = ToolOutputPrune.prune(h, 1400)
    const again = ToolOutputPrune.prune(h, 1400)
    for (const [i, message] of again.entries()) expect(message).toBe(pruned[i])
    expect(pruned).toEqual(ToolOutputPrune.prune(structuredClone(h), 1400))
    // More history: older outputs are pruned further, as a cold prune of the same history would.
    const grown = [...h, step("m1", "d".repeat(4000))]
    const further = ToolOutputPrune.prune(grown, 1400)
    expect(further).toEqual(ToolOutputPrune.prune(structuredClone(grown), 1400))
    // The first Step's outputs were all pruned already: the same copy; the second's are pruned further.
    expect(further[1]).toBe(pruned[1])
    expect(further[4]).not.toBe(pruned[4])
    expect(ToolOutputPrune.prune(grown, 1400)[4]).toBe(further[4])
  })

  it("OpenAICompatible.messages and ContextBudget: the same request messages give the same wire objects and estimates as cold ones", () => {
    const h = history()
    const messages = lowered(h, "m1", noFiles, agent("allow"))
    const wire = OpenAICompatible.messages(request(messages))
    const again = OpenAICompatible.messages(request(messages))
    // The system message and the user turn the Instruction Update is lowered into are made afresh;
    // every other wire message is the same object.
    const afresh = (message: Record<string, unknown>) =>
      message.role === "system" || JSON.stringify(message).includes("an instruction update")
    expect(again.filter(afresh)).toHaveLength(2)
    for (const [i, message] of again.entries()) {
      if (afresh(message)) expect(message).toEqual(wire[i])
      else expect(message).toBe(wire[i])
    }
    expect(again).toEqual(OpenAICompatible.messages(request(structuredClone(messages))))
    expect(ContextBudget.estimateMessages(messages)).toBe(ContextBudget.estimateMessages(structuredClone(messages)))

    // A tool message answers the calls of the assistant message before it: after another one (the
    // calls in the other order), its results are ordered afresh.
    const [assistant, tool] = messages.filter((message) => message.role === "assistant" || message.role === "tool")
    if (assistant?.role !== "assistant" || tool?.role !== "tool")
      throw new Error("expected an assistant and its tool message")
    const reordered = LLMRequest.assistant(...[...assistant.content].reverse())
    const answered = OpenAICompatible.messages(request([reordered, tool]))
    expect(answered).toEqual(OpenAICompatible.messages(request(structuredClone([reordered, tool]))))
    expect(answered.slice(2).map((message) => message.tool_call_id)).toEqual(
      [...tool.content].reverse().map((result) => result.callID)
    )
  })

  it("Anthropic.messages: the same history gives the same turns, but the last (marked for the prompt cache on a copy), equal to cold ones", () => {
    const h = history()
    const messages = lowered(h, "m1", noFiles, agent("allow"))
    const turns = Anthropic.messages(request(messages))
    const again = Anthropic.messages(request(messages))
    expect(again).toEqual(Anthropic.messages(request(structuredClone(messages))))
    // A turn of one message is the same object (here every assistant turn); turns that join several
    // messages (tool results and the user turns after them) are made afresh, equal.
    const assistants = again.slice(0, -1).filter((turn) => turn.role === "assistant")
    expect(assistants.length).toBeGreaterThan(1)
    for (const [i, turn] of again.slice(0, -1).entries()) if (turn.role === "assistant") expect(turn).toBe(turns[i])
    expect(JSON.stringify(again.at(-1))).toContain("cache_control")

    // The next Step: the turn that was last is no longer marked; the new last one is.
    const next = [...messages, LLMRequest.user("fourth")]
    const grown = Anthropic.messages(request(next))
    expect(grown).toEqual(Anthropic.messages(request(structuredClone(next))))
    expect(JSON.stringify(grown.slice(0, -1))).not.toContain("cache_control")
    expect(JSON.stringify(grown.at(-1))).toContain("cache_control")
  })

  it("Gemini.contents: the same history gives the same model turns, and contents equal to cold ones", () => {
    const messages = lowered(history(), "m1", noFiles, agent("allow"))
    const contents = Gemini.contents(request(messages))
    const again = Gemini.contents(request(messages))
    expect(again).toEqual(Gemini.contents(request(structuredClone(messages))))
    expect(again.filter((turn) => turn.role === "model").length).toBeGreaterThan(1)
    for (const [i, turn] of again.entries()) if (turn.role === "model") expect(turn).toBe(contents[i])
  })
})
