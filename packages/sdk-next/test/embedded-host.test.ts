import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { type ConfigInfo, LiveBus } from "@opencode-ai/core"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { HostTool, OpenCode } from "@opencode-ai/sdk-next"
import { Context, Effect, Exit, Fiber, Layer, Schema, Scope, Stream } from "effect"

/*
 * What only a same-process host offers, through Embedded OpenCode: the host as a Layer, Host Tools
 * the model calls, a configuration given as a typed value (no file anywhere), and streamed responses
 * that outlive the request effect that opened them.
 */

const { reply, text, toolCall, finish } = LLMScript
const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), `opencode-${prefix}-`))

/** Options for a host over a fresh database, no config file anywhere, the given config document. */
const options = (config: ConfigInfo.Info, extra: Partial<OpenCode.EmbeddedOptions> = {}): OpenCode.EmbeddedOptions => {
  const dir = temp("embedded-host")
  return {
    databaseFile: path.join(dir, "opencode.db"),
    directory: temp("instance"),
    configDir: path.join(dir, "config"),
    env: { XDG_DATA_HOME: path.join(dir, "data") },
    config,
    eventStreams: { heartbeat: "50 millis" },
    ...extra
  }
}

/** The JSON-decoded body of the `index`-th model request (1-based). */
const body = (llm: ScriptedLLMServer.ScriptedLLMServer, index: number) =>
  Effect.map(llm.awaitRequest(index), (request) => request.body)

/** The `role: "tool"` messages of an OpenAI-compatible request body. */
const toolMessages = (requestBody: any): Array<{ tool_call_id: string; content: string }> =>
  requestBody.messages.filter((m: any) => m.role === "tool")

const toolNames = (requestBody: any): Array<string> => (requestBody.tools ?? []).map((t: any) => t.function.name)

const prompt = (host: OpenCode.Embedded, sessionID: string, words: string) =>
  host.sessions.prompt({ sessionID: sessionID as never, prompt: { text: words } })

const Weather = Schema.Struct({
  city: Schema.String.annotations({ description: "The city" }),
  days: Schema.optional(Schema.Int.pipe(Schema.between(1, 7)))
})

/** A Host Tool that records its calls. */
const weatherTool = (calls: Array<{ input: typeof Weather.Type; sessionID: string }>) =>
  HostTool.make({
    name: "weather",
    description: "The forecast for a city",
    parameters: Weather,
    execute: (input, context) =>
      Effect.sync(() => {
        calls.push({ input, sessionID: context.sessionID })
        return `Sunny in ${input.city} for ${input.days ?? 1} day(s)`
      })
  })

describe("OpenCode.layer", () => {
  it.scopedLive("provides OpenCode.Service through the same creation path; closing the layer frees the database", () =>
    Effect.gen(function* () {
      const opts = options({})
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(OpenCode.layer(opts), scope)
      const host = Context.get(context, OpenCode.Service)
      const session = yield* host.sessions.create()
      expect(session.id).toMatch(/^ses_/)
      // Same file, same process: refused while the layer's host runs.
      const refused = yield* OpenCode.embedded(opts).pipe(Effect.flip)
      expect(refused._tag).toBe("StorageInUseError")
      yield* Scope.close(scope, Exit.void)
      // Closed: the file is free again, and the session is still there.
      const again = yield* OpenCode.embedded(opts)
      expect((yield* again.sessions.get({ sessionID: session.id })).id).toBe(session.id)
    })
  )

  it.effect("fails to build with the host's own errors (an invalid config document)", () =>
    Effect.gen(function* () {
      const error = yield* Layer.build(OpenCode.layer(options({ model: "nowhere/none" } as ConfigInfo.Info))).pipe(
        Effect.scoped,
        Effect.flip
      )
      expect(error._tag).toBe("ConfigError")
    })
  )
})

