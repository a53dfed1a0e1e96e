import * as fs from "node:fs"
import * as path from "node:path"
import { HttpApiBuilder, HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Config, type ConfigInfo, type Core, SessionTitle } from "@opencode-ai/core"
import { LLMScript, ScriptedLLMServer, TestDatabase } from "@opencode-ai/core/testing"
import { Context, Effect, Layer, Option } from "effect"
import { Router } from "../src/router.js"
import { call, listener, tempDir } from "./harness.js"

const { reply, text, toolCall, usage } = LLMScript

/**
 * Session cost and tokens over HTTP: the server's router on a real listener over a Core on the
 * database in `root`, whose provider is the scripted server with priced models (USD per million
 * tokens, in the config's models.dev shape):
 * - `m`: input 3, output 15, cache read 0.3, cache write 3.75 (the default model);
 * - `big`: the same, and 6 / 22.5 / 0.6 / 7.5 past 200,000 prompt tokens (`context_over_200k`);
 * - `free`: no `cost` (it costs 0).
 * Building it again on the same root is a restart.
 */
const host = (root: string, llm: ScriptedLLMServer.ScriptedLLMServer) =>
  Effect.gen(function* () {
    const directory = path.join(root, "project")
    fs.mkdirSync(directory, { recursive: true })
    fs.writeFileSync(path.join(directory, "README.md"), "# Project\n")
    const document: any = ScriptedLLMServer.config(llm.url)
    const rates = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 }
    document.provider.scripted.models = {
      m: { name: "M", limit: { context: 1_000_000, output: 1000 }, cost: rates },
      big: {
        name: "Big",
        limit: { context: 1_000_000, output: 1000 },
        cost: { ...rates, context_over_200k: { input: 6, output: 22.5, cache_read: 0.6, cache_write: 7.5 } }
      },
      free: { name: "Free", limit: { context: 1_000_000, output: 1000 } }
    }
    const context = yield* Layer.build(
      HttpApiBuilder.serve().pipe(
        Layer.provide(Router.layer({ auth: Option.none() })),
        Layer.provideMerge(listener()),
        Layer.provideMerge(
          TestDatabase.coreLayer({
            databaseFile: path.join(root, "opencode.db"),
            directory,
            configDir: path.join(root, "config"),
            dataDir: path.join(root, "data"),
            env: {},
            config: Config.layerTest(document as ConfigInfo.Info)
          })
        )
      )
    ).pipe(Effect.orDie)
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    const url = `http://127.0.0.1:${address.port}`
    const api = (method: string, route: string, body?: unknown) => call(`${url}${route}`, method, body)
    /** Prompts, waits for the run, then for the background title request (if one was made). */
    const prompt = (sessionID: string, words: string) =>
      Effect.gen(function* () {
        expect((yield* api("POST", `/api/session/${sessionID}/prompt`, { prompt: { text: words } })).status).toBe(200)
        expect((yield* api("POST", `/api/session/${sessionID}/wait`)).status).toBe(204)
        yield* Effect.provide(
          Effect.flatMap(SessionTitle.Service, (titles) => titles.settled),
          context as Context.Context<Core.Services>
        )
      })
    const session = (sessionID: string) =>
      Effect.map(api("GET", `/api/session/${sessionID}`), (response) => response.body.data)
    const create = (body: unknown = {}) =>
      Effect.map(api("POST", "/api/session", body), (response) => response.body.data as { readonly id: string })
    return { api, prompt, session, create }
  })

const cents = (usd: number) => Math.round(usd * 100)

