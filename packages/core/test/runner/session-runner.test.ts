import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Sessions } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { Deferred, Effect, Fiber } from "effect"
import { world } from "./world.js"

const { reply, text, toolCall, usage, finish, hold, gate, httpError } = LLMScript

/** The tool the tests register: echoes its input, or waits on `block` first. */
const echo = (block?: Deferred.Deferred<void>) => ({
  name: "echo",
  description: "Echo the input back",
  inputSchema: { type: "object", properties: { say: { type: "string" } }, required: ["say"] },
  execute: (input: Readonly<Record<string, unknown>>) =>
    Effect.gen(function* () {
      if (block) yield* Deferred.await(block)
      return {
        content: [{ type: "text" as const, text: `echo: ${String(input.say)}` }],
        structured: { said: input.say }
      }
    })
})

describe("SessionRunner", () => {
  it.scopedLive("a text turn: admitted → prompted → step.started → text.started → text.ended → step.ended(stop)", () =>
    Effect.gen(function* () {
      const w = yield* world()
      yield* w.server.enqueue(reply(text("Hel", "lo", " there"), usage({ input: 10, output: 3 }), finish("stop")))
      yield* w.prompt("hi")
      yield* w.wait
      expect(yield* w.types).toEqual([
        "prompt.admitted",
        "prompted",
        "step.started",
        "text.started",
        "text.ended",
        "step.ended"
      ])
      const all = yield* w.events
      const ended: any = all.find((e) => e.type === "session.next.step.ended")!.data
      expect(ended.finish).toBe("stop")
      expect(ended.tokens.output).toBe(3)
      expect((all.find((e) => e.type === "session.next.text.ended")!.data as any).text).toBe("Hello there")
      expect(ended).toMatchObject({ cost: 0 })
      expect(all.find((e) => e.type === "session.next.step.started")!.data).toMatchObject({
        agent: "build",
        model: { id: "m", providerID: "scripted" }
      })
      // The session record is kept current: titled by its first prompt, tokens summed.
      const session = yield* w.run(Effect.flatMap(Sessions.Service, (s) => s.get(w.session.id)))
      expect(session.title).toBe("hi")
      expect(session.tokens.output).toBe(3)
      expect(session.time.updated).toBeGreaterThanOrEqual(w.session.time.updated)
    })
  )

  it.scopedLive(
    "the request: one system message (agent prompt, then the baseline), the user turn, session headers",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        fs.writeFileSync(path.join(w.directory, "AGENTS.md"), "Always answer in haiku.")
        yield* w.server.enqueue(reply(text("ok"), finish("stop")))
        yield* w.prompt("hello")
        yield* w.wait
        const [request] = yield* w.server.requests
        const messages = request!.body.messages as Array<{ role: string; content: string }>
        expect(messages.filter((m) => m.role === "system")).toHaveLength(1)
        expect(messages[0]!.role).toBe("system")
        const system = messages[0]!.content
        expect(system.indexOf("You are OpenCode")).toBe(0)
        expect(system).toContain(w.directory)
        expect(system).toContain("Always answer in haiku.")
        expect(system.indexOf(w.directory)).toBeLessThan(system.indexOf("Always answer in haiku."))
        expect(messages[1]).toEqual({ role: "user", content: "hello" })
        expect(request!.body.stream).toBe(true)
        expect(request!.headers["x-session-id"]).toBe(w.session.id)
        expect(request!.headers["x-session-affinity"]).toBe(w.session.id)
      })
  )

  it.scopedLive(
    "a tool step with parallel calls: input, called, settled, step.ended(tool-calls), then the next step",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        yield* w.register(echo())
        yield* w.server.enqueue(
          reply(
            toolCall("call_a", "echo", { say: "one" }),
            toolCall("call_b", "echo", { say: "two" }),
            finish("tool-calls")
          ),
          reply(text("done"), finish("stop"))
        )
        yield* w.prompt("use the tool twice")
        yield* w.wait
        const types = yield* w.types
        expect(types.slice(0, 3)).toEqual(["prompt.admitted", "prompted", "step.started"])
        const firstStep = types.slice(3, types.indexOf("step.ended") + 1)
        expect(firstStep.filter((t) => t === "tool.input.started")).toHaveLength(2)
        expect(firstStep.filter((t) => t === "tool.called")).toHaveLength(2)
        expect(firstStep.filter((t) => t === "tool.success")).toHaveLength(2)
        // Each call is durable before it settles.
        for (const id of ["call_a", "call_b"]) {
          const all = yield* w.events
          const called = all.findIndex((e) => e.type === "session.next.tool.called" && (e.data as any).callID === id)
          const settled = all.findIndex((e) => e.type === "session.next.tool.success" && (e.data as any).callID === id)
          expect(called).toBeGreaterThan(0)
          expect(settled).toBeGreaterThan(called)
        }
        expect(types.slice(types.indexOf("step.ended"))).toEqual([
          "step.ended",
          "step.started",
          "text.started",
          "text.ended",
          "step.ended"
        ])
        const ends = (yield* w.events)
          .filter((e) => e.type === "session.next.step.ended")
          .map((e) => (e.data as any).finish)
        expect(ends).toEqual(["tool-calls", "stop"])
        // The second request carries both results as role:tool messages, in call order.
        const second = (yield* w.server.requests)[1]!
        const tools = (second.body.messages as Array<any>).filter((m) => m.role === "tool")
        expect(tools.map((m) => [m.tool_call_id, m.content])).toEqual([
          ["call_a", "echo: one"],
          ["call_b", "echo: two"]
        ])
      })
  )

  it.scopedLive("a steer admitted mid-step is promoted after the step and joins the next step of the same run", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const held = gate()
      yield* w.server.enqueue(
        reply(text("working"), hold(held), finish("stop")),
        reply(text("adjusted"), finish("stop"))
      )
      yield* w.prompt("start")
      yield* held.reached
      yield* w.prompt("also do this", { delivery: "steer" })
      yield* held.release
      yield* w.wait
      expect(yield* w.types).toEqual([
        "prompt.admitted",
        "prompted",
        "step.started",
        "text.started",
        "prompt.admitted",
        "text.ended",
        "step.ended",
        "prompted",
        "step.started",
        "text.started",
        "text.ended",
        "step.ended"
      ])
      const second = (yield* w.server.requests)[1]!
      expect((second.body.messages as Array<any>).at(-1)).toEqual({ role: "user", content: "also do this" })
    })
  )

  it.scopedLive("a queued prompt waits while the run continues and is promoted when it would go idle", () =>
    Effect.gen(function* () {
      const w = yield* world()
      yield* w.register(echo())
      const held = gate()
      yield* w.server.enqueue(
        reply(toolCall("call_1", "echo", { say: "x" }), hold(held), finish("tool-calls")),
        reply(text("first done"), finish("stop")),
        reply(text("queued done"), finish("stop"))
      )
      yield* w.prompt("first")
      yield* held.reached
      yield* w.prompt("later", { delivery: "queue" })
      yield* held.release
      yield* w.wait
      const types = yield* w.types
      const prompted = types
        .map((t, i) => [t, i] as const)
        .filter(([t]) => t === "prompted")
        .map(([, i]) => i)
      const ended = types
        .map((t, i) => [t, i] as const)
        .filter(([t]) => t === "step.ended")
        .map(([, i]) => i)
      expect(prompted).toHaveLength(2)
      expect(ended).toHaveLength(3)
      // The queued prompt is promoted only after the second step (the end of the continuing run).
      expect(prompted[1]).toBeGreaterThan(ended[1]!)
      expect(prompted[1]).toBeLessThan(ended[2]!)
      const second = (yield* w.server.requests)[1]!
      expect(JSON.stringify(second.body.messages)).not.toContain("later")
    })
  )

  it.scopedLive("resume:false admits only; the next normal prompt promotes all pending in order", () =>
    Effect.gen(function* () {
      const w = yield* world()
      yield* w.server.enqueue(reply(text("all three"), finish("stop")))
      yield* w.prompt("one", { resume: false })
      yield* w.prompt("two", { resume: false })
      expect(yield* w.types).toEqual(["prompt.admitted", "prompt.admitted"])
      expect(yield* w.server.requests).toHaveLength(0)
      yield* w.prompt("three")
      yield* w.wait
      const prompted = (yield* w.events)
        .filter((e) => e.type === "session.next.prompted")
        .map((e) => (e.data as any).prompt.text)
      expect(prompted).toEqual(["one", "two", "three"])
      expect(yield* w.server.requests).toHaveLength(1)
    })
  )

  it.scopedLive(
    "interrupt mid-text: text.ended with the partial text, then step.failed; the provider request is aborted",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        const held = gate()
        yield* w.server.enqueue(reply(text("partial answ"), hold(held), text("er"), finish("stop")))
        yield* w.prompt("talk")
        yield* held.reached
        yield* w.interrupt
        const types = yield* w.types
        expect(types.slice(-3)).toEqual(["text.started", "text.ended", "step.failed"])
        const all = yield* w.events
        expect((all.find((e) => e.type === "session.next.text.ended")!.data as any).text).toBe("partial answ")
        expect((all.at(-1)!.data as any).error.message).toBe("Provider turn interrupted")
        yield* held.aborted
        // Idempotent, and on an idle session too.
        yield* w.interrupt
        expect((yield* w.events).length).toBe(all.length)
      })
  )

  it.scopedLive(
    "interrupt mid-tool while the provider stream is open: tool.failed('Tool execution interrupted'), then step.failed('Provider turn interrupted')",
    () =>
      Effect.gen(function* () {
        // Anthropic's stream completes a call at its block's end, before the message's end.
        const w = yield* world({ protocol: "anthropic" })
        const block = yield* Deferred.make<void>()
        const held = gate()
        yield* w.register(echo(block))
        yield* w.server.enqueue(reply(toolCall("call_1", "echo", { say: "slow" }), hold(held), finish("tool-calls")))
        yield* w.prompt("run the slow tool")
        // Wait until the call is durable and running.
        yield* held.reached
        while (!(yield* w.types).includes("tool.called")) yield* Effect.sleep("5 millis")
        yield* w.interrupt
        const types = yield* w.types
        expect(types.slice(-2)).toEqual(["tool.failed", "step.failed"])
        const all = yield* w.events
        expect((all.at(-2)!.data as any).error.message).toBe("Tool execution interrupted")
        expect((all.at(-1)!.data as any).error.message).toBe("Provider turn interrupted")
      })
  )

  it.scopedLive("503 then retries: each retry is a durable retried event, then the step succeeds", () =>
    Effect.gen(function* () {
      const w = yield* world()
      yield* w.server.enqueue(
        httpError(503),
        httpError(503, { retryAfter: "0" }),
        reply(text("finally"), finish("stop"))
      )
      yield* w.prompt("hi")
      yield* w.wait
      const types = yield* w.types
      expect(types.filter((t) => t === "retried")).toHaveLength(2)
      expect(types.slice(-3)).toEqual(["text.started", "text.ended", "step.ended"])
      const retried = (yield* w.events).filter((e) => e.type === "session.next.retried").map((e) => e.data as any)
      expect(retried.map((r) => r.attempt)).toEqual([1, 2])
      expect(retried[0].error).toMatchObject({ statusCode: 503, isRetryable: true })
      expect(retried[0].error.metadata.delayMs).toMatch(/^\d+$/)
      expect(yield* w.server.requests).toHaveLength(3)
    })
  )

  it.scopedLive(
    "the first request carries the baseline; an AGENTS.md edit yields exactly one update on the next step",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        fs.writeFileSync(path.join(w.directory, "AGENTS.md"), "Rule one.")
        yield* w.server.enqueue(
          reply(text("a"), finish("stop")),
          reply(text("b"), finish("stop")),
          reply(text("c"), finish("stop"))
        )
        yield* w.prompt("first")
        yield* w.wait
        expect((yield* w.types).filter((t) => t === "context.updated")).toHaveLength(0)
        fs.writeFileSync(path.join(w.directory, "AGENTS.md"), "Rule two.")
        yield* w.prompt("second")
        yield* w.wait
        yield* w.prompt("third")
        yield* w.wait
        const types = yield* w.types
        expect(types.filter((t) => t === "context.updated")).toHaveLength(1)
        // The update is admitted at the boundary, before the prompt it precedes is promoted.
        expect(types.indexOf("context.updated")).toBeLessThan(types.lastIndexOf("prompted") - 0)
        const [first, second] = yield* w.server.requests
        const baseline = (first!.body.messages as Array<any>)[0].content as string
        expect(baseline).toContain("Rule one.")
        // The baseline is the provider-cache prefix: unchanged on the next request.
        expect((second!.body.messages as Array<any>)[0].content).toBe(baseline)
        expect(JSON.stringify(second!.body.messages)).toContain("Rule two.")
      })
  )

  it.scopedLive(
    "at the agent's step limit the last step has tools disabled and carries the max-steps instruction",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ agent: { build: { steps: 2 } } })
        yield* w.register(echo())
        yield* w.server.enqueue(
          reply(toolCall("call_1", "echo", { say: "1" }), finish("tool-calls")),
          reply(text("summary"), finish("stop"))
        )
        yield* w.prompt("loop")
        yield* w.wait
        const [first, last] = yield* w.server.requests
        expect(first!.body.tool_choice).toBeUndefined()
        expect(last!.body.tool_choice).toBe("none")
        const lastMessage = (last!.body.messages as Array<any>).at(-1)
        expect(lastMessage.role).toBe("assistant")
        expect(lastMessage.content).toContain("MAXIMUM STEPS REACHED")
      })
  )

  it.scopedLive("the coordinator runs one drain per session and reports it active meanwhile", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const held = gate()
      yield* w.server.enqueue(reply(text("x"), hold(held), finish("stop")))
      yield* w.prompt("go")
      yield* held.reached
      const runner = yield* w.run(
        Effect.flatMap((yield* Effect.promise(() => import("@opencode-ai/core"))).SessionRunner.Service, Effect.succeed)
      )
      expect(yield* runner.active).toEqual({ [w.session.id]: { type: "running" } })
      const waiter = yield* Effect.fork(w.wait)
      yield* held.release
      yield* Fiber.join(waiter)
      expect(yield* runner.active).toEqual({})
    })
  )
})

