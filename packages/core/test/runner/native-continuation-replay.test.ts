import { describe, expect, it } from "vitest"
import { Gemini } from "../../src/llm/gemini.js"
import { LLMRequest } from "../../src/llm/llm-request.js"
import { ModelContext } from "../../src/runner/model-context.js"

/**
 * The Native Continuation replay rule of Model Context for tool calls as well as reasoning: the
 * metadata a call was streamed with (a Gemini thoughtSignature, durable as the call's
 * `provider.metadata`) is marked replayable only for a successful step of the exact provider and model.
 */

const thought = { google: { thoughtSignature: "sig-thought" } }
const signed = { google: { thoughtSignature: "sig-call" } }

const completed = (say: string) =>
  ({ status: "completed", input: { say }, content: [{ type: "text", text: `echo: ${say}` }], structured: {} }) as const

const step = (modelID: string, error?: string): any => ({
  id: "msg_1",
  type: "assistant",
  agent: "build",
  model: { id: modelID, providerID: "google" },
  time: { created: 1, completed: 2 },
  content: [
    { type: "reasoning", id: "reasoning-0", text: "Plan", providerMetadata: thought },
    {
      type: "tool",
      id: "call_1",
      name: "echo",
      provider: { executed: false, metadata: signed },
      state: completed("a"),
      time: { created: 1 }
    },
    {
      type: "tool",
      id: "call_2",
      name: "echo",
      provider: { executed: false },
      state: completed("b"),
      time: { created: 1 }
    }
  ],
  ...(error === undefined ? {} : { error: { type: "unknown", message: error } })
})

const provider = { id: "google" } as any
const model = { id: "gemini-3-pro", apiID: "gemini-3-pro", limit: { context: 0, output: 0 } } as any

const project = (message: unknown) => ModelContext.messages([message as any], provider, model)

describe("tool-call Native Continuation Metadata in Model Context", () => {
  it("a successful step of the same provider and model: reasoning and the signed call are replayable", () => {
    expect(project(step("gemini-3-pro"))).toEqual([
      LLMRequest.assistant(
        LLMRequest.reasoning("Plan", { metadata: thought, replayable: true }),
        LLMRequest.toolCall("call_1", "echo", { say: "a" }, { metadata: signed, replayable: true }),
        LLMRequest.toolCall("call_2", "echo", { say: "b" })
      ),
      LLMRequest.tool(
        LLMRequest.toolResult("call_1", "echo", "echo: a"),
        LLMRequest.toolResult("call_2", "echo", "echo: b")
      )
    ])
  })

  it("another model, or a failed step: kept but not replayable, so the adapter never sends it", () => {
    for (const message of [step("gemini-2.5-flash"), step("gemini-3-pro", "stream broke")]) {
      const [assistant] = project(message)
      expect(assistant).toEqual(
        LLMRequest.assistant(
          LLMRequest.reasoning("Plan", { metadata: thought, replayable: false }),
          LLMRequest.toolCall("call_1", "echo", { say: "a" }, { metadata: signed, replayable: false }),
          LLMRequest.toolCall("call_2", "echo", { say: "b" })
        )
      )
      const body = JSON.stringify(
        Gemini.body({
          model: { providerID: "google", modelID: "gemini-3-pro" },
          system: "",
          messages: project(message)
        })
      )
      expect(body).not.toContain("sig-thought")
      expect(body).not.toContain("sig-call")
      expect(body).toContain(Gemini.skipSignatureValidation)
    }
  })
})
