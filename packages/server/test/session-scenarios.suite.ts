/**
 * The DESIGN §3 session sequences as a reusable conformance suite: every scenario runs against a
 * host (the real listener over HTTP, or the embedded host in memory) reached through a client (the
 * generated Promise client or the Effect client), with one OpenAI-compatible provider pointing at a
 * `ScriptedLLMServer` on 127.0.0.1. `session-scenarios.test.ts` here and in `sdk-next` supply the
 * hosts and clients.
 */

import { describe, expect, it } from "@effect/vitest"
import { createOpencodeClient } from "@opencode-ai/client"
import type { OpencodeClient } from "@opencode-ai/client/effect"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Chunk, Effect, Fiber, type Scope, Stream } from "effect"

const { reply, text, finish, hold, gate, usage } = LLMScript

/**
 * What the scenarios call, as promises whatever the client underneath. A declared failure rejects
 * with the tagged error value itself (`{_tag, …}`).
 */
export interface Api {
  readonly create: () => Promise<any>
  readonly prompt: (input: {
    readonly sessionID: string
    readonly prompt: { readonly text: string }
    readonly id?: string
    readonly delivery?: "steer" | "queue"
    readonly resume?: boolean
  }) => Promise<any>
  readonly wait: (sessionID: string) => Promise<void>
  readonly interrupt: (sessionID: string) => Promise<void>
  readonly compact: (sessionID: string) => Promise<void>
  readonly active: () => Promise<Readonly<Record<string, unknown>>>
  readonly history: (sessionID: string) => Promise<{ readonly data: ReadonlyArray<any>; readonly hasMore: boolean }>
  readonly messages: (sessionID: string) => Promise<{ readonly items: ReadonlyArray<any> }>
  readonly message: (sessionID: string, messageID: string) => Promise<any>
  /** The durable session stream from `after`, collected until (and including) the first event `until` accepts. */
  readonly events: (sessionID: string, after: number, until: (event: any) => boolean) => Promise<ReadonlyArray<any>>
}

/** A host under test, reached through one client. */
export interface ScenarioHost {
  readonly api: Api
  /** A raw request to the same host (for status codes): `{status, body}`, the body parsed when JSON. */
  readonly request: (
    method: string,
    path: string,
    body?: unknown
  ) => Promise<{ readonly status: number; readonly body: any }>
}

/** Starts a host whose configuration is `ScriptedLLMServer.config` over `llmURL`; closed with the Scope. */
export type MakeHost = (llmURL: string) => Effect.Effect<ScenarioHost, never, Scope.Scope>

/** The {@link Api} over the generated Promise client. */
export const promiseApi = (options: { readonly baseUrl: string; readonly fetch?: typeof globalThis.fetch }): Api => {
  const client = createOpencodeClient(options)
  return {
    create: () => client.sessions.create({}),
    prompt: (input) => client.sessions.prompt(input),
    wait: (sessionID) => client.sessions.wait({ sessionID }),
    interrupt: (sessionID) => client.sessions.interrupt({ sessionID }),
    compact: (sessionID) => client.sessions.compact({ sessionID }),
    active: () => client.sessions.active(),
    history: (sessionID) => client.sessions.history({ sessionID }),
    messages: (sessionID) => client.sessions.messages({ sessionID, order: "asc" }),
    message: (sessionID, messageID) => client.sessions.message({ sessionID, messageID }),
    events: async (sessionID, after, until) => {
      const out: Array<any> = []
      for await (const event of client.sessions.events({ sessionID, after })) {
        out.push(event)
        if (until(event)) break
      }
      return out
    }
  }
}

/** Runs an Effect client call as a promise that rejects with the typed failure itself. */
const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(Effect.either(effect)).then((result) =>
    result._tag === "Left" ? Promise.reject(result.left) : result.right
  )

/** The {@link Api} over the Effect client (the network one, or the embedded host's). */
export const effectApi = (client: OpencodeClient.Service): Api => ({
  create: () => run(client.sessions.create()),
  prompt: (input) => run(client.sessions.prompt(input as any)),
  wait: (sessionID) => run(client.sessions.wait({ sessionID: sessionID as any })),
  interrupt: (sessionID) => run(client.sessions.interrupt({ sessionID: sessionID as any })),
  compact: (sessionID) => run(client.sessions.compact({ sessionID: sessionID as any })),
  active: () => run(client.sessions.active()),
  history: (sessionID) => run(client.sessions.history({ sessionID: sessionID as any })),
  messages: (sessionID) => run(client.sessions.messages({ sessionID: sessionID as any, order: "asc" })),
  message: (sessionID, messageID) =>
    run(client.sessions.message({ sessionID: sessionID as any, messageID: messageID as any })),
  events: (sessionID, after, until) =>
    run(
      client.sessions
        .events({ sessionID: sessionID as any, after })
        .pipe(Stream.takeUntil(until), Stream.runCollect, Effect.map(Chunk.toReadonlyArray))
    )
})