describe("instruction source changes", () => {
  it.scopedLive("never wake an idle session: an entry change waits for the next prompt's Safe Step Boundary", () =>
    Effect.gen(function* () {
      const w = yield* world()
      yield* w.server.enqueue(reply(text("one"), finish("stop")), reply(text("two"), finish("stop")))
      yield* w.prompt("first")
      yield* w.wait
      const before = (yield* w.events).length
      const entries = yield* w.run(
        Effect.flatMap(
          (yield* Effect.promise(() => import("@opencode-ai/core"))).InstructionEntries.Service,
          Effect.succeed
        )
      )
      yield* entries.put(w.session.id, "style", "Answer tersely.")
      yield* Effect.forEach(Array.from({ length: 20 }), () => Effect.yieldNow())
      const runner = yield* w.run(
        Effect.flatMap((yield* Effect.promise(() => import("@opencode-ai/core"))).SessionRunner.Service, Effect.succeed)
      )
      expect(yield* runner.active).toEqual({})
      expect((yield* w.events).length).toBe(before)
      expect(yield* w.server.requests).toHaveLength(1)
      // The next prompt's boundary admits it as one update, before the prompt is promoted.
      yield* w.prompt("second")
      yield* w.wait
      const types = (yield* w.types).slice(before)
      expect(types.slice(0, 3)).toEqual(["prompt.admitted", "context.updated", "prompted"])
      expect(JSON.stringify((yield* w.server.requests)[1]!.body.messages)).toContain("Answer tersely.")
    })
  )
})
