import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { createOpencodeClient } from "@opencode-ai/client"
import { OpencodeClient } from "@opencode-ai/client/effect"
import { ChatRequest, LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { call, configHome, startServer, tempDir } from "./harness.js"

/**
 * Structured Output over HTTP: the real listener, configured by an `opencode.json` whose provider is
 * a ScriptedLLMServer on 127.0.0.1 (both wire protocols), driven through the generated Promise and
 * Effect clients. A prompt's `format: {type: "json_schema", schema}` makes the runner offer the
 * `StructuredOutput` tool, add its instruction and require a tool call; a valid call is the assistant
 * message's `structured` value; invalid ones retry until `retryCount`, then StructuredOutputError.
 */

const { reply, text, toolCall } = LLMScript

const schema = {
  type: "object",
  properties: { city: { type: "string" }, population: { type: "integer", minimum: 0 } },
  required: ["city", "population"],
  additionalProperties: false
}
const answer = { city: "Lisbon", population: 545_000 }
const format = { type: "json_schema" as const, schema }

/** The instruction's first words, as the system text carries them. */
const instruction = "The user asked for a structured answer."

/**
 * A scripted provider (its `turns` queued first) and the real server over it; `dataHome` reuses a data
 * home (the database) of an earlier server.
 */
const start = (
  protocol: "openai-compatible" | "anthropic" = "openai-compatible",
  options: { readonly dataHome?: string; readonly turns?: ReadonlyArray<LLMScript.Turn> } = {}
) =>
  Effect.gen(function* () {
    const { dataHome } = options
    const llm = yield* ScriptedLLMServer.make()
    yield* llm.enqueue(...(options.turns ?? []))
    const server = yield* startServer({
      XDG_CONFIG_HOME: configHome(ScriptedLLMServer.config(llm.url, { protocol })),
      ...(dataHome === undefined ? {} : { XDG_DATA_HOME: dataHome })
    })
    const client = createOpencodeClient({ baseUrl: server.url })
    return { llm, server, client }
  })

type Started = Effect.Effect.Success<ReturnType<typeof start>>

/** A session whose prompt (with `promptFormat`) ran to the end; its messages, oldest first. */
const run = (host: Started, promptFormat: unknown, words = "Which city, and how many people live there?") =>
  Effect.gen(function* () {
    const session = yield* Effect.promise(() => host.client.sessions.create({}))
    const admitted = yield* call(`${host.server.url}/api/session/${session.id}/prompt`, "POST", {
      prompt: { text: words, format: promptFormat }
    })
    expect(admitted.status).toBe(200)
    yield* Effect.promise(() => host.client.sessions.wait({ sessionID: session.id }))
    const messages = yield* Effect.promise(() => host.client.sessions.messages({ sessionID: session.id, order: "asc" }))
    const history = yield* Effect.promise(() => host.client.sessions.history({ sessionID: session.id }))
    return { session, admitted: admitted.body.data, messages: messages.items as Array<any>, history: history.data }
  })

const assistants = (messages: ReadonlyArray<any>) => messages.filter((m) => m.type === "assistant")
const failures = (history: ReadonlyArray<any>) => history.filter((e) => e.type === "session.next.step.failed")

describe("structured output over HTTP", () => {
  it.scoped("a json_schema prompt is answered by a validated object, read back through both clients", () =>
    Effect.gen(function* () {
      const host = yield* start()
      yield* host.llm.enqueue(reply(text("Looking it up."), toolCall("call_1", "StructuredOutput", answer)))
      const { session, admitted, messages, history } = yield* run(host, format)

      // The format is part of the admitted prompt and of the user message.
      expect(admitted.prompt.format).toEqual(format)
      expect(messages.find((m) => m.type === "user").format).toEqual(format)
      // One Step: the call succeeded, its input is the message's structured value, and nothing followed.
      const [assistant, ...rest] = assistants(messages)
      expect(rest).toEqual([])
      expect(assistant.structured).toEqual(answer)
      expect(assistant.error).toBeUndefined()
      expect(assistant.finish).toBe("tool-calls")
      const tool = assistant.content.find((part: any) => part.type === "tool")
      expect(tool).toMatchObject({ name: "StructuredOutput", state: { status: "completed", structured: answer } })
      expect(failures(history)).toEqual([])
      expect((yield* host.llm.requests).length).toBe(1)

      // The Effect client decodes the same message, with its structured value.
      const effectClient = yield* OpencodeClient.make({ baseUrl: host.server.url }).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      const decoded = yield* effectClient.sessions.message({
        sessionID: session.id as any,
        messageID: assistant.id
      })
      expect(decoded.type === "assistant" && decoded.structured).toEqual(answer)
      const page = yield* effectClient.sessions.messages({ sessionID: session.id as any, order: "asc" })
      const user = page.items.find((m) => m.type === "user")
      expect(user?.type === "user" && user.format).toEqual(format)

      // The provider was offered the tool with the user's schema, told to use it, and required to call one.
      const [request] = yield* host.llm.requests
      const offered = ((request?.body.tools ?? []) as Array<any>).find((t) => t.function.name === "StructuredOutput")
      expect(offered.function.parameters).toEqual(schema)
      expect(offered.function.description).toContain("once, as the very last thing")
      expect(request?.body.tool_choice).toBe("required")
      const system = ChatRequest.system(request!)
      expect(system).toContain(instruction)
      // After the other system parts: the instruction ends the system text.
      expect(system.trimEnd().endsWith("always finish with the StructuredOutput call.")).toBe(true)
      // The other tools are still offered.
      expect(ChatRequest.toolNames(request!)).toContain("read")
    })
  )

  it.scoped("the Anthropic wire carries the tool's input_schema, tool_choice any and the instruction", () =>
    Effect.gen(function* () {
      const host = yield* start("anthropic")
      yield* host.llm.enqueue(reply(toolCall("toolu_1", "StructuredOutput", answer)))
      const { messages } = yield* run(host, { ...format, retryCount: 0 })
      expect(assistants(messages).map((m) => m.structured)).toEqual([answer])
      const [request] = yield* host.llm.requests
      expect(request?.path).toMatch(/\/messages$/)
      const offered = ((request?.body.tools ?? []) as Array<any>).find((t) => t.name === "StructuredOutput")
      expect(offered.input_schema).toEqual(schema)
      expect(request?.body.tool_choice).toEqual({ type: "any" })
      const system = ((request?.body.system ?? []) as Array<{ text: string }>).map((block) => block.text).join("")
      expect(system).toContain(instruction)
    })
  )

  it.scoped("a text prompt (or one with format text) gets no StructuredOutput tool and no required call", () =>
    Effect.gen(function* () {
      const host = yield* start()
      yield* host.llm.enqueue(reply(text("Lisbon.")), reply(text("Porto.")))
      yield* run(host, { type: "text" })
      yield* run(host, undefined)
      for (const request of yield* host.llm.requests) {
        expect(ChatRequest.toolNames(request)).not.toContain("StructuredOutput")
        expect(request.body.tool_choice).toBeUndefined()
        expect(ChatRequest.system(request)).not.toContain(instruction)
      }
    })
  )

  it.scoped("an invalid call fails with the validation errors, the model retries, and the valid one counts", () =>
    Effect.gen(function* () {
      const host = yield* start()
      yield* host.llm.enqueue(
        reply(toolCall("call_1", "StructuredOutput", { city: "Lisbon", population: "many" })),
        reply(toolCall("call_2", "StructuredOutput", answer))
      )
      const { messages, history } = yield* run(host, format)
      const [first, second, ...rest] = assistants(messages)
      expect(rest).toEqual([])
      const failed = first.content.find((part: any) => part.type === "tool")
      expect(failed.state.status).toBe("error")
      expect(failed.state.error.message).toContain("/population must be integer")
      expect(first.structured).toBeUndefined()
      expect(second.structured).toEqual(answer)
      expect(failures(history)).toEqual([])
      // The model read the errors as the call's result.
      const requests = yield* host.llm.requests
      expect(requests.length).toBe(2)
      expect(ChatRequest.toolResult(requests[1]!, "call_1")).toContain("/population must be integer")
      expect(requests[1]?.body.tool_choice).toBe("required")
    })
  )

  it.scoped("retries used up: the step fails with StructuredOutputError {message, retries}", () =>
    Effect.gen(function* () {
      const host = yield* start()
      yield* host.llm.enqueue(
        reply(toolCall("call_1", "StructuredOutput", { city: "Lisbon" })),
        reply(toolCall("call_2", "StructuredOutput", { city: 7, population: 1 })),
        // Never requested: the run stops after the second failure.
        reply(toolCall("call_3", "StructuredOutput", answer))
      )
      const { messages, history } = yield* run(host, { ...format, retryCount: 1 })
      const last = assistants(messages).at(-1)
      expect(last.error).toEqual({
        name: "StructuredOutputError",
        data: { message: expect.stringContaining("after 1 retry"), retries: 1 }
      })
      expect(assistants(messages).every((m) => m.structured === undefined)).toBe(true)
      const [failure, ...more] = failures(history)
      expect(more).toEqual([])
      expect(failure.data.error).toEqual(last.error)
      expect((yield* host.llm.requests).length).toBe(2)
      expect(yield* host.llm.remaining).toBe(1)
    })
  )

  it.scoped("the default retryCount is 2: three invalid calls, then StructuredOutputError", () =>
    Effect.gen(function* () {
      const host = yield* start()
      const wrong = (id: string) => reply(toolCall(id, "StructuredOutput", { city: "Lisbon", population: -1 }))
      yield* host.llm.enqueue(wrong("call_1"), wrong("call_2"), wrong("call_3"), reply(text("unused")))
      const { messages } = yield* run(host, format)
      expect(assistants(messages).at(-1).error).toMatchObject({ name: "StructuredOutputError", data: { retries: 2 } })
      expect((yield* host.llm.requests).length).toBe(3)
    })
  )

  it.scoped("a reply without the tool call fails the step with StructuredOutputError", () =>
    Effect.gen(function* () {
      const host = yield* start()
      yield* host.llm.enqueue(reply(text("Lisbon, about half a million people.")))
      const { messages, history } = yield* run(host, format)
      const [assistant] = assistants(messages)
      expect(assistant.error).toEqual({
        name: "StructuredOutputError",
        data: { message: "The model answered without calling the StructuredOutput tool", retries: 0 }
      })
      expect(failures(history).map((e) => e.data.error.name)).toEqual(["StructuredOutputError"])
    })
  )

  it.scoped("other tools first: the run continues until the StructuredOutput call", () =>
    Effect.gen(function* () {
      const host = yield* start()
      yield* host.llm.enqueue(
        reply(toolCall("call_1", "glob", { pattern: "*.md" })),
        reply(toolCall("call_2", "StructuredOutput", answer))
      )
      const { messages } = yield* run(host, format)
      expect(assistants(messages).map((m) => m.structured)).toEqual([undefined, answer])
      expect((yield* host.llm.requests).length).toBe(2)
    })
  )

  it.scoped("a schema that is not a usable JSON Schema object is a tagged 400, and nothing is admitted", () =>
    Effect.gen(function* () {
      const host = yield* start()
      const session = yield* Effect.promise(() => host.client.sessions.create({}))
      const url = `${host.server.url}/api/session/${session.id}/prompt`
      const bad: ReadonlyArray<[unknown, string | undefined]> = [
        [{ type: "json_schema", schema: { type: "objekt" } }, "prompt.format.schema"],
        [{ type: "json_schema", schema: { type: "array", items: {} } }, "prompt.format.schema"],
        [
          { type: "json_schema", schema: { type: "object", properties: { a: { $ref: "#/$defs/no" } } } },
          "prompt.format.schema"
        ],
        [
          { type: "json_schema", schema: { type: "object", properties: { a: { pattern: "(" } } } },
          "prompt.format.schema"
        ],
        [
          { type: "json_schema", schema: { type: "object", $schema: "https://example.com/mine" } },
          "prompt.format.schema"
        ],
        [{ type: "json_schema", schema: { type: "object", description: "x".repeat(70_000) } }, "prompt.format.schema"],
        [{ type: "json_schema", schema: [] }, undefined],
        [{ type: "json_schema" }, undefined],
        [{ type: "json_schema", schema, retryCount: -1 }, undefined],
        [{ type: "json_schema", schema, retryCount: 1.5 }, undefined],
        [{ type: "yaml" }, undefined],
        [{ type: "text", schema }, undefined]
      ]
      for (const [badFormat, field] of bad) {
        const response = yield* call(url, "POST", { prompt: { text: "hi", format: badFormat } })
        expect(response.status, JSON.stringify(badFormat).slice(0, 200)).toBe(400)
        expect(response.body._tag).toBe("InvalidRequestError")
        if (field !== undefined) expect(response.body.field).toBe(field)
        expect(JSON.stringify(response.body).length).toBeLessThan(2_000)
      }
      const history = yield* Effect.promise(() => host.client.sessions.history({ sessionID: session.id }))
      expect(history.data.filter((e: any) => e.type === "session.next.prompt.admitted")).toEqual([])
      expect((yield* host.llm.requests).length).toBe(0)
    })
  )

  it.scoped("the same prompt id with another format is a 409: the format is part of the prompt", () =>
    Effect.gen(function* () {
      const host = yield* start()
      const session = yield* Effect.promise(() => host.client.sessions.create({}))
      const url = `${host.server.url}/api/session/${session.id}/prompt`
      const id = "msg_0123456789abAAAAAAAAAAAAAA"
      const first = yield* call(url, "POST", { id, prompt: { text: "hi", format }, resume: false })
      expect(first.status).toBe(200)
      const again = yield* call(url, "POST", { id, prompt: { text: "hi", format }, resume: false })
      expect(again.status).toBe(200)
      const other = yield* call(url, "POST", {
        id,
        prompt: { text: "hi", format: { ...format, retryCount: 5 } },
        resume: false
      })
      expect(other.status).toBe(409)
      expect(other.body._tag).toBe("ConflictError")
    })
  )

  it.scoped("a restart keeps the admitted prompt's format: the next host answers it with a structured value", () =>
    Effect.gen(function* () {
      const dataHome = tempDir("structured-data")
      // The first host admits the prompt without running it, then stops.
      const sessionID = yield* Effect.scoped(
        Effect.gen(function* () {
          const host = yield* start("openai-compatible", { dataHome })
          const session = yield* Effect.promise(() => host.client.sessions.create({}))
          const admitted = yield* call(`${host.server.url}/api/session/${session.id}/prompt`, "POST", {
            prompt: { text: "Which city?", format },
            resume: false
          })
          expect(admitted.status).toBe(200)
          expect((yield* host.llm.requests).length).toBe(0)
          return session.id as string
        })
      )
      // The next host over the same data home wakes the session with pending input at startup.
      const host = yield* start("openai-compatible", {
        dataHome,
        turns: [reply(toolCall("call_1", "StructuredOutput", answer))]
      })
      const request = yield* host.llm.awaitRequest(1)
      expect(ChatRequest.toolNames(request)).toContain("StructuredOutput")
      expect(request.body.tool_choice).toBe("required")
      yield* Effect.promise(() => host.client.sessions.wait({ sessionID }))
      const messages = yield* Effect.promise(() => host.client.sessions.messages({ sessionID, order: "asc" }))
      expect(messages.items.find((m: any) => m.type === "user")).toMatchObject({ format })
      expect(assistants(messages.items).map((m) => m.structured)).toEqual([answer])
    })
  )
})
