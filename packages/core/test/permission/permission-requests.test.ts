import { describe, expect, it } from "@effect/vitest"
import {
  type Core,
  EventLog,
  PermissionRequests,
  SessionSelection,
  Sessions,
  type ToolRegistry
} from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { Identifier } from "@opencode-ai/schema"
import { Context, Deferred, Effect, Layer } from "effect"
import { world } from "../runner/world.js"

const { reply, text, toolCall, finish } = LLMScript

/**
 * The test tool: authorizes `probe` on its `target` (saving `save` on `always`), optionally after
 * waiting on `gate`, then reports what it probed.
 */
const probe = (gate?: Deferred.Deferred<void>): ToolRegistry.Tool => ({
  name: "probe",
  description: "Probe a target",
  inputSchema: {
    type: "object",
    properties: { target: { type: "string" }, save: { type: "string" } },
    required: ["target"]
  },
  execute: (input, ctx) =>
    Effect.gen(function* () {
      if (gate) yield* Deferred.await(gate)
      yield* ctx.ask({
        action: "probe",
        resources: [String(input.target)],
        ...(typeof input.save === "string" ? { save: [input.save] } : {}),
        metadata: { note: `probing ${String(input.target)}` }
      })
      return { content: [{ type: "text" as const, text: `probed ${String(input.target)}` }] }
    })
})

/** A tool that never asks. */
const echo: ToolRegistry.Tool = {
  name: "echo",
  description: "Echo",
  inputSchema: { type: "object", properties: { say: { type: "string" } } },
  execute: (input) => Effect.succeed({ content: [{ type: "text" as const, text: `echo: ${String(input.say)}` }] })
}

/** Agents whose only difference is their `probe` policy. */
const agents = {
  build: { permission: { probe: "ask" } },
  asker: { permission: { probe: "ask" } },
  allower: { permission: { probe: "allow" } },
  denier: { permission: { probe: "deny" } },
  picky: { permission: { probe: { "*": "allow", "secret*": "deny" } } }
}

const setup = (agent: Record<string, unknown> = agents) =>
  Effect.gen(function* () {
    const w = yield* world({ agent })
    const service = yield* w.run(PermissionRequests.Service)
    const sessionID = w.session.id
    /** Polls until the session has `count` pending requests; resolves with them. */
    const pendingCount = (count: number) =>
      Effect.gen(function* () {
        for (;;) {
          const pending = yield* service.list(sessionID)
          if (pending.length >= count) return pending
          yield* Effect.sleep("5 millis")
        }
      })
    const until = (type: string, count = 1) =>
      Effect.gen(function* () {
        while ((yield* w.types).filter((t) => t === type).length < count) yield* Effect.sleep("5 millis")
      })
    const settled = (callID: string) =>
      Effect.map(w.events, (all) =>
        all.find(
          (e) =>
            (e.type === "session.next.tool.success" || e.type === "session.next.tool.failed") &&
            (e.data as any).callID === callID
        )
      )
    const requestLog = (requestID: string) => w.run(Effect.flatMap(EventLog.Service, (log) => log.read(requestID)))
    const switchAgent = (name: string) =>
      w.run(Effect.flatMap(SessionSelection.Service, (s) => s.switchAgent(sessionID, name))).pipe(Effect.orDie)
    const projectID = (yield* w.run(Effect.flatMap(Sessions.Service, (s) => s.get(sessionID))).pipe(Effect.orDie))
      .projectID
    return { ...w, service, sessionID, pendingCount, until, settled, requestLog, switchAgent, projectID }
  })

