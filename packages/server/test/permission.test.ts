import { describe, expect, it } from "@effect/vitest"
import { createOpencodeClient } from "@opencode-ai/client"
import { ToolRegistry as Registry, type ToolRegistry } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { scriptedHost } from "./scripted-host.js"
import { SseReader } from "./stream-harness.js"

const { reply, text, toolCall, finish } = LLMScript

/**
 * Ask → reply over HTTP on the real listener: Server's router over a Core whose one provider is a
 * scripted LLM server on 127.0.0.1, with a test tool (`probe`) that asks for `probe` on its target.
 * The build agent asks for `probe`; `denier` denies it.
 */
const probe: ToolRegistry.Tool = {
  name: "probe",
  description: "Probe a target",
  inputSchema: { type: "object", properties: { target: { type: "string" } }, required: ["target"] },
  execute: (input, ctx) =>
    Effect.as(ctx.ask({ action: "probe", resources: [String(input.target)] }), {
      content: [{ type: "text" as const, text: `probed ${String(input.target)}` }]
    })
}

const setup = Effect.gen(function* () {
  const host = yield* scriptedHost({
    prefix: "permission",
    requests: "permission",
    agent: { build: { permission: { probe: "ask" } }, denier: { permission: { probe: "deny" } } }
  })
  yield* Effect.provide(
    Effect.flatMap(Registry.Service, (registry) => registry.register(probe)),
    host.context
  )
  return host
})

