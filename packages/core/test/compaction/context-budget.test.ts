import { describe, expect, it } from "@effect/vitest"
import {
  CompactionPrompt,
  ContextBudget,
  ConversationTranscript,
  LLMRequest,
  ModelContext,
  ToolOutputPrune
} from "@opencode-ai/core"
import type { SessionMessages } from "@opencode-ai/schema"

const model = (context: number, output: number) =>
  ({
    id: "m",
    apiID: "m",
    name: "m",
    toolCall: true,
    reasoning: false,
    limit: { context, output }
  }) as any

let counter = 0
const id = () => `msg_${String(++counter).padStart(26, "0")}` as any
const time = { created: 1, completed: 2 }

const user = (text: string): SessionMessages.SessionMessage => ({ id: id(), type: "user", text, time: { created: 1 } })

const toolTurn = (name: string, output: string, tokens?: number): SessionMessages.SessionMessage => ({
  id: id(),
  type: "assistant",
  agent: "build",
  model: { id: "m", providerID: "p" },
  time,
  content: [
    {
      type: "tool",
      id: `call_${counter}`,
      name,
      state: { status: "completed", input: { n: counter }, structured: {}, content: [{ type: "text", text: output }] }
    } as any
  ],
  finish: "tool-calls",
  ...(tokens === undefined
    ? {}
    : { tokens: { input: tokens, output: 10, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 0 })
})

const outputs = (history: ReadonlyArray<SessionMessages.SessionMessage>) =>
  history.flatMap((message) =>
    message.type === "assistant"
      ? message.content.flatMap((item) =>
          item.type === "tool" && item.state.status === "completed" ? [(item.state.content[0] as any).text] : []
        )
      : []
  )

describe("ContextBudget", () => {
  it("the usable context is limit.context less the output limit and compaction.reserved (default a tenth, at most 20,000)", () => {
    expect(ContextBudget.usable(model(4000, 500), { auto: true, prune: true })).toBe(3100)
    expect(ContextBudget.usable(model(400_000, 32_000), { auto: true, prune: true })).toBe(348_000)
    expect(ContextBudget.usable(model(4000, 500), { auto: true, prune: true, reserved: 1000 })).toBe(2500)
    // Unknown context, or limits that leave nothing: no usable context.
    expect(ContextBudget.usable(model(0, 500), { auto: true, prune: true })).toBeUndefined()
    expect(ContextBudget.usable(model(1000, 1000), { auto: true, prune: true })).toBeUndefined()
  })

  it("projects from the provider's count for the last Step plus an estimate of what came after it", () => {
    const history = [user("first"), toolTurn("read", "x".repeat(400), 1000), user("y".repeat(80))]
    const lower = (slice: ReadonlyArray<SessionMessages.SessionMessage>) =>
      ModelContext.messages(slice, { id: "p" } as any, model(4000, 500))
    const request: LLMRequest.Request = {
      model: { providerID: "p", modelID: "m" },
      system: "s",
      messages: lower(history)
    }
    // 1000 input + 10 output counted; the tool result (~100 + name) and the new prompt (20) estimated.
    const projected = ContextBudget.projected({ history, request, local: [], lower })
    expect(projected).toBe(1010 + ContextBudget.estimate(`read${"x".repeat(400)}`) + 20)
    // Nothing counted yet: the whole request is estimated.
    const fresh = [user("z".repeat(4000))]
    expect(
      ContextBudget.projected({
        history: fresh,
        request: { ...request, messages: lower(fresh) },
        local: [LLMRequest.assistant(LLMRequest.text("w".repeat(40)))],
        lower
      })
    ).toBe(ContextBudget.estimate("s") + 1000)
  })
})

describe("ToolOutputPrune", () => {
  it("replaces older outputs once newer ones fill the window; the newest, small and skill outputs are kept", () => {
    const history = [
      toolTurn("read", "a".repeat(4000)),
      toolTurn("skill", "s".repeat(4000)),
      toolTurn("read", "tiny"),
      toolTurn("read", "b".repeat(4000)),
      toolTurn("read", "c".repeat(4000))
    ]
    // 1,000 tokens each: a window of 2,500 keeps the two newest.
    const pruned = ToolOutputPrune.prune(history, 2500)
    expect(outputs(pruned)).toEqual([
      CompactionPrompt.prunedOutput,
      "s".repeat(4000),
      "tiny",
      "b".repeat(4000),
      "c".repeat(4000)
    ])
    // The input is never changed, and nothing to prune gives the same array back.
    expect(outputs(history)[0]).toBe("a".repeat(4000))
    expect(ToolOutputPrune.prune(history, 100_000)).toBe(history)
    // Once pruned, an output stays pruned as the session grows.
    const grown = ToolOutputPrune.prune([...history, toolTurn("read", "d".repeat(400))], 2500)
    expect(outputs(grown)[0]).toBe(CompactionPrompt.prunedOutput)
  })

  it("as a session grows, gives what the walk from the newest output back gives, at every Step", () => {
    // The rule as the module doc states it, walked in full: outputs are kept from the newest back
    // while their total stays within the window; the first that crosses it and every older one larger
    // than the marker are pruned (skill outputs never).
    const reference = (history: ReadonlyArray<SessionMessages.SessionMessage>, window: number) => {
      let kept = 0
      let crossed = false
      const texts: Array<string> = []
      for (const message of [...history].reverse()) {
        if (message.type !== "assistant") continue
        for (const item of [...message.content].reverse()) {
          if (item.type !== "tool" || item.state.status !== "completed") continue
          const text = (item.state.content[0] as { text: string }).text
          const tokens = ContextBudget.estimate(text)
          if (item.name === "skill" || (!crossed && kept + tokens <= window)) {
            if (item.name !== "skill") kept += tokens
            texts.push(text)
            continue
          }
          crossed = true
          texts.push(
            tokens > ContextBudget.estimate(CompactionPrompt.prunedOutput) ? CompactionPrompt.prunedOutput : text
          )
        }
      }
      return texts.reverse()
    }
    // A deterministic sequence of sizes: mostly small outputs, some large, a few skill calls.
    let seed = 7
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed
    }
    for (const window of [300, 2500, 9000]) {
      const history: Array<SessionMessages.SessionMessage> = []
      for (let step = 0; step < 120; step++) {
        const size = next() % 10 === 0 ? 2000 + (next() % 6000) : 1 + (next() % 400)
        history.push(
          step % 5 === 0 ? user(`prompt ${step}`) : toolTurn(next() % 17 === 0 ? "skill" : "read", "x".repeat(size))
        )
        const pruned = ToolOutputPrune.prune(history, window)
        expect(outputs(pruned)).toEqual(reference(history, window))
        // An unpruned message is the very object; a pruned one the same copy as at the Step before.
        pruned.forEach((message, index) => {
          if (outputs([message])[0] === outputs([history[index]!])[0]) expect(message).toBe(history[index])
        })
        expect(ToolOutputPrune.prune(history, window)).toEqual(pruned)
      }
    }
  })

  it("the window is half the usable context, at most 40,000 tokens", () => {
    expect(ToolOutputPrune.window(3100)).toBe(1550)
    expect(ToolOutputPrune.window(1_000_000)).toBe(40_000)
    expect(ToolOutputPrune.window(undefined)).toBe(40_000)
  })
})

