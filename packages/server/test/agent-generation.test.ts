import { describe, expect, it } from "@effect/vitest"
import { AgentGeneration, AgentGenerationPrompt, Config } from "@opencode-ai/core"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect, Either } from "effect"
import { call, startServer } from "./harness.js"

const { reply, text, finish } = LLMScript

const proposal = {
  identifier: "test-writer",
  whenToUse: 'Use this agent when tests are missing.\n<example>\nuser: "add tests"\n</example>',
  systemPrompt: "You write focused unit tests."
}

/** A server over a scripted model, and the scripted model. */
const world = Effect.gen(function* () {
  const llm = yield* ScriptedLLMServer.make()
  const { url } = yield* startServer({}, { config: Config.layerTest(ScriptedLLMServer.config(llm.url)) })
  return { llm, url: `${url}/api/agent/generate` }
})

describe("seed 003 agent-generation request (POST /api/agent/generate)", () => {
  it.scoped(
    "the model's JSON answer (even fenced) is the proposal; the request has our prompt, no tools, the taken names",
    () =>
      Effect.gen(function* () {
        const { llm, url } = yield* world
        yield* llm.enqueue(reply(text(`Here it is:\n\`\`\`json\n${JSON.stringify(proposal)}\n\`\`\``), finish("stop")))
        const answer = yield* call(url, "POST", { description: "an agent that writes unit tests" })
        expect(answer).toEqual({ status: 200, body: { data: proposal } })
        const request = yield* llm.awaitRequest(1)
        expect(request.body.tools).toBeUndefined()
        expect(request.body.messages[0]).toEqual({ role: "system", content: AgentGenerationPrompt.system })
        const user = request.body.messages[1].content as string
        expect(user).toContain(JSON.stringify("an agent that writes unit tests"))
        for (const taken of ["build", "plan", "general", "explore"]) expect(user).toContain(JSON.stringify(taken))
      })
  )

  it.scoped("an unusable answer or a failing provider is a 503; asking again may succeed", () =>
    Effect.gen(function* () {
      const { llm, url } = yield* world
      yield* llm.enqueue(reply(text("I cannot help with that."), finish("stop")))
      const prose = yield* call(url, "POST", { description: "anything" })
      expect(prose.status).toBe(503)
      expect(prose.body).toMatchObject({ _tag: "ServiceUnavailableError", service: "agent-generation" })
      expect(prose.body.message).toContain("no JSON object")
      // An existing agent's name is refused.
      yield* llm.enqueue(reply(text(JSON.stringify({ ...proposal, identifier: "build" })), finish("stop")))
      const taken = yield* call(url, "POST", { description: "anything" })
      expect(taken.status).toBe(503)
      expect(taken.body.message).toContain('"build" is already')
      // No turn scripted: the scripted server answers 400, a provider failure.
      const failing = yield* call(url, "POST", { description: "anything" })
      expect(failing.status).toBe(503)
      expect(failing.body.message).toContain("could not be reached")
    })
  )

  it.scoped("bad input is a tagged 400: an empty description, an unknown model", () =>
    Effect.gen(function* () {
      const { llm, url } = yield* world
      const empty = yield* call(url, "POST", { description: "" })
      expect(empty).toMatchObject({ status: 400, body: { _tag: "InvalidRequestError" } })
      const unknown = yield* call(url, "POST", { description: "x", model: { providerID: "nope", id: "m" } })
      expect(unknown).toMatchObject({ status: 400, body: { _tag: "InvalidRequestError", field: "model" } })
      expect(yield* llm.requests).toHaveLength(0)
    })
  )
})

describe("AgentGeneration.parse", () => {
  it("reads the object out of surrounding text and checks the identifier", () => {
    const taken = ["build"]
    expect(AgentGeneration.parse(`{"a":1} ${JSON.stringify(proposal)}`, taken)).toEqual(
      Either.left("the answer is not a JSON object with a lowercase-hyphenated identifier, whenToUse and systemPrompt")
    )
    expect(AgentGeneration.parse(`Sure! ${JSON.stringify(proposal)} Enjoy.`, taken)).toEqual(Either.right(proposal))
    expect(
      Either.isLeft(AgentGeneration.parse(JSON.stringify({ ...proposal, identifier: "Test Writer" }), taken))
    ).toBe(true)
    expect(Either.isLeft(AgentGeneration.parse(JSON.stringify({ ...proposal, systemPrompt: 3 }), taken))).toBe(true)
  })
})