describe("session cost and tokens", () => {
  it.scopedLive(
    "a multi-Step session with a tool call: each step.ended carries its cost, the session sums them and the title's",
    () =>
      Effect.gen(function* () {
        const llm = yield* ScriptedLLMServer.make()
        const server = yield* host(fs.realpathSync(tempDir("cost")), llm)
        const { id } = yield* server.create()
        yield* llm.enqueue(
          reply(
            toolCall("call_1", "glob", { pattern: "*.md" }),
            usage({ input: 120_000, output: 2_000, cacheRead: 30_000 })
          ),
          reply(text("One markdown file."), usage({ input: 20_000, output: 1_500, reasoning: 500, cacheRead: 150_000 }))
        )
        yield* llm.enqueueTitle(reply(text("Markdown files in project"), usage({ input: 500, output: 8 })))
        yield* server.prompt(id, "which markdown files are there?")

        // By hand, in micro-dollars (tokens × USD per million):
        //   step 1: 120,000 × 3 + 2,000 × 15 + 30,000 × 0.3           = 360,000 + 30,000 + 9,000  = 399,000
        //   step 2: 20,000 × 3 + (1,500 + 500) × 15 + 150,000 × 0.3    =  60,000 + 30,000 + 45,000 = 135,000
        //   title:  500 × 3 + 8 × 15                                   =   1,500 + 120             =   1,620
        const history = (yield* server.api("GET", `/api/session/${id}/history`)).body
        const ended = history.data.filter((event: any) => event.type === "session.next.step.ended")
        expect(ended.map((event: any) => [event.data.finish, event.data.cost])).toEqual([
          ["tool-calls", 0.399],
          ["stop", 0.135]
        ])
        const recorded = history.data.filter((event: any) => event.type === "session.next.usage.recorded")
        expect(recorded.map((event: any) => [event.data.agent, event.data.cost])).toEqual([["title", 0.00162]])

        const info = yield* server.session(id)
        expect(info.title).toBe("Markdown files in project")
        expect(info.cost).toBe(0.53562)
        expect(cents(info.cost)).toBe(54)
        expect(info.tokens).toEqual({
          input: 140_500,
          output: 3_508,
          reasoning: 500,
          cache: { read: 180_000, write: 0 }
        })
        // The session list carries the same totals.
        const listed = (yield* server.api("GET", "/api/session")).body.data.find((item: any) => item.id === id)
        expect([listed.cost, listed.tokens]).toEqual([info.cost, info.tokens])
      })
  )

  it.scopedLive("past 200,000 prompt tokens the model's over-200k rates price the whole Step", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const server = yield* host(fs.realpathSync(tempDir("cost")), llm)
      const { id } = yield* server.create({ model: { providerID: "scripted", id: "big" } })
      // 150,000 + 60,000 cached = 210,000 prompt tokens.
      yield* llm.enqueue(reply(text("Long read."), usage({ input: 150_000, output: 1_000, cacheRead: 60_000 })))
      yield* server.prompt(id, "summarise the whole repository")

      // Tier rates: 150,000 × 6 + 1,000 × 22.5 + 60,000 × 0.6 = 900,000 + 22,500 + 36,000 µ$ = $0.9585
      // (the base rates would make it $0.483).
      const info = yield* server.session(id)
      expect(info.cost).toBe(0.9585)
      expect(cents(info.cost)).toBe(96)
    })
  )

  it.scopedLive("the config's cost prices the Step; a model the config gives no cost costs 0", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const server = yield* host(fs.realpathSync(tempDir("cost")), llm)
      const priced = yield* server.create()
      const free = yield* server.create({ model: { providerID: "scripted", id: "free" } })
      const same = usage({ input: 10_000, output: 1_000, cacheRead: 5_000 })
      yield* llm.enqueue(reply(text("Priced."), same))
      yield* server.prompt(priced.id, "hello")
      yield* llm.enqueue(reply(text("Free."), same))
      yield* server.prompt(free.id, "hello")

      // 10,000 × 3 + 1,000 × 15 + 5,000 × 0.3 = 30,000 + 15,000 + 1,500 µ$.
      expect((yield* server.session(priced.id)).cost).toBe(0.0465)
      const unpriced = yield* server.session(free.id)
      expect(unpriced.cost).toBe(0)
      expect(unpriced.tokens).toEqual({ input: 10_000, output: 1_000, reasoning: 0, cache: { read: 5_000, write: 0 } })
    })
  )

  it.scopedLive("totals and the title survive a restart, and the next Step adds to them", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const root = fs.realpathSync(tempDir("cost"))
      const { id, before } = yield* Effect.scoped(
        Effect.gen(function* () {
          const server = yield* host(root, llm)
          const { id } = yield* server.create()
          yield* llm.enqueue(reply(text("First."), usage({ input: 40_000, output: 2_000 })))
          yield* llm.enqueueTitle(reply(text("Restart check"), usage({ input: 1_000, output: 10 })))
          yield* server.prompt(id, "remember this")
          return { id, before: yield* server.session(id) }
        })
      )
      // 40,000 × 3 + 2,000 × 15 + 1,000 × 3 + 10 × 15 = 120,000 + 30,000 + 3,000 + 150 µ$.
      expect(before.cost).toBe(0.15315)

      const server = yield* host(root, llm)
      const after = yield* server.session(id)
      expect([after.title, after.cost, after.tokens]).toEqual([before.title, before.cost, before.tokens])
      yield* llm.enqueue(reply(text("Second."), usage({ input: 10_000, output: 0 })))
      yield* server.prompt(id, "and again")
      const next = yield* server.session(id)
      expect(next.cost).toBe(0.18315)
      expect(next.title).toBe("Restart check")
      expect((yield* llm.titleRequests).length).toBe(1)
    })
  )
})