/** A raw request through `fetch` to `baseUrl`. */
export const rawRequest =
  (baseUrl: string, fetch: typeof globalThis.fetch = globalThis.fetch): ScenarioHost["request"] =>
  async (method, path, body) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } })
    })
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
  }

const call = <A>(promise: () => Promise<A>) => Effect.promise(promise)
/** The rejection of a call that must fail (a resolution fails the test). */
const failure = (promise: () => Promise<unknown>) =>
  Effect.promise(() =>
    promise().then(
      (value) => Promise.reject(new Error(`expected a failure, got ${JSON.stringify(value)}`)),
      (error: any) => error
    )
  )

const typesOf = (events: ReadonlyArray<any>) => events.map((e) => String(e.type).replace("session.next.", ""))

/** Polls the session's durable history until it holds an event of `type` (`count` of them). */
const durable = (api: Api, sessionID: string, type: string, count = 1) =>
  Effect.gen(function* () {
    for (;;) {
      const history = yield* call(() => api.history(sessionID))
      if (history.data.filter((e) => e.type === `session.next.${type}`).length >= count) return
      yield* Effect.sleep("5 millis")
    }
  })

/** A well-formed id that no host ever issued. */
const unknownSession = "ses_fffffffffffe00000000000000"
const unknownMessage = "msg_00000000000100000000000000"

