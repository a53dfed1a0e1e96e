import { describe, expect, it } from "@effect/vitest"
import { JsonSchemaValidator, SessionHistory, SessionInput, SessionRunner, StructuredOutput } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import type { OutputFormat } from "@opencode-ai/schema"
import { Effect, Either } from "effect"
import { world } from "../runner/world.js"

/**
 * Structured Output in the runner, over a real Core and the ScriptedLLMServer: the agent's step limit
 * (the last Step may call only `StructuredOutput`), the durable failure count (from history), and the
 * validator's rules. The HTTP behaviour is `server/test/structured-output.test.ts`.
 */

const { reply, text, toolCall } = LLMScript

const schema = {
  type: "object",
  properties: { answer: { type: "string" } },
  required: ["answer"],
  additionalProperties: false
}
const format: OutputFormat.OutputFormatJsonSchema = { type: "json_schema", schema }

/** Admits a prompt (with `promptFormat`) into the world's session and wakes it. */
const ask = (w: Effect.Effect.Success<ReturnType<typeof world>>, words: string, promptFormat?: OutputFormat.Format) =>
  w.run(
    Effect.gen(function* () {
      yield* (yield* SessionInput.Service).admit(w.session.id, {
        prompt: { text: words, ...(promptFormat === undefined ? {} : { format: promptFormat }) }
      })
      yield* (yield* SessionRunner.Service).wake(w.session.id)
    })
  )

const context = (w: Effect.Effect.Success<ReturnType<typeof world>>) =>
  w.run(Effect.flatMap(SessionHistory.Service, (history) => history.context(w.session.id)))

describe("StructuredOutput", () => {
  it.scopedLive("at the agent's step limit only StructuredOutput may be chosen, and it still answers", () =>
    Effect.gen(function* () {
      const w = yield* world({ agent: { build: { steps: 2 } } })
      yield* w.server.enqueue(
        reply(toolCall("call_1", "glob", { pattern: "*" })),
        reply(toolCall("call_2", "StructuredOutput", { answer: "done" }))
      )
      yield* ask(w, "go", format)
      yield* w.wait
      const [first, last] = yield* w.server.requests
      expect(first?.body.tool_choice).toBe("required")
      expect(last?.body.tool_choice).toEqual({ type: "function", function: { name: "StructuredOutput" } })
      const assistants = (yield* context(w)).filter((m) => m.type === "assistant")
      expect(assistants.map((m) => m.structured)).toEqual([undefined, { answer: "done" }])
    })
  )

  it.scopedLive("reaching the step limit without a valid call fails the last step with StructuredOutputError", () =>
    Effect.gen(function* () {
      const w = yield* world({ agent: { build: { steps: 1 } } })
      // At the limit only StructuredOutput runs: another tool is refused, and the Step cannot continue.
      yield* w.server.enqueue(reply(toolCall("call_1", "glob", { pattern: "*" })))
      yield* ask(w, "go", format)
      yield* w.wait
      const [assistant] = (yield* context(w)).filter((m) => m.type === "assistant")
      expect(assistant?.type === "assistant" && assistant.error).toEqual({
        name: "StructuredOutputError",
        data: { message: "The model reached its step limit without a valid StructuredOutput call", retries: 0 }
      })
      expect((yield* w.server.requests).length).toBe(1)
    })
  )

  it.scopedLive("the failures counted are those since the latest prompt; a later text prompt asks for nothing", () =>
    Effect.gen(function* () {
      const w = yield* world()
      yield* w.server.enqueue(
        reply(toolCall("call_1", "StructuredOutput", { answer: 1 })),
        reply(toolCall("call_2", "StructuredOutput", { answer: "ok" })),
        reply(text("plain"))
      )
      yield* ask(w, "first", { ...format, retryCount: 3 })
      yield* w.wait
      // One failed call in history before the capture: a Step assembled now would count it.
      const afterFirst = yield* context(w)
      expect(StructuredOutput.requested(afterFirst)).toEqual({ format: { ...format, retryCount: 3 }, failures: 1 })
      yield* ask(w, "second")
      yield* w.wait
      const afterSecond = yield* context(w)
      expect(StructuredOutput.requested(afterSecond)).toBeUndefined()
      const last = (yield* w.server.requests).at(-1)
      expect(last?.body.tools.map((t: any) => t.function.name)).not.toContain("StructuredOutput")
      expect(last?.body.tool_choice).toBeUndefined()
    })
  )

  it.effect("a second call after a valid one is refused without counting; unparsable input counts", () =>
    Effect.gen(function* () {
      const attempt = yield* StructuredOutput.attempt(
        { format: { ...format, retryCount: 1 }, failures: 0 },
        { final: false }
      )
      const none = { definitions: [], settle: () => Effect.dieMessage("not offered") }
      const tools = attempt.offer(none)
      expect(tools.definitions.map((d) => d.name)).toEqual(["StructuredOutput"])
      const context = {} as never
      const broken = yield* Effect.either(
        tools.settle({ id: "a", name: "StructuredOutput", input: {}, inputError: "not JSON" }, context)
      )
      expect(Either.isLeft(broken)).toBe(true)
      expect(yield* attempt.verdict(1)).toEqual(StructuredOutput.Verdict.Pending({ failures: 1 }))
      const valid = yield* tools.settle({ id: "b", name: "StructuredOutput", input: { answer: "x" } }, context)
      expect(valid.structured).toEqual({ answer: "x" })
      const again = yield* Effect.either(
        tools.settle({ id: "c", name: "StructuredOutput", input: { answer: "y" } }, context)
      )
      expect(Either.isLeft(again) && again.left.message).toContain("already recorded")
      expect(yield* attempt.verdict(3)).toEqual(StructuredOutput.Verdict.Captured({ failures: 1 }))
    })
  )

  it.effect("the validator takes draft-07 and 2020-12 object schemas and reports every error with its path", () =>
    Effect.gen(function* () {
      const compiled = yield* JsonSchemaValidator.compile({
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        properties: { tags: { type: "array", prefixItems: [{ type: "string" }] }, n: { type: "integer" } },
        required: ["n"]
      })
      if (Either.isLeft(compiled)) return yield* Effect.dieMessage(compiled.left)
      expect(compiled.right.validate({ n: 1, tags: ["a"] })).toEqual([])
      expect(compiled.right.validate({ n: "1", tags: [2] })).toEqual(["/tags/0 must be string", "/n must be integer"])
      expect(Either.isLeft(yield* JsonSchemaValidator.compile({ type: "string" }))).toBe(true)
      expect(Either.isLeft(yield* JsonSchemaValidator.compile({ type: "object", required: "n" }))).toBe(true)
    })
  )
})