describe("ConversationTranscript", () => {
  it("keeps the newest messages within the recent budget, and the latest prompt within the prompt budget", () => {
    const history = [
      user("old question"),
      toolTurn("read", "o".repeat(2000)),
      user("new question"),
      toolTurn("read", "n".repeat(2000))
    ]
    const small = ConversationTranscript.split(history, { recentTokens: 10, promptTokens: 10 })
    expect(small.tail).toEqual([])
    const withPrompt = ConversationTranscript.split(history, { recentTokens: 10, promptTokens: 2000 })
    expect(withPrompt.head).toEqual(history.slice(0, 2))
    expect(withPrompt.tail).toEqual(history.slice(2))
    // Everything fits: the cut falls before the latest prompt; a single prompt is all head.
    expect(ConversationTranscript.split(history, { recentTokens: 100_000, promptTokens: 100_000 }).head).toEqual(
      history.slice(0, 2)
    )
    expect(ConversationTranscript.split([user("only")], { recentTokens: 100, promptTokens: 100 })).toEqual({
      head: [user("only")].map(() => expect.anything()),
      tail: []
    })
  })

  it("renders turns, tool calls with clipped outputs, and leaves out what the summary does not need", () => {
    const rendered = ConversationTranscript.render([
      user("do it"),
      toolTurn("bash", "line\n".repeat(2000)),
      { id: id(), type: "system", text: "an instruction update", time: { created: 1 } } as any
    ])
    expect(rendered).toMatch(/^User: do it\n\nTool bash \{"n":\d+\}\nResult: line/)
    expect(rendered).toContain("characters left out")
    expect(rendered).not.toContain("an instruction update")
    expect(rendered.length).toBeLessThan(2500)
  })

  it("bounds the head's transcript to the newest blocks that fit, noting how many were left out", () => {
    const history = Array.from({ length: 20 }, (_, n) => user(`question ${n} ${"q".repeat(400)}`))
    const bounded = ConversationTranscript.bounded(history, 500)
    expect(bounded).toMatch(/^\[\d+ earlier messages left out\]/)
    expect(bounded).toContain("question 19")
    expect(bounded).not.toContain("question 0 ")
    expect(ContextBudget.estimate(bounded)).toBeLessThanOrEqual(520)
  })
})