/** The scenario suite, once per transport. */
export const sessionScenarios = (transports: ReadonlyArray<readonly [string, MakeHost]>) =>
  describe.each(transports)("DESIGN §3 session sequences through the %s", (_name, makeHost) => {
    const setup = Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const host = yield* makeHost(llm.url)
      const session = yield* call(() => host.api.create())
      return { llm, ...host, session, id: session.id as string }
    })

    it.scopedLive(
      "a text turn: admitted → prompted → step.started → text.started → text.ended → step.ended(stop)",
      () =>
        Effect.gen(function* () {
          const { llm, api, id } = yield* setup
          yield* llm.enqueue(reply(text("Hel", "lo", " there"), usage({ input: 10, output: 3 }), finish("stop")))
          // Watched as it happens: the durable session stream, opened before the prompt.
          const watching = yield* Effect.fork(
            call(() => api.events(id, 0, (e) => e.type === "session.next.step.ended"))
          )
          const admitted = yield* call(() => api.prompt({ sessionID: id, prompt: { text: "hi" } }))
          expect(admitted).toMatchObject({ sessionID: id, admittedSeq: 1, delivery: "steer", prompt: { text: "hi" } })
          yield* call(() => api.wait(id))

          const history = yield* call(() => api.history(id))
          expect(history.hasMore).toBe(false)
          expect(typesOf(history.data)).toEqual([
            "prompt.admitted",
            "prompted",
            "step.started",
            "text.started",
            "text.ended",
            "step.ended"
          ])
          // A session's first durable event is seq 1 (session.created is the log's origin, seq 0).
          expect(history.data.map((e) => e.durable.seq)).toEqual([1, 2, 3, 4, 5, 6])
          for (const event of history.data) expect(event.durable.aggregateID).toBe(id)
          const byType = (type: string) => history.data.find((e) => e.type === `session.next.${type}`)!.data
          expect(byType("prompt.admitted").messageID).toBe(admitted.id)
          expect(byType("prompted")).toMatchObject({ messageID: admitted.id, prompt: { text: "hi" } })
          expect(byType("step.started")).toMatchObject({ agent: "build", model: { providerID: "scripted", id: "m" } })
          expect(byType("text.ended").text).toBe("Hello there")
          expect(byType("step.ended")).toMatchObject({ finish: "stop", tokens: { input: 10, output: 3 } })

          // The stream delivered exactly the durable events (history and stream carry the `session.next.*`
          // events; `session.created`, seq 0, is an instance event), and replays them the same afterwards.
          expect(yield* Fiber.join(watching)).toEqual(history.data)
          expect(yield* call(() => api.events(id, 0, (e) => e.type === "session.next.step.ended"))).toEqual(
            history.data
          )

          // Messages: the user turn, then the assistant's.
          const messages = yield* call(() => api.messages(id))
          expect(messages.items.map((m) => m.type)).toEqual(["user", "assistant"])
          expect(messages.items[1].content).toMatchObject([{ type: "text", text: "Hello there" }])
          expect(yield* call(() => api.message(id, messages.items[0].id))).toEqual(messages.items[0])

          // The provider request: the session's headers, one system message, the user turn.
          const [request] = yield* llm.requests
          expect(request!.path).toBe("/v1/chat/completions")
          expect(request!.headers["x-session-id"]).toBe(id)
          expect(request!.headers["x-session-affinity"]).toBe(id)
          expect(request!.body).toMatchObject({ model: "m", stream: true, stream_options: { include_usage: true } })
          const sent = request!.body.messages as Array<any>
          expect(sent.map((m) => m.role)).toEqual(["system", "user"])
          expect(sent[1]).toEqual({ role: "user", content: "hi" })
        })
    )

    it.scopedLive(
      "interrupt mid-text → 204: text.ended keeps the partial text, then step.failed; active shows the run",
      () =>
        Effect.gen(function* () {
          const { llm, api, request, id } = yield* setup
          const held = gate()
          yield* llm.enqueue(reply(text("partial", " answ"), hold(held), text("er"), finish("stop")))
          yield* call(() => api.prompt({ sessionID: id, prompt: { text: "talk" } }))
          yield* held.reached
          yield* durable(api, id, "text.started")
          expect(yield* call(() => api.active())).toEqual({ [id]: { type: "running" } })
          expect(yield* call(() => request("GET", "/api/session/active"))).toEqual({
            status: 200,
            body: { data: { [id]: { type: "running" } } }
          })

          expect(yield* call(() => request("POST", `/api/session/${id}/interrupt`))).toEqual({
            status: 204,
            body: undefined
          })
          const history = (yield* call(() => api.history(id))).data
          expect(typesOf(history)).toEqual([
            "prompt.admitted",
            "prompted",
            "step.started",
            "text.started",
            "text.ended",
            "step.failed"
          ])
          expect(history[4].data.text).toBe("partial answ")
          // Upstream's wording for a Step interrupted while its provider stream ran.
          expect(history[5].data.error.message).toBe("Provider turn interrupted")
          // The provider stream was aborted, not drained.
          yield* held.aborted
          expect(yield* (yield* llm.awaitRequest(1)).outcome).toBe("aborted")
          expect(yield* call(() => api.active())).toEqual({})

          // Idle now: interrupt (through the client too) and wait are still fine and change nothing.
          yield* call(() => api.interrupt(id))
          expect(yield* call(() => request("POST", `/api/session/${id}/interrupt`))).toEqual({
            status: 204,
            body: undefined
          })
          yield* call(() => api.wait(id))
          expect((yield* call(() => api.history(id))).data).toHaveLength(history.length)
        })
    )

    it.scopedLive("a steer admitted mid-step is promoted after the step and joins the next step of the same run", () =>
      Effect.gen(function* () {
        const { llm, api, id } = yield* setup
        const held = gate()
        yield* llm.enqueue(reply(text("working"), hold(held), finish("stop")), reply(text("adjusted"), finish("stop")))
        yield* call(() => api.prompt({ sessionID: id, prompt: { text: "start" } }))
        yield* held.reached
        yield* durable(api, id, "text.started")
        yield* call(() => api.prompt({ sessionID: id, prompt: { text: "also do this" }, delivery: "steer" }))
        yield* held.release
        yield* call(() => api.wait(id))
        expect(typesOf((yield* call(() => api.history(id))).data)).toEqual([
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
        const requests = yield* llm.requests
        expect(requests).toHaveLength(2)
        expect((requests[1]!.body.messages as Array<any>).slice(1)).toEqual([
          { role: "user", content: "start" },
          { role: "assistant", content: "working" },
          { role: "user", content: "also do this" }
        ])
      })
    )

    it.scopedLive("resume:false admits only; the next normal prompt promotes all pending in order, in one step", () =>
      Effect.gen(function* () {
        const { llm, api, id } = yield* setup
        yield* llm.enqueue(reply(text("all three"), finish("stop")))
        yield* call(() => api.prompt({ sessionID: id, prompt: { text: "one" }, resume: false }))
        yield* call(() => api.prompt({ sessionID: id, prompt: { text: "two" }, resume: false }))
        yield* call(() => api.wait(id))
        expect(typesOf((yield* call(() => api.history(id))).data)).toEqual(["prompt.admitted", "prompt.admitted"])
        expect(yield* call(() => api.active())).toEqual({})
        expect(yield* llm.requests).toHaveLength(0)

        yield* call(() => api.prompt({ sessionID: id, prompt: { text: "three" } }))
        yield* call(() => api.wait(id))
        const history = (yield* call(() => api.history(id))).data
        expect(typesOf(history)).toEqual([
          "prompt.admitted",
          "prompt.admitted",
          "prompt.admitted",
          "prompted",
          "prompted",
          "prompted",
          "step.started",
          "text.started",
          "text.ended",
          "step.ended"
        ])
        expect(history.filter((e) => e.type === "session.next.prompted").map((e) => e.data.prompt.text)).toEqual([
          "one",
          "two",
          "three"
        ])
        const requests = yield* llm.requests
        expect(requests).toHaveLength(1)
        expect((requests[0]!.body.messages as Array<any>).slice(1).map((m) => m.content)).toEqual([
          "one",
          "two",
          "three"
        ])
      })
    )

    it.scopedLive(
      "an unknown session is a 404 SessionNotFoundError on prompt, wait and interrupt; an unknown message is MessageNotFoundError",
      () =>
        Effect.gen(function* () {
          const { api, request, id } = yield* setup
          const prompt = yield* failure(() => api.prompt({ sessionID: unknownSession, prompt: { text: "anyone?" } }))
          expect(prompt).toMatchObject({ _tag: "SessionNotFoundError", sessionID: unknownSession })
          expect(yield* failure(() => api.wait(unknownSession))).toMatchObject({
            _tag: "SessionNotFoundError",
            sessionID: unknownSession
          })
          expect(yield* failure(() => api.interrupt(unknownSession))).toMatchObject({
            _tag: "SessionNotFoundError",
            sessionID: unknownSession
          })
          for (const [method, path, body] of [
            ["POST", `/api/session/${unknownSession}/prompt`, { prompt: { text: "anyone?" } }],
            ["POST", `/api/session/${unknownSession}/wait`, undefined],
            ["POST", `/api/session/${unknownSession}/interrupt`, undefined],
            ["POST", `/api/session/${unknownSession}/compact`, undefined]
          ] as const) {
            const response = yield* call(() => request(method, path, body))
            expect(response.status).toBe(404)
            expect(response.body).toMatchObject({ _tag: "SessionNotFoundError", sessionID: unknownSession })
            expect(typeof response.body.message).toBe("string")
          }

          const missing = yield* failure(() => api.message(id, unknownMessage))
          expect(missing).toMatchObject({ _tag: "MessageNotFoundError", sessionID: id, messageID: unknownMessage })
          const raw = yield* call(() => request("GET", `/api/session/${id}/message/${unknownMessage}`))
          expect(raw.status).toBe(404)
          expect(raw.body).toMatchObject({ _tag: "MessageNotFoundError", messageID: unknownMessage })
          // A known session's wait and interrupt while idle are 204.
          expect(yield* call(() => request("POST", `/api/session/${id}/wait`))).toEqual({
            status: 204,
            body: undefined
          })
          expect(yield* call(() => request("POST", `/api/session/${id}/interrupt`))).toEqual({
            status: 204,
            body: undefined
          })
        })
    )

    it.scopedLive(
      "compact: 204, then the durable stream shows the compaction and the next request starts from its summary",
      () =>
        Effect.gen(function* () {
          const { llm, api, id } = yield* setup
          yield* llm.enqueue(reply(text("one"), finish("stop")))
          yield* call(() => api.prompt({ sessionID: id, prompt: { text: "first" } }))
          yield* call(() => api.wait(id))
          const after = (yield* call(() => api.history(id))).data.at(-1).durable.seq
          yield* llm.enqueue(reply(text("## Objective\n- ", "Say one"), finish("stop")))
          const watching = yield* Effect.fork(
            call(() => api.events(id, after, (e) => e.type === "session.next.compaction.ended"))
          )
          expect(yield* call(() => api.compact(id))).toBeUndefined()
          const seen = yield* Fiber.join(watching)
          expect(typesOf(seen)).toEqual(["compaction.started", "compaction.ended"])
          expect(seen[1].data).toMatchObject({ reason: "manual", text: "## Objective\n- Say one" })
          yield* call(() => api.wait(id))
          const compaction = (yield* call(() => api.messages(id))).items.at(-1)
          expect(compaction).toMatchObject({ type: "compaction", reason: "manual", summary: "## Objective\n- Say one" })

          yield* llm.enqueue(reply(text("two"), finish("stop")))
          yield* call(() => api.prompt({ sessionID: id, prompt: { text: "second" } }))
          yield* call(() => api.wait(id))
          const last = (yield* llm.requests).at(-1)!
          expect(JSON.stringify(last.body.messages)).toContain("Say one")
          expect(JSON.stringify(last.body.messages)).toContain("second")
        })
    )
  })
