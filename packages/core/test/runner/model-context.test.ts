import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import {
  AgentPrompt,
  InstructionCheckpoint,
  InstructionEntries,
  LLMRequest,
  ModelContext,
  ModelIdentity,
  StepSelection
} from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { Effect, Option } from "effect"
import { world } from "./world.js"

/**
 * Model Context on its own: after real Steps have written a session's history (a tool call, an
 * answer, an Instruction Update, a second prompt), `ModelContext.assemble` projects that history and
 * the checkpoint's baseline into the one provider request of the next Step.
 */

const { reply, text, toolCall, finish } = LLMScript

const echo = {
  name: "echo",
  description: "Echo the input back",
  inputSchema: { type: "object", properties: { say: { type: "string" } }, required: ["say"] },
  execute: (input: Readonly<Record<string, unknown>>) =>
    Effect.succeed({ content: [{ type: "text" as const, text: `echo: ${String(input.say)}` }] })
}

/** A session whose history holds a tool step, an answer, an Instruction Update and a second exchange. */
const conversation = (options: Parameters<typeof world>[0] = {}) =>
  Effect.gen(function* () {
    const w = yield* world(options)
    fs.writeFileSync(path.join(w.directory, "AGENTS.md"), "Always answer in haiku.")
    yield* w.register(echo)
    yield* w.server.enqueue(
      reply(toolCall("call_1", "echo", { say: "x" }), finish("tool-calls")),
      reply(text("done"), finish("stop")),
      reply(text("ok"), finish("stop"))
    )
    yield* w.prompt("first")
    yield* w.wait
    yield* w.run(Effect.flatMap(InstructionEntries.Service, (entries) => entries.put(w.session.id, "ticket", "T-42")))
    yield* w.prompt("second")
    yield* w.wait
    const checkpoint = Option.getOrThrow(
      yield* w.run(Effect.flatMap(InstructionCheckpoint.Service, (store) => store.get(w.session.id)))
    )
    const assemble = (step: number, baselineSeq = checkpoint.baselineSeq) =>
      w.run(
        Effect.gen(function* () {
          const selection = yield* (yield* StepSelection.Service).select(w.session.id, step)
          if (selection._tag !== "Selected") return yield* Effect.dieMessage("no model")
          const assembled = yield* (yield* ModelContext.Service).assemble({
            sessionID: w.session.id,
            selection,
            instructions: { baseline: checkpoint.baseline, baselineSeq }
          })
          return assembled.request
        })
      )
    return { ...w, checkpoint, assemble }
  })

describe("ModelContext", () => {
  it.scopedLive(
    "projects the history (tool calls with their results, Instruction Updates in place) behind one system text",
    () =>
      Effect.gen(function* () {
        const w = yield* conversation()
        const request = yield* w.assemble(1)
        // The one system text: the agent's prompt (the model family's), the identity line, then the
        // Instruction Baseline verbatim.
        expect(request.system).toBe(
          `${AgentPrompt.forAgent("build", { providerID: "scripted", apiID: "m" })}\n\n${ModelIdentity.line({ providerID: "scripted", apiID: "m" })}\n${w.checkpoint.baseline}`
        )
        expect(w.checkpoint.baseline).toContain("Always answer in haiku.")
        expect(w.checkpoint.baseline).not.toContain("T-42")
        const [update] = (yield* w.events).filter((e) => e.type === "session.next.context.updated")
        expect(request.messages).toEqual([
          LLMRequest.user("first"),
          LLMRequest.assistant(LLMRequest.toolCall("call_1", "echo", { say: "x" })),
          LLMRequest.tool(LLMRequest.toolResult("call_1", "echo", "echo: x")),
          LLMRequest.assistant(LLMRequest.text("done")),
          // The entry joined after the baseline: an Instruction Update at its place, before the input
          // promoted at the same boundary.
          LLMRequest.instructionUpdate((update!.data as { text: string }).text),
          LLMRequest.user("second"),
          LLMRequest.assistant(LLMRequest.text("ok"))
        ])
        expect((update!.data as { text: string }).text).toContain("T-42")
        expect(request.tools?.map((tool) => tool.name)).toContain("echo")
        expect(request.toolChoice).toBeUndefined()
        expect(request.model).toEqual({ providerID: "scripted", modelID: "m" })
        expect(request.headers).toEqual({ "x-session-id": w.session.id, "x-session-affinity": w.session.id })
      })
  )

  it.scopedLive("leaves out the Instruction Updates the baseline already contains (at or before its seq)", () =>
    Effect.gen(function* () {
      const w = yield* conversation()
      const [update] = (yield* w.events).filter((e) => e.type === "session.next.context.updated")
      const request = yield* w.assemble(1, update!.durable.seq)
      expect(request.messages.some((message) => message.role === "instruction-update")).toBe(false)
      expect(request.messages.filter((message) => message.role === "user")).toEqual([
        LLMRequest.user("first"),
        LLMRequest.user("second")
      ])
    })
  )

  it.scopedLive("at the agent's step limit the tools stay declared, none may be chosen, and max-steps closes it", () =>
    Effect.gen(function* () {
      const w = yield* conversation({ agent: { build: { steps: 3 } } })
      expect((yield* w.assemble(2)).toolChoice).toBeUndefined()
      const request = yield* w.assemble(3)
      expect(request.tools?.map((tool) => tool.name)).toContain("echo")
      expect(request.toolChoice).toBe("none")
      expect(request.messages.at(-1)).toEqual(LLMRequest.assistant(LLMRequest.text(AgentPrompt.maxSteps)))
    })
  )
})