describe("Host Tools", () => {
  it.scopedLive("the scripted model calls a Host Tool and its result reaches the next Step", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const calls: Array<{ input: typeof Weather.Type; sessionID: string }> = []
      const host = yield* OpenCode.embedded(options(ScriptedLLMServer.config(llm.url), { tools: [weatherTool(calls)] }))
      yield* llm.enqueue(
        reply(toolCall("call_1", "weather", { city: "Oslo", days: 2 }), finish("tool-calls")),
        reply(text("Sunny, then."), finish("stop"))
      )
      const session = yield* host.sessions.create()
      yield* prompt(host, session.id, "weather in Oslo?")
      yield* host.sessions.wait({ sessionID: session.id })

      // Offered with the JSON Schema derived from its Effect Schema.
      const first = yield* body(llm, 1)
      const offered = first.tools.find((t: any) => t.function.name === "weather")
      expect(offered.function.description).toBe("The forecast for a city")
      expect(offered.function.parameters).toMatchObject({
        type: "object",
        required: ["city"],
        properties: { city: { type: "string", description: "The city" }, days: { minimum: 1, maximum: 7 } }
      })
      // Ran once, with the decoded input, in this session; the next Step carries its output.
      expect(calls).toEqual([{ input: { city: "Oslo", days: 2 }, sessionID: session.id }])
      const second = yield* body(llm, 2)
      expect(toolMessages(second)).toEqual([
        expect.objectContaining({ tool_call_id: "call_1", content: "Sunny in Oslo for 2 day(s)" })
      ])
    })
  )

  it.scopedLive("invalid input settles as a tool failure the model reads; the handler does not run", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const calls: Array<{ input: typeof Weather.Type; sessionID: string }> = []
      const host = yield* OpenCode.embedded(options(ScriptedLLMServer.config(llm.url), { tools: [weatherTool(calls)] }))
      yield* llm.enqueue(
        reply(toolCall("call_1", "weather", { city: "Oslo", days: 9 }), finish("tool-calls")),
        reply(text("Oops."), finish("stop"))
      )
      const session = yield* host.sessions.create()
      yield* prompt(host, session.id, "weather?")
      yield* host.sessions.wait({ sessionID: session.id })
      expect(calls).toEqual([])
      const [message] = toolMessages(yield* body(llm, 2))
      expect(message?.content).toMatch(/Invalid input for the weather tool: days: /)
    })
  )

  it.scopedLive("permissions apply as to a built-in: `ask` waits for a reply, `deny` hides the tool", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const calls: Array<{ input: typeof Weather.Type; sessionID: string }> = []
      const config = {
        ...ScriptedLLMServer.config(llm.url),
        permission: { weather: "ask" },
        agent: { plan: { permission: { weather: "deny" } } }
      } as ConfigInfo.Info
      const host = yield* OpenCode.embedded(options(config, { tools: [weatherTool(calls)] }))
      yield* llm.enqueue(
        reply(toolCall("call_1", "weather", { city: "Rome" }), finish("tool-calls")),
        reply(text("Done."), finish("stop")),
        reply(text("No tool here."), finish("stop"))
      )
      const session = yield* host.sessions.create()
      yield* prompt(host, session.id, "weather in Rome?")
      // The call waits on a permission request for the tool's own action; nothing ran yet.
      const pending = yield* Effect.repeat(
        Effect.zipLeft(host.permissions.list({ sessionID: session.id }), Effect.sleep("5 millis")),
        {
          until: (requests) => requests.length > 0
        }
      )
      expect(pending[0]).toMatchObject({ action: "weather", resources: ["*"] })
      expect(calls).toEqual([])
      yield* host.permissions.reply({ sessionID: session.id, requestID: pending[0]!.id, reply: "once" })
      yield* host.sessions.wait({ sessionID: session.id })
      expect(calls).toEqual([{ input: { city: "Rome" }, sessionID: session.id }])

      // Under an agent whose rules deny it, the model is not even offered the tool.
      yield* host.sessions.switchAgent({ sessionID: session.id, agent: "plan" })
      yield* prompt(host, session.id, "again?")
      yield* host.sessions.wait({ sessionID: session.id })
      expect(toolNames(yield* body(llm, 1))).toContain("weather")
      expect(toolNames(yield* body(llm, 3))).not.toContain("weather")
    })
  )

  it.scopedLive("large output is bounded like a built-in's: a preview and a Managed Tool Output File", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const lines = Array.from({ length: 500 }, (_, i) => `line ${i + 1}`).join("\n")
      const dump = HostTool.make({
        name: "dump",
        description: "Dumps a lot of text",
        parameters: { type: "object", properties: {} },
        execute: () => Effect.succeed(lines)
      })
      const config = { ...ScriptedLLMServer.config(llm.url), tool_output: { max_lines: 20 } } as ConfigInfo.Info
      const host = yield* OpenCode.embedded(options(config, { tools: [dump] }))
      yield* llm.enqueue(reply(toolCall("call_1", "dump", {}), finish("tool-calls")), reply(text("ok"), finish("stop")))
      const session = yield* host.sessions.create()
      yield* prompt(host, session.id, "dump")
      yield* host.sessions.wait({ sessionID: session.id })
      const [message] = toolMessages(yield* body(llm, 2))
      expect(message?.content.startsWith("line 1\n")).toBe(true)
      expect(message?.content).not.toContain("line 250\n")
      expect(message?.content).toMatch(/lines \(\d+ bytes\) truncated/)
      const saved = /The full output is saved to (\S+);/.exec(message?.content ?? "")?.[1]
      expect(saved).toBeDefined()
      expect(fs.readFileSync(saved!, "utf8")).toBe(lines)
    })
  )

  it.scopedLive("tools.register adds a tool for the caller's Scope; a bad name is refused", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const host = yield* OpenCode.embedded(options(ScriptedLLMServer.config(llm.url)))
      const echo = HostTool.make({
        name: "echo",
        description: "Echoes",
        parameters: Schema.Struct({ say: Schema.String }),
        execute: ({ say }) => Effect.succeed(say)
      })
      yield* llm.enqueue(
        reply(text("one"), finish("stop")),
        reply(text("two"), finish("stop")),
        reply(text("three"), finish("stop"))
      )
      const session = yield* host.sessions.create()
      const step = (words: string) =>
        Effect.zipRight(prompt(host, session.id, words), host.sessions.wait({ sessionID: session.id }))
      yield* step("before")
      const scope = yield* Scope.make()
      yield* host.tools.register(echo).pipe(Scope.extend(scope))
      yield* step("during")
      yield* Scope.close(scope, Exit.void)
      yield* step("after")
      expect(toolNames(yield* body(llm, 1))).not.toContain("echo")
      expect(toolNames(yield* body(llm, 2))).toContain("echo")
      expect(toolNames(yield* body(llm, 3))).not.toContain("echo")

      const bad = HostTool.make({
        name: "no spaces",
        description: "Refused",
        parameters: {},
        execute: () => Effect.succeed("")
      })
      const refused = yield* host.tools.register(bad).pipe(Effect.flip)
      expect(refused._tag).toBe("@opencode-ai/sdk-next/InvalidHostToolError")
      const atStart = yield* OpenCode.embedded(options({}, { tools: [bad] })).pipe(Effect.flip)
      expect(atStart._tag).toBe("@opencode-ai/sdk-next/InvalidHostToolError")
    })
  )
})