describe("permissions over HTTP", () => {
  it.scopedLive(
    "ask → once: listed by session, by location and by id, announced on /api/event, then 404 once answered",
    () =>
      Effect.gen(function* () {
        const t = yield* setup
        const stream = yield* Effect.promise(() =>
          fetch(`${t.url}/api/event`, { headers: { accept: "text/event-stream" } })
        )
        const reader = new SseReader(stream)
        yield* Effect.addFinalizer(() => Effect.promise(() => reader.cancel()))
        expect((yield* Effect.promise(() => reader.next()))?.event).toBe("server.connected")

        yield* t.llm.enqueue(
          reply(toolCall("call_1", "probe", { target: "a.txt" }), finish("tool-calls")),
          reply(text("done"), finish("stop"))
        )
        yield* t.prompt("probe a")
        const [request] = yield* t.pending(1)
        expect(request).toMatchObject({
          sessionID: t.session.id,
          action: "probe",
          resources: ["a.txt"],
          source: { type: "tool", callID: "call_1" }
        })
        expect(yield* t.call("GET", `${t.base}/permission/${request.id}`)).toEqual({
          status: 200,
          body: { data: request }
        })
        const byLocation = yield* t.call(
          "GET",
          `/api/permission/request?location[directory]=${encodeURIComponent(t.directory)}`
        )
        expect(byLocation.status).toBe(200)
        expect(byLocation.body.location.directory).toBe(t.directory)
        expect(byLocation.body.data).toEqual([request])
        // The instance's default Location is the same directory.
        expect((yield* t.call("GET", "/api/permission/request")).body.data).toEqual([request])

        expect(yield* t.call("POST", `${t.base}/permission/${request.id}/reply`, { reply: "once" })).toEqual({
          status: 204,
          body: undefined
        })
        yield* t.wait
        expect((yield* t.settled("call_1"))?.type).toBe("session.next.tool.success")
        expect((yield* t.call("GET", `${t.base}/permission`)).body).toEqual({ data: [] })
        expect(yield* t.call("GET", `${t.base}/permission/${request.id}`)).toEqual({
          status: 404,
          body: {
            _tag: "PermissionNotFoundError",
            requestID: request.id,
            message: `Permission request not found: ${request.id}`
          }
        })
        expect((yield* t.call("POST", `${t.base}/permission/${request.id}/reply`, { reply: "once" })).status).toBe(404)

        // The live stream carried both events, in the contract's envelope.
        const frames: Array<{ event: string; data: any }> = []
        while (!frames.some((f) => f.event === "permission.v2.replied")) {
          const frame = yield* Effect.promise(() => reader.next())
          if (frame === undefined) break
          if (frame.event.startsWith("permission.")) frames.push({ event: frame.event, data: JSON.parse(frame.data) })
        }
        expect(frames.map((f) => f.event)).toEqual(["permission.v2.asked", "permission.v2.replied"])
        expect(frames[0]!.data).toMatchObject({
          type: "permission.v2.asked",
          durable: { aggregateID: request.id, seq: 1, version: 1 },
          data: request
        })
        expect(frames[1]!.data).toMatchObject({
          type: "permission.v2.replied",
          durable: { aggregateID: request.id, seq: 2 },
          data: { sessionID: t.session.id, requestID: request.id, reply: "once" }
        })
      })
  )

  it.scopedLive(
    "always saves for the project (listed, filtered, removable); the generated client speaks the group",
    () =>
      Effect.gen(function* () {
        const t = yield* setup
        const client = createOpencodeClient({ baseUrl: t.url })
        yield* t.llm.enqueue(
          reply(toolCall("call_1", "probe", { target: "b.txt" }), finish("tool-calls")),
          reply(text("ok"), finish("stop")),
          reply(toolCall("call_2", "probe", { target: "b.txt" }), finish("tool-calls")),
          reply(text("ok"), finish("stop"))
        )
        yield* t.prompt("probe b")
        const [request] = yield* t.pending(1)
        yield* Effect.promise(() =>
          client.permissions.reply({ sessionID: t.session.id, requestID: request.id, reply: "always" })
        )
        yield* t.wait
        const saved = yield* Effect.promise(() => client.permissions.listSaved())
        expect(saved).toEqual([
          { id: saved[0]!.id, projectID: t.session.projectID, action: "probe", resource: "b.txt" }
        ])
        expect(
          (yield* t.call("GET", `/api/permission/saved?projectID=${encodeURIComponent(t.session.projectID)}`)).body
        ).toEqual({ data: saved })
        expect((yield* t.call("GET", "/api/permission/saved?projectID=elsewhere")).body).toEqual({ data: [] })

        // The next call of the same resource runs without asking.
        yield* t.prompt("probe b again")
        yield* t.wait
        expect((yield* t.settled("call_2"))?.type).toBe("session.next.tool.success")
        expect(yield* Effect.promise(() => client.permissions.list({ sessionID: t.session.id }))).toEqual([])

        expect(yield* t.call("DELETE", `/api/permission/saved/${saved[0]!.id}`)).toEqual({
          status: 204,
          body: undefined
        })
        expect(yield* t.call("DELETE", `/api/permission/saved/${saved[0]!.id}`)).toEqual({
          status: 204,
          body: undefined
        })
        expect(yield* Effect.promise(() => client.permissions.listSaved())).toEqual([])
      })
  )

  it.scopedLive("reject fails the call with the user's feedback as its readable error", () =>
    Effect.gen(function* () {
      const t = yield* setup
      yield* t.llm.enqueue(
        reply(toolCall("call_1", "probe", { target: "prod" }), finish("tool-calls")),
        reply(text("ok"), finish("stop"))
      )
      yield* t.prompt("probe prod")
      const [request] = yield* t.pending(1)
      const rejected = yield* t.call("POST", `${t.base}/permission/${request.id}/reply`, {
        reply: "reject",
        message: "use staging"
      })
      expect(rejected.status).toBe(204)
      yield* t.wait
      const failed = (yield* t.settled("call_1"))!
      expect(failed.type).toBe("session.next.tool.failed")
      expect((failed.data as any).error.message).toBe(
        "The user rejected permission for probe on prod, with this feedback: use staging"
      )
    })
  )

  it.scopedLive("POST /interrupt rejects the session's pending requests", () =>
    Effect.gen(function* () {
      const t = yield* setup
      yield* t.llm.enqueue(reply(toolCall("call_1", "probe", { target: "slow" }), finish("tool-calls")))
      yield* t.prompt("probe")
      const [request] = yield* t.pending(1)
      const created = yield* t.call("POST", `${t.base}/permission`, { action: "probe", resources: ["from-client"] })
      expect(created.body.data.effect).toBe("ask")
      expect((yield* t.call("GET", `${t.base}/permission`)).body.data).toHaveLength(2)
      expect((yield* t.call("POST", `${t.base}/interrupt`)).status).toBe(204)
      expect((yield* t.call("GET", `${t.base}/permission`)).body).toEqual({ data: [] })
      expect((yield* t.call("GET", `${t.base}/permission/${request.id}`)).status).toBe(404)
      expect(((yield* t.settled("call_1"))!.data as any).error.message).toBe("Tool execution interrupted")
    })
  )

  it.scopedLive("an agent switch over HTTP while a call waits does not change that call's policy", () =>
    Effect.gen(function* () {
      const t = yield* setup
      yield* t.llm.enqueue(
        reply(toolCall("call_1", "probe", { target: "x" }), finish("tool-calls")),
        reply(text("ok"), finish("stop"))
      )
      yield* t.prompt("probe")
      const [request] = yield* t.pending(1)
      expect((yield* t.call("POST", `${t.base}/agent`, { agent: "denier" })).status).toBe(204)
      // Still pending under the Step's agent (`build` asks), and answering it lets the call run.
      expect((yield* t.call("GET", `${t.base}/permission`)).body.data).toEqual([request])
      expect((yield* t.call("POST", `${t.base}/permission/${request.id}/reply`, { reply: "once" })).status).toBe(204)
      yield* t.wait
      expect((yield* t.settled("call_1"))?.type).toBe("session.next.tool.success")
    })
  )

  it.scopedLive("POST …/permission evaluates under the agent's rules; errors are typed", () =>
    Effect.gen(function* () {
      const t = yield* setup
      const allowed = yield* t.call("POST", `${t.base}/permission`, { action: "read", resources: ["src/a.ts"] })
      expect(allowed.status).toBe(200)
      expect(allowed.body.data.effect).toBe("allow")
      expect(allowed.body.data.id).toMatch(/^per_/)
      expect(
        (yield* t.call("POST", `${t.base}/permission`, { action: "probe", resources: ["x"], agent: "denier" })).body
          .data.effect
      ).toBe("deny")
      const id = "per_00000000000100000000000002"
      const asked = yield* t.call("POST", `${t.base}/permission`, {
        id,
        action: "read",
        resources: [".env"],
        metadata: { why: "config" },
        source: { type: "tool", messageID: "msg_x", callID: "call_x" }
      })
      expect(asked.body).toEqual({ data: { id, effect: "ask" } })
      expect(yield* t.call("POST", `${t.base}/permission`, { id, action: "read", resources: [".env"] })).toEqual(asked)
      expect((yield* t.call("GET", `${t.base}/permission/${id}`)).body.data).toEqual({
        id,
        sessionID: t.session.id,
        action: "read",
        resources: [".env"],
        metadata: { why: "config" },
        source: { type: "tool", messageID: "msg_x", callID: "call_x" }
      })
      const unknownAgent = yield* t.call("POST", `${t.base}/permission`, {
        action: "read",
        resources: ["x"],
        agent: "nobody"
      })
      expect(unknownAgent.status).toBe(400)
      expect(unknownAgent.body).toMatchObject({ _tag: "InvalidRequestError", field: "agent" })
      const missing = "ses_ffffffffffff00000000000000"
      expect(yield* t.call("GET", `/api/session/${missing}/permission`)).toMatchObject({
        status: 404,
        body: { _tag: "SessionNotFoundError" }
      })
      expect(
        (yield* t.call("POST", `/api/session/${missing}/permission`, { action: "read", resources: [] })).status
      ).toBe(404)
      const unknownRequest = yield* t.call("POST", `${t.base}/permission/per_unknown/reply`, { reply: "once" })
      expect(unknownRequest).toEqual({
        status: 404,
        body: {
          _tag: "PermissionNotFoundError",
          requestID: "per_unknown",
          message: "Permission request not found: per_unknown"
        }
      })
      expect((yield* t.call("POST", `${t.base}/permission/${id}/reply`, { reply: "maybe" })).status).toBe(400)
      expect((yield* t.call("POST", `${t.base}/permission/${id}/reply`, { reply: "once" })).status).toBe(204)
    })
  )
})