describe("PermissionRequests with the runner", () => {
  it.scopedLive(
    "ask suspends only that call; `once` lets it run; the request is durable and leaves the pending list",
    () =>
      Effect.gen(function* () {
        const t = yield* setup()
        yield* t.register(probe())
        yield* t.register(echo)
        yield* t.server.enqueue(
          reply(
            toolCall("call_p", "probe", { target: "a.txt" }),
            toolCall("call_e", "echo", { say: "hi" }),
            finish("tool-calls")
          ),
          reply(text("done"), finish("stop"))
        )
        yield* t.prompt("probe it")
        const [request] = yield* t.pendingCount(1)
        // The other call of the same Step settled while this one waits.
        yield* t.until("tool.success")
        expect((yield* t.settled("call_e"))?.type).toBe("session.next.tool.success")
        expect(yield* t.settled("call_p")).toBeUndefined()
        const step = (yield* t.events).find((e) => e.type === "session.next.step.started")!.data as any
        expect(request).toEqual({
          id: request!.id,
          sessionID: t.sessionID,
          action: "probe",
          resources: ["a.txt"],
          metadata: { note: "probing a.txt" },
          source: { type: "tool", messageID: step.assistantMessageID, callID: "call_p" }
        })
        expect(request!.id).toMatch(/^per_/)
        expect(yield* t.service.get(t.sessionID, request!.id)).toEqual(request)
        expect(yield* t.service.listIn({ directory: t.directory })).toEqual([request])
        expect(yield* t.service.listIn({ directory: "/elsewhere" })).toEqual([])

        yield* t.service.reply(t.sessionID, request!.id, { reply: "once" })
        yield* t.wait
        const success = (yield* t.settled("call_p"))!
        expect(success.type).toBe("session.next.tool.success")
        expect((success.data as any).content).toEqual([{ type: "text", text: "probed a.txt" }])
        expect(yield* t.service.list(t.sessionID)).toEqual([])
        expect((yield* Effect.flip(t.service.get(t.sessionID, request!.id)))._tag).toBe("PermissionNotFoundError")
        // Answering twice is a not-found: the request is no longer pending.
        expect((yield* Effect.flip(t.service.reply(t.sessionID, request!.id, { reply: "once" })))._tag).toBe(
          "PermissionNotFoundError"
        )
        // Its own aggregate: asked (seq 1), replied (seq 2); nothing in the session's log.
        const log = yield* t.requestLog(request!.id)
        expect(log.map((e) => [e.type, e.durable.seq])).toEqual([
          ["permission.v2.asked", 1],
          ["permission.v2.replied", 2]
        ])
        expect(log[0]!.data).toEqual(request)
        expect(log[1]!.data).toEqual({ sessionID: t.sessionID, requestID: request!.id, reply: "once" })
        expect((yield* t.types).some((type) => type.startsWith("permission"))).toBe(false)
        // `once` saved nothing.
        expect(yield* t.service.saved()).toEqual([])
      })
  )

  it.scopedLive("`always` saves the patterns for the project: later calls run without asking until it is removed", () =>
    Effect.gen(function* () {
      const t = yield* setup()
      yield* t.register(probe())
      yield* t.server.enqueue(
        reply(toolCall("call_1", "probe", { target: "src/a.ts", save: "src/*" }), finish("tool-calls")),
        reply(text("ok"), finish("stop")),
        reply(toolCall("call_2", "probe", { target: "src/deep/b.ts" }), finish("tool-calls")),
        reply(text("ok"), finish("stop"))
      )
      yield* t.prompt("first")
      const [first] = yield* t.pendingCount(1)
      yield* t.service.reply(t.sessionID, first!.id, { reply: "always" })
      yield* t.wait
      const saved = yield* t.service.saved()
      expect(saved).toEqual([{ id: saved[0]!.id, projectID: t.projectID, action: "probe", resource: "src/*" }])
      expect(yield* t.service.saved(t.projectID)).toEqual(saved)
      expect(yield* t.service.saved("another-project")).toEqual([])
      expect((yield* t.requestLog(first!.id))[1]!.data).toMatchObject({ reply: "always" })

      // A later call covered by the saved permission runs without a request.
      yield* t.prompt("second")
      yield* t.wait
      expect((yield* t.settled("call_2"))?.type).toBe("session.next.tool.success")
      expect(yield* t.service.list(t.sessionID)).toEqual([])

      // Removed (idempotently), it asks again.
      yield* t.service.removeSaved(saved[0]!.id)
      yield* t.service.removeSaved(saved[0]!.id)
      expect(yield* t.service.saved()).toEqual([])
      yield* t.server.enqueue(
        reply(toolCall("call_3", "probe", { target: "src/c.ts" }), finish("tool-calls")),
        reply(text("ok"), finish("stop"))
      )
      yield* t.prompt("third")
      const [third] = yield* t.pendingCount(1)
      expect(third!.resources).toEqual(["src/c.ts"])
      yield* t.service.reply(t.sessionID, third!.id, { reply: "once" })
      yield* t.wait
    })
  )

  it.scopedLive("`always` also answers the session's other pending requests it now covers", () =>
    Effect.gen(function* () {
      const t = yield* setup()
      yield* t.register(probe())
      yield* t.server.enqueue(
        reply(
          toolCall("call_a", "probe", { target: "x" }),
          toolCall("call_b", "probe", { target: "x" }),
          toolCall("call_c", "probe", { target: "y" }),
          finish("tool-calls")
        ),
        reply(text("ok"), finish("stop"))
      )
      yield* t.prompt("three probes")
      const pending = yield* t.pendingCount(3)
      const a = pending.find((r) => r.source?.callID === "call_a")!
      yield* t.service.reply(t.sessionID, a.id, { reply: "always" })
      // b (same resource) is answered too; c (another resource) still waits.
      yield* t.until("tool.success", 2)
      const left = yield* t.service.list(t.sessionID)
      expect(left.map((r) => r.source?.callID)).toEqual(["call_c"])
      const b = pending.find((r) => r.source?.callID === "call_b")!
      expect((yield* t.requestLog(b.id))[1]!.data).toMatchObject({ reply: "always" })
      expect((yield* t.service.saved()).map((s) => s.resource)).toEqual(["x"])
      yield* t.service.reply(t.sessionID, left[0]!.id, { reply: "once" })
      yield* t.wait
    })
  )

  it.scopedLive("`reject` fails the call with a readable ToolFailure carrying the user's feedback", () =>
    Effect.gen(function* () {
      const t = yield* setup()
      yield* t.register(probe())
      yield* t.server.enqueue(
        reply(
          toolCall("call_1", "probe", { target: "prod.db" }),
          toolCall("call_2", "probe", { target: "other" }),
          finish("tool-calls")
        ),
        reply(text("understood"), finish("stop"))
      )
      yield* t.prompt("probe prod")
      const pending = yield* t.pendingCount(2)
      const one = pending.find((r) => r.source?.callID === "call_1")!
      const two = pending.find((r) => r.source?.callID === "call_2")!
      yield* t.service.reply(t.sessionID, one.id, { reply: "reject", message: "never touch prod, use staging" })
      yield* t.service.reply(t.sessionID, two.id, { reply: "reject" })
      yield* t.wait
      const failed = (yield* t.settled("call_1"))!
      expect(failed.type).toBe("session.next.tool.failed")
      expect((failed.data as any).error.message).toBe(
        "The user rejected permission for probe on prod.db, with this feedback: never touch prod, use staging"
      )
      expect(((yield* t.settled("call_2"))!.data as any).error.message).toBe(
        "The user rejected permission for probe on other. Do not retry it unless the user asks."
      )
      // The model reads it as the tool's result.
      const followUp = (yield* t.server.requests)[1]!
      const results = (followUp.body.messages as Array<any>)
        .filter((m) => m.role === "tool")
        .map((m) => String(m.content))
      expect(results[0]).toContain("never touch prod, use staging")
      expect((yield* t.requestLog(one.id))[1]!.data).toMatchObject({ reply: "reject" })
    })
  )

  it.scopedLive("deny fails the call without creating a request; a tool denied for every resource is not offered", () =>
    Effect.gen(function* () {
      const t = yield* setup({ ...agents, build: agents.picky })
      yield* t.register(probe())
      yield* t.server.enqueue(
        reply(
          toolCall("call_ok", "probe", { target: "public" }),
          toolCall("call_no", "probe", { target: "secret.key" }),
          finish("tool-calls")
        ),
        reply(text("ok"), finish("stop"))
      )
      yield* t.prompt("probe both")
      yield* t.wait
      expect((yield* t.settled("call_ok"))?.type).toBe("session.next.tool.success")
      const denied = (yield* t.settled("call_no"))!
      expect(denied.type).toBe("session.next.tool.failed")
      expect((denied.data as any).error.message).toBe(
        'Permission denied: the rules of agent "build" do not allow probe on secret.key.'
      )
      expect(yield* t.service.list(t.sessionID)).toEqual([])
      const offered = (request: any) => (request.body.tools ?? []).map((tool: any) => tool.function.name)
      expect(offered((yield* t.server.requests)[0])).toContain("probe")

      // Under `denier` (probe denied for `*`) the tool is hidden; a call to it anyway is an unknown tool.
      yield* t.switchAgent("denier")
      yield* t.server.enqueue(
        reply(toolCall("call_hidden", "probe", { target: "public" }), finish("tool-calls")),
        reply(text("ok"), finish("stop"))
      )
      yield* t.prompt("again")
      yield* t.wait
      const requests = yield* t.server.requests
      expect(offered(requests[2])).not.toContain("probe")
      expect(((yield* t.settled("call_hidden"))!.data as any).error.message).toMatch(
        /^Unknown tool: probe\. Available tools: /
      )
    })
  )

  it.scopedLive("interrupting the session rejects its pending requests durably, the runner's and a client's", () =>
    Effect.gen(function* () {
      const t = yield* setup()
      yield* t.register(probe())
      yield* t.server.enqueue(reply(toolCall("call_1", "probe", { target: "slow" }), finish("tool-calls")))
      yield* t.prompt("probe")
      const [request] = yield* t.pendingCount(1)
      const created = yield* t.service.create(t.sessionID, { action: "probe", resources: ["client"] })
      expect(created.effect).toBe("ask")
      expect(yield* t.service.list(t.sessionID)).toHaveLength(2)
      yield* t.interrupt
      expect(yield* t.service.list(t.sessionID)).toEqual([])
      for (const id of [request!.id, created.id]) {
        const log = yield* t.requestLog(id)
        expect(log.map((e) => e.type)).toEqual(["permission.v2.asked", "permission.v2.replied"])
        expect(log[1]!.data).toEqual({ sessionID: t.sessionID, requestID: id, reply: "reject" })
      }
      const types = yield* t.types
      // The Step ends with step.ended once the provider's turn was read to its end, or step.failed
      // ("Provider turn interrupted") while its stream was still open: which one depends on how far
      // the stream was read when the interrupt arrived, so either is right here.
      expect(types.at(-2)).toBe("tool.failed")
      expect(["step.ended", "step.failed"]).toContain(types.at(-1))
      expect(((yield* t.settled("call_1"))!.data as any).error.message).toBe("Tool execution interrupted")
    })
  )

  describe("a call keeps the effective agent of the Step that issued it", () => {
    it.scopedLive("allowed under the Step's agent: a switch to an agent that denies does not change it", () =>
      Effect.gen(function* () {
        const t = yield* setup()
        yield* t.switchAgent("allower")
        const gate = yield* Deferred.make<void>()
        yield* t.register(probe(gate))
        yield* t.server.enqueue(
          reply(toolCall("call_1", "probe", { target: "t" }), finish("tool-calls")),
          reply(text("ok"), finish("stop"))
        )
        yield* t.prompt("probe")
        yield* t.until("tool.called")
        yield* t.switchAgent("denier")
        yield* Deferred.succeed(gate, undefined)
        yield* t.wait
        expect((yield* t.settled("call_1"))?.type).toBe("session.next.tool.success")
        // The next Step runs under the new agent, which no longer offers the tool.
        const second = (yield* t.server.requests)[1]!
        expect(((second.body.tools ?? []) as Array<any>).map((tool) => tool.function.name)).not.toContain("probe")
      })
    )

    it.scopedLive("denied under the Step's agent: a switch to an agent that allows does not change it", () =>
      Effect.gen(function* () {
        const t = yield* setup({ ...agents, build: agents.picky })
        const gate = yield* Deferred.make<void>()
        yield* t.register(probe(gate))
        yield* t.server.enqueue(
          reply(toolCall("call_1", "probe", { target: "secret" }), finish("tool-calls")),
          reply(text("ok"), finish("stop"))
        )
        yield* t.prompt("probe")
        yield* t.until("tool.called")
        yield* t.switchAgent("allower")
        yield* Deferred.succeed(gate, undefined)
        yield* t.wait
        expect(((yield* t.settled("call_1"))!.data as any).error.message).toContain('rules of agent "build"')
      })
    )

    it.scopedLive("a pending request keeps its policy: the switch neither answers nor denies it", () =>
      Effect.gen(function* () {
        const t = yield* setup()
        yield* t.switchAgent("asker")
        yield* t.register(probe())
        yield* t.server.enqueue(
          reply(toolCall("call_1", "probe", { target: "t" }), finish("tool-calls")),
          reply(text("ok"), finish("stop"))
        )
        yield* t.prompt("probe")
        const [request] = yield* t.pendingCount(1)
        yield* t.switchAgent("denier")
        yield* Effect.sleep("30 millis")
        expect(yield* t.service.list(t.sessionID)).toEqual([request])
        yield* t.service.reply(t.sessionID, request!.id, { reply: "once" })
        yield* t.wait
        expect((yield* t.settled("call_1"))?.type).toBe("session.next.tool.success")
      })
    )

    it.scopedLive("an `always` re-evaluates other pending requests under their own captured rules", () =>
      Effect.gen(function* () {
        const t = yield* setup()
        yield* t.switchAgent("asker")
        yield* t.register(probe())
        yield* t.server.enqueue(
          reply(toolCall("call_1", "probe", { target: "t" }), finish("tool-calls")),
          reply(text("ok"), finish("stop"))
        )
        yield* t.prompt("probe")
        const [runnerRequest] = yield* t.pendingCount(1)
        // A client's request under `denier` is refused outright; under `asker` it waits.
        expect(
          (yield* t.service.create(t.sessionID, { action: "probe", resources: ["t"], agent: "denier" })).effect
        ).toBe("deny")
        const clientRequest = yield* t.service.create(t.sessionID, {
          action: "probe",
          resources: ["t"],
          agent: "asker"
        })
        expect(clientRequest.effect).toBe("ask")
        yield* t.service.reply(t.sessionID, runnerRequest!.id, { reply: "always" })
        yield* t.wait
        // Both asked under `asker`, so the saved permission covers the client's request too.
        expect(yield* t.service.list(t.sessionID)).toEqual([])
      })
    )
  })

  it.scopedLive("create: allow and deny create nothing, ask is idempotent by id, unknown agents are invalid", () =>
    Effect.gen(function* () {
      const t = yield* setup()
      expect((yield* t.service.create(t.sessionID, { action: "read", resources: ["src/a.ts"] })).effect).toBe("allow")
      expect(
        (yield* t.service.create(t.sessionID, { action: "probe", resources: ["x"], agent: "denier" })).effect
      ).toBe("deny")
      expect(yield* t.service.list(t.sessionID)).toEqual([])
      const id = Identifier.PermissionID.make("per_00000000000100000000000001")
      const first = yield* t.service.create(t.sessionID, {
        id,
        action: "read",
        resources: ["/repo/.env"],
        save: ["*.env"]
      })
      expect(first).toEqual({ id, effect: "ask" })
      expect(yield* t.service.create(t.sessionID, { id, action: "read", resources: ["/repo/.env"] })).toEqual(first)
      expect(yield* t.service.list(t.sessionID)).toEqual([
        { id, sessionID: t.sessionID, action: "read", resources: ["/repo/.env"], save: ["*.env"] }
      ])
      const unknown = yield* Effect.flip(
        t.service.create(t.sessionID, { action: "read", resources: ["x"], agent: "nobody" })
      )
      expect(unknown).toMatchObject({ _tag: "InvalidRequestError", field: "agent" })
      const missing = yield* Effect.flip(
        t.service.create(Identifier.SessionID.make("ses_missing"), { action: "read", resources: ["x"] })
      )
      expect(missing._tag).toBe("SessionNotFoundError")
      // A client's request stays pending until answered; `always` saves its `save` patterns.
      yield* t.service.reply(t.sessionID, id, { reply: "always" })
      expect((yield* t.service.saved()).map((s) => [s.action, s.resource])).toEqual([["read", "*.env"]])
      expect((yield* t.service.create(t.sessionID, { action: "read", resources: ["/other/.env"] })).effect).toBe(
        "allow"
      )
    })
  )

  it.scopedLive(
    "after a restart, requests a previous process's tool calls waited on are rejected; clients' stay pending",
    () =>
      Effect.gen(function* () {
        const t = yield* setup()
        yield* t.register(probe())
        yield* t.server.enqueue(reply(toolCall("call_1", "probe", { target: "t" }), finish("tool-calls")))
        yield* t.prompt("probe")
        const [stranded] = yield* t.pendingCount(1)
        const client = yield* t.service.create(t.sessionID, { action: "probe", resources: ["c"] })
        // This process's own waiting call is not touched.
        expect(yield* t.service.recover(t.sessionID)).toBe(0)
        // A second instance over the same database plays the restarted process.
        const core = yield* t.run(Effect.context<Core.Services>())
        const restarted = yield* Layer.build(PermissionRequests.layer).pipe(
          Effect.provide(core),
          Effect.map((context) => Context.get(context, PermissionRequests.Service))
        )
        expect(yield* restarted.recover(t.sessionID)).toBe(1)
        expect(yield* t.service.list(t.sessionID)).toEqual([
          { id: client.id, sessionID: t.sessionID, action: "probe", resources: ["c"] }
        ])
        const log = yield* t.requestLog(stranded!.id)
        expect(log[1]!.data).toEqual({ sessionID: t.sessionID, requestID: stranded!.id, reply: "reject" })
        // The old waiter's own cleanup finds nothing left to reject.
        yield* t.interrupt
        expect(yield* t.service.list(t.sessionID)).toEqual([])
        expect((yield* t.requestLog(stranded!.id)).length).toBe(2)
      })
  )
})