describe("typed config injection", () => {
  it.scopedLive("a config value takes effect with no opencode.json anywhere: its provider, model and agent", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const opts = options({
        ...ScriptedLLMServer.config(llm.url),
        agent: { reviewer: { description: "Reviews code", mode: "primary", prompt: "You review code." } }
      } as ConfigInfo.Info)
      const host = yield* OpenCode.embedded(opts)
      // No config file exists in any place the runtime would look.
      for (const dir of [opts.configDir!, opts.directory!]) {
        expect(fs.existsSync(path.join(dir, "opencode.json"))).toBe(false)
        expect(fs.existsSync(path.join(dir, "opencode.jsonc"))).toBe(false)
      }
      const agents = yield* host.agents.list()
      expect(agents.data.find((a) => a.id === "reviewer")).toMatchObject({ description: "Reviews code" })
      // The injected provider serves the session's Step, under the injected agent's prompt.
      yield* llm.enqueue(reply(text("Looks fine."), finish("stop")))
      const session = yield* host.sessions.create()
      yield* host.sessions.switchAgent({ sessionID: session.id, agent: "reviewer" })
      yield* prompt(host, session.id, "review")
      yield* host.sessions.wait({ sessionID: session.id })
      const request = yield* body(llm, 1)
      expect(request.model).toBe("m")
      expect(request.messages[0].content).toContain("You review code.")
    })
  )

  it.effect("an invalid config value fails creation with a ConfigError naming the key", () =>
    Effect.gen(function* () {
      const wrongShape = yield* OpenCode.embedded(options({ tool_output: { max_lines: -1 } } as ConfigInfo.Info)).pipe(
        Effect.scoped,
        Effect.flip
      )
      expect(wrongShape).toMatchObject({ _tag: "ConfigError", file: "<embedded config>", key: "tool_output.max_lines" })
      const unresolved = yield* OpenCode.embedded(options({ model: "nowhere/none" } as ConfigInfo.Info)).pipe(
        Effect.scoped,
        Effect.flip
      )
      expect(unresolved).toMatchObject({ _tag: "ConfigError", file: "<embedded config>" })
    })
  )
})

