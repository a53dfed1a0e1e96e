import { describe, expect, it } from "@effect/vitest"
import { LLMScript } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { world } from "./world.js"

const { reply, reasoning, text, toolCall, usage } = LLMScript

/** A tool that echoes its input. */
const echo = {
  name: "echo",
  description: "Echo the input back",
  inputSchema: {
    type: "object",
    properties: { say: { type: "string" } },
    required: ["say"],
    additionalProperties: false
  },
  execute: (input: Readonly<Record<string, unknown>>) =>
    Effect.succeed({ content: [{ type: "text" as const, text: `echo: ${String(input.say)}` }], structured: {} })
}

describe("a session on a Gemini provider (npm @ai-sdk/google, loopback server)", () => {
  it.scopedLive(
    "a tool turn: the signed call runs, its signature is durable, the next step replays thought and call natively",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ protocol: "google" })
        yield* w.register(echo)
        yield* w.server.enqueue(
          reply(
            reasoning(["I will ", "echo."], { signature: "sig-thought" }),
            toolCall("call_g1", "echo", { say: "hi" }, { signature: "sig-call" }),
            usage({ input: 900, output: 12, reasoning: 40, cacheRead: 100 })
          ),
          reply(text("Echoed: hi"), usage({ input: 950, output: 4 }))
        )
        yield* w.prompt("say hi through echo")
        yield* w.wait

        const [first, second] = yield* w.server.requests
        expect(first?.path).toBe("/v1/models/m:streamGenerateContent")
        expect(first?.query).toBe("alt=sse")
        expect(first?.headers["x-goog-api-key"]).toBe("test-key")
        expect(first?.headers["x-session-id"]).toBe(w.session.id)
        expect(first?.body.systemInstruction.parts[0].text.indexOf("You are OpenCode")).toBe(0)
        expect(first?.body.contents).toEqual([{ role: "user", parts: [{ text: "say hi through echo" }] }])
        expect(first?.body.generationConfig).toEqual({ maxOutputTokens: 1000 })
        const declarations = first?.body.tools[0].functionDeclarations as Array<{ name: string }>
        expect(declarations.find((declaration) => declaration.name === "echo")).toEqual({
          name: "echo",
          description: "Echo the input back",
          parameters: { type: "OBJECT", properties: { say: { type: "STRING" } }, required: ["say"] }
        })

        // Both signatures are durable with what they belong to.
        const events = yield* w.events
        expect(events.find((e) => e.type === "session.next.reasoning.ended")?.data).toMatchObject({
          text: "I will echo.",
          providerMetadata: { google: { thoughtSignature: "sig-thought" } }
        })
        expect(events.find((e) => e.type === "session.next.tool.called")?.data).toMatchObject({
          callID: "call_g1",
          tool: "echo",
          input: { say: "hi" },
          provider: { executed: false, metadata: { google: { thoughtSignature: "sig-call" } } }
        })
        const ended = events.filter((e) => e.type === "session.next.step.ended").map((e) => e.data as any)
        expect(ended.map((data) => data.finish)).toEqual(["tool-calls", "stop"])
        expect(ended[0].tokens).toMatchObject({ input: 900, output: 12, reasoning: 40, cache: { read: 100 } })

        // Same provider and model, successful step: the thought and the call go back with their signatures,
        // the result answers the call by name.
        expect(second?.body.contents).toEqual([
          { role: "user", parts: [{ text: "say hi through echo" }] },
          {
            role: "model",
            parts: [
              { text: "I will echo.", thought: true, thoughtSignature: "sig-thought" },
              { functionCall: { name: "echo", args: { say: "hi" } }, thoughtSignature: "sig-call" }
            ]
          },
          { role: "user", parts: [{ functionResponse: { name: "echo", response: { output: "echo: hi" } } }] }
        ])
        const answer = events.find((e) => e.type === "session.next.text.ended")?.data as any
        expect(answer.text).toBe("Echoed: hi")
      })
  )
})
