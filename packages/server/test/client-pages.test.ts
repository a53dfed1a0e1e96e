import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { createOpencodeClient, isInvalidCursorError, type SessionV2Info } from "@opencode-ai/client"
import { OpencodeClient } from "@opencode-ai/client/effect"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Chunk, Effect, Stream } from "effect"
import { configHome, startServer } from "./harness.js"

const { reply, text, finish } = LLMScript

/**
 * The stable Page projection of both generated clients against the real listener: 120 sessions and a
 * session of 121 messages, paged a few at a time through `list`/`messages` (initial query, then
 * continuations carrying only the link) and through the `…Pages` walks. The wire is the server's
 * `{data, cursor}` envelope throughout.
 */
describe("paging through the real server with the generated clients", () => {
  const setup = Effect.gen(function* () {
    const llm = yield* ScriptedLLMServer.make()
    const server = yield* startServer({ XDG_CONFIG_HOME: configHome(ScriptedLLMServer.config(llm.url)) })
    const promise = createOpencodeClient({ baseUrl: server.url })
    const effect = yield* OpencodeClient.make({ baseUrl: server.url }).pipe(Effect.provide(FetchHttpClient.layer))
    return { llm, server, promise, effect }
  })

  it.scopedLive(
    "120 sessions: every page of 7 through both clients, both directions, and the continuation rules",
    () =>
      Effect.gen(function* () {
        const { promise, effect } = yield* setup
        const created: Array<SessionV2Info> = []
        for (let n = 0; n < 120; n++) created.push(yield* Effect.promise(() => promise.sessions.create({})))
        const newestFirst = [...created].reverse().map((s) => s.id)

        // Promise: the walk, page by page.
        const walked: Array<ReadonlyArray<string>> = []
        yield* Effect.promise(async () => {
          for await (const page of promise.sessions.listPages({ limit: 7 })) walked.push(page.items.map((s) => s.id))
        })
        expect(walked).toHaveLength(18)
        expect(walked.slice(0, -1).every((ids) => ids.length === 7)).toBe(true)
        expect(walked.at(-1)).toHaveLength(120 - 17 * 7)
        expect(walked.flat()).toEqual(newestFirst)

        // Promise: by hand, forward with `next`, then back with `previous` from the last page.
        let page = yield* Effect.promise(() => promise.sessions.list({ limit: 7 }))
        expect(page.previous).toBeUndefined()
        const forward = [...page.items.map((s) => s.id)]
        while (page.next !== undefined) {
          const cursor = page.next
          page = yield* Effect.promise(() => promise.sessions.list({ cursor }))
          forward.push(...page.items.map((s) => s.id))
        }
        expect(forward).toEqual(newestFirst)
        expect(page.next).toBeUndefined()
        const backward = [...page.items.map((s) => s.id)]
        while (page.previous !== undefined) {
          const cursor = page.previous
          page = yield* Effect.promise(() => promise.sessions.list({ cursor }))
          backward.unshift(...page.items.map((s) => s.id))
        }
        expect(backward).toEqual(newestFirst)

        // A continuation may change the page size with its link; the rest of the query rides in the link.
        const first = yield* Effect.promise(() => promise.sessions.list({ limit: 7, order: "asc" }))
        const rest = yield* Effect.promise(() => promise.sessions.list({ cursor: first.next!, limit: 200 }))
        expect([...first.items, ...rest.items].map((s) => s.id)).toEqual([...newestFirst].reverse())
        expect(rest.next).toBeUndefined()
        // The server still refuses a cursor with an ordering (the types already do: forced here).
        const refused = yield* Effect.promise(() =>
          promise.sessions.list({ cursor: first.next!, order: "desc" } as never).then(
            () => undefined,
            (error: unknown) => error
          )
        )
        expect(isInvalidCursorError(refused)).toBe(true)

        // Effect: the Stream of decoded pages, oldest first.
        const pages = Chunk.toReadonlyArray(
          yield* Stream.runCollect(effect.sessions.listPages({ limit: 7, order: "asc" }))
        )
        expect(pages).toHaveLength(18)
        expect(pages.flatMap((p) => p.items.map((s) => s.id))).toEqual([...newestFirst].reverse())
        expect(pages[0]!.previous).toBeUndefined()
        expect(pages.at(-1)!.next).toBeUndefined()
        // Items as a stream, and only as many pages as are consumed.
        const firstTen = yield* effect.sessions.listPages({ limit: 7 }).pipe(
          Stream.flatMap((p) => Stream.fromIterable(p.items)),
          Stream.take(10),
          Stream.runCollect
        )
        expect(Chunk.toReadonlyArray(firstTen).map((s) => s.id)).toEqual(newestFirst.slice(0, 10))
        // Effect: by hand, a continuation with a decoded link.
        const head = yield* effect.sessions.list({ limit: 100 })
        const tail = yield* effect.sessions.list({ cursor: head.next! })
        expect([...head.items, ...tail.items].map((s) => s.id)).toEqual(newestFirst)
      }),
    120_000
  )

  it.scopedLive(
    "a session of 121 messages: every page of 9 through both clients",
    () =>
      Effect.gen(function* () {
        const { llm, promise, effect } = yield* setup
        const session = yield* Effect.promise(() => promise.sessions.create({}))
        const sessionID = session.id
        // 119 prompts admitted only, then one that runs: all 120 are promoted before the one answer.
        for (let n = 1; n < 120; n++) {
          yield* Effect.promise(() =>
            promise.sessions.prompt({ sessionID, prompt: { text: `prompt ${n}` }, resume: false })
          )
        }
        yield* llm.enqueue(reply(text("all read"), finish("stop")))
        yield* Effect.promise(() => promise.sessions.prompt({ sessionID, prompt: { text: "prompt 120" } }))
        yield* Effect.promise(() => promise.sessions.wait({ sessionID }))

        const oldestFirst: Array<{ readonly type: string; readonly id: string }> = []
        let count = 0
        yield* Effect.promise(async () => {
          for await (const page of promise.sessions.messagesPages({ sessionID, limit: 9, order: "asc" })) {
            count++
            expect(page.items.length).toBeLessThanOrEqual(9)
            oldestFirst.push(...page.items)
          }
        })
        expect(count).toBe(Math.ceil(121 / 9))
        expect(oldestFirst).toHaveLength(121)
        const users = oldestFirst.filter((m) => m.type === "user") as Array<any>
        expect(users.map((m) => m.text)).toEqual(Array.from({ length: 120 }, (_, i) => `prompt ${i + 1}`))
        expect(oldestFirst.at(-1)!.type).toBe("assistant")

        // Effect: newest first, as a stream of decoded pages, each continuation bound to the session.
        const pages = Chunk.toReadonlyArray(
          yield* Stream.runCollect(effect.sessions.messagesPages({ sessionID: session.id as never, limit: 9 }))
        )
        expect(pages.flatMap((p) => p.items.map((m) => m.id))).toEqual([...oldestFirst].reverse().map((m) => m.id))
      }),
    120_000
  )

  it.scopedLive("a page body with non-ASCII text: its content-length counts UTF-8 bytes, and it is the JSON", () =>
    Effect.gen(function* () {
      const { llm, server, promise } = yield* setup
      const session = yield* Effect.promise(() => promise.sessions.create({}))
      const words = "naïve café — 日本語 🙂"
      yield* llm.enqueue(reply(text(`answer: ${words}`), finish("stop")))
      yield* Effect.promise(() => promise.sessions.prompt({ sessionID: session.id, prompt: { text: words } }))
      yield* Effect.promise(() => promise.sessions.wait({ sessionID: session.id }))
      for (const path of ["/api/session?limit=50", `/api/session/${session.id}/message?limit=50`]) {
        const response = yield* Effect.promise(() => fetch(`${server.url}${path}`))
        const bytes = new Uint8Array(yield* Effect.promise(() => response.arrayBuffer()))
        expect(response.status).toBe(200)
        expect(response.headers.get("content-type")).toBe("application/json")
        expect(Number(response.headers.get("content-length"))).toBe(bytes.byteLength)
        const body = JSON.parse(new TextDecoder().decode(bytes)) as { data: ReadonlyArray<unknown> }
        expect(body.data.length).toBeGreaterThan(0)
        if (path.includes("/message")) expect(JSON.stringify(body.data)).toContain(words)
      }
    })
  )
})