describe("streamed responses in the embedded host", () => {
  it.scopedLive(
    "a session stream keeps delivering after the effect that opened it returned; closing it releases its scope",
    () =>
      Effect.gen(function* () {
        const llm = yield* ScriptedLLMServer.make()
        const host = yield* OpenCode.embedded(options(ScriptedLLMServer.config(llm.url)))
        const bus = Context.get(host.services, LiveBus.Service)
        const count = Effect.zipLeft(bus.subscriberCount, Effect.sleep("5 millis"))
        const session = yield* host.sessions.create()
        const idle = yield* bus.subscriberCount

        // The request effect (opening the response) has returned by the time the first event arrives.
        const received: Array<string> = []
        const fiber = yield* host.sessions.events({ sessionID: session.id }).pipe(
          Stream.runForEach((event) => Effect.sync(() => void received.push(event.type))),
          Effect.fork
        )
        yield* Effect.repeat(count, { until: (n) => n > idle })
        yield* llm.enqueue(reply(text("Hello", " there"), finish("stop")))
        yield* prompt(host, session.id, "hi")
        yield* host.sessions.wait({ sessionID: session.id })
        yield* Effect.repeat(Effect.sleep("5 millis"), {
          until: () => received.includes("session.next.step.ended")
        })
        expect(received).toContain("session.next.prompted")
        expect(received).toContain("session.next.text.ended")
        // Still open after the Step: a second prompt's events arrive on the same response.
        yield* llm.enqueue(reply(text("Again"), finish("stop")))
        yield* prompt(host, session.id, "again")
        yield* host.sessions.wait({ sessionID: session.id })
        yield* Effect.repeat(Effect.sleep("5 millis"), {
          until: () => received.filter((type) => type === "session.next.step.ended").length === 2
        })

        // Closing the stream (interrupting its consumer) ends the request: its subscription goes away.
        yield* Fiber.interrupt(fiber)
        expect(yield* Effect.repeat(count, { until: (n) => n === idle })).toBe(idle)
      })
  )

  it.scopedLive("the global stream likewise: live events after a prompt, released when closed", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const host = yield* OpenCode.embedded(options(ScriptedLLMServer.config(llm.url)))
      const bus = Context.get(host.services, LiveBus.Service)
      const count = Effect.zipLeft(bus.subscriberCount, Effect.sleep("5 millis"))
      const idle = yield* bus.subscriberCount
      const received: Array<{ type: string; data: any }> = []
      const fiber = yield* host.events.subscribe().pipe(
        Stream.runForEach((event) => Effect.sync(() => void received.push(event as never))),
        Effect.fork
      )
      yield* Effect.repeat(Effect.sleep("5 millis"), { until: () => received.length > 0 })
      expect(yield* bus.subscriberCount).toBe(idle + 1)
      const session = yield* host.sessions.create()
      yield* llm.enqueue(reply(text("Hi"), finish("stop")))
      yield* prompt(host, session.id, "hi")
      yield* host.sessions.wait({ sessionID: session.id })
      yield* Effect.repeat(Effect.sleep("5 millis"), {
        until: () => received.some((e) => e.type === "session.next.step.ended" && e.data.sessionID === session.id)
      })
      yield* Fiber.interrupt(fiber)
      expect(yield* Effect.repeat(count, { until: (n) => n === idle })).toBe(idle)
    })
  )
})
