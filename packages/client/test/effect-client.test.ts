import type { HttpClientError } from "@effect/platform"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, Layer, ParseResult, Schema, Stream } from "effect"
import { expectTypeOf } from "vitest"
import { type Cursor, Errors, Identifier, OpencodeClient, type Page, Session } from "../src/effect/index.js"
import { json, type Loopback, sessionJson, start } from "./loopback.js"

let server: Loopback
beforeAll(async () => {
  server = await start()
})
afterAll(() => server.close())

const last = () => server.received[server.received.length - 1]!

/** The client over fetch, built per test against the loopback server. */
const client = Effect.suspend(() => OpencodeClient.make({ baseUrl: server.baseUrl }))

const sessionID = Identifier.SessionID.make("ses_abc")

describe("OpencodeClient.make", () => {
  it.effect("takes HttpClient from the environment: a caller-transformed client carries its headers", () =>
    Effect.gen(function* () {
      server.reply(() => json(200, { healthy: true }))
      const opencode = yield* client
      const health = yield* opencode.health.get()
      expect(health).toEqual({ healthy: true })
      expect(last().headers.authorization).toBe("Basic dXNlcjpwdw==")
    }).pipe(
      Effect.provide(
        Layer.effect(
          HttpClient.HttpClient,
          Effect.map(
            HttpClient.HttpClient,
            HttpClient.mapRequest(HttpClientRequest.setHeader("authorization", "Basic dXNlcjpwdw=="))
          )
        ).pipe(Layer.provide(FetchHttpClient.layer))
      )
    )
  )
})

describe("decoded values", () => {
  it.effect("sessions.get unwraps {data} and decodes a SessionV2Info with branded ids", () =>
    Effect.gen(function* () {
      server.reply(() => json(200, { data: sessionJson("ses_abc") }))
      const opencode = yield* client
      const info = yield* opencode.sessions.get({ sessionID })
      expect(last().url.pathname).toBe("/api/session/ses_abc")
      expect(Schema.is(Session.SessionV2Info)(info)).toBe(true)
      expect(info.id).toBe("ses_abc")
      expectTypeOf(info.id).toEqualTypeOf<Identifier.SessionID>()
      expectTypeOf(opencode.sessions.get).returns.toEqualTypeOf<
        Effect.Effect<
          Session.SessionV2Info,
          | Errors.SessionNotFoundError
          | Errors.InvalidRequestError
          | Errors.UnauthorizedError
          | HttpClientError.HttpClientError
          | ParseResult.ParseError
        >
      >()
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )

  it.effect("sessions.list encodes decoded query values and projects the envelope to a decoded Page", () =>
    Effect.gen(function* () {
      server.reply(() => json(200, { data: [sessionJson("ses_1")], cursor: { next: "bmV4dA" } }))
      const opencode = yield* client
      const page = yield* opencode.sessions.list({ limit: 10, order: "asc" })
      expect([...last().url.searchParams.entries()]).toEqual([
        ["limit", "10"],
        ["order", "asc"]
      ])
      expect(page.items.map((s) => s.id)).toEqual(["ses_1"])
      expect(page.next).toBe("bmV4dA")
      expect("previous" in page).toBe(false)
      expectTypeOf(page.next).toEqualTypeOf<Cursor.Token | undefined>()
      expectTypeOf(page).toEqualTypeOf<Page.Page<Session.SessionV2Info>>()

      const next = yield* opencode.sessions.list({ cursor: page.next!, limit: 20 })
      expect([...last().url.searchParams.entries()]).toEqual([
        ["limit", "20"],
        ["cursor", "bmV4dA"]
      ])
      expect(next.items).toHaveLength(1)
      // Compile-time only (never run): ordering and filters belong to the initial query.
      // @ts-expect-error a continuation takes no `order`
      const mixed = () => opencode.sessions.list({ cursor: page.next!, order: "asc" })
      // @ts-expect-error a walk starts from an initial query
      const walkFromCursor = () => opencode.sessions.listPages({ cursor: page.next! })
      expect(typeof mixed === "function" && typeof walkFromCursor === "function").toBe(true)
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )

  it.effect("sessions.listPages is a cold Stream of pages following the next links", () =>
    Effect.gen(function* () {
      server.reply((request) => {
        const cursor = request.url.searchParams.get("cursor")
        const index = cursor === null ? 0 : Number(cursor.replace("p", ""))
        return json(200, {
          data: [sessionJson(`ses_${index}`)],
          cursor: index < 2 ? { next: `p${index + 1}` } : {}
        })
      })
      const opencode = yield* client
      const before = server.received.length
      const walk = opencode.sessions.listPages({ limit: 1, search: "x" })
      expect(server.received.length).toBe(before)
      const pages = Chunk.toReadonlyArray(yield* Stream.runCollect(walk))
      expect(pages.map((page) => page.items.map((s) => s.id))).toEqual([["ses_0"], ["ses_1"], ["ses_2"]])
      expect(server.received.slice(before).map((r) => r.url.search)).toEqual([
        "?limit=1&search=x",
        "?cursor=p1",
        "?cursor=p2"
      ])
      // Cold: running it again starts over.
      expect(Chunk.size(yield* Stream.runCollect(walk))).toBe(3)
      expect(server.received[before + 3]!.url.search).toBe("?limit=1&search=x")
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )

  it.effect("location.get sends the deepObject location through Protocol's codec", () =>
    Effect.gen(function* () {
      server.reply(() => json(200, { directory: "/w", workspaceID: "wrk_1", project: { id: "p", directory: "/w" } }))
      const opencode = yield* client
      const location = yield* opencode.location.get({ location: { directory: "/w", workspace: "wrk_1" } })
      expect([...last().url.searchParams.entries()]).toEqual([
        ["location[directory]", "/w"],
        ["location[workspace]", "wrk_1"]
      ])
      expect(location.workspaceID).toBe("wrk_1")
      expectTypeOf(location.workspaceID).toEqualTypeOf<Identifier.WorkspaceID | undefined>()
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )

  it.effect("sessions.create sends the payload as JSON and unwraps {data}", () =>
    Effect.gen(function* () {
      server.reply(() => json(200, { data: sessionJson("ses_new") }))
      const opencode = yield* client
      const info = yield* opencode.sessions.create({ agent: "build" })
      expect(last().method).toBe("POST")
      expect(JSON.parse(last().body)).toEqual({ agent: "build" })
      expect(info.id).toBe("ses_new")
      yield* opencode.sessions.create()
      expect(JSON.parse(last().body)).toEqual({})
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )

  it.effect("a response that does not decode fails with ParseError", () =>
    Effect.gen(function* () {
      server.reply(() => json(200, { data: { ...sessionJson("ses_1"), id: "not-a-session" } }))
      const opencode = yield* client
      const result = yield* Effect.either(opencode.sessions.get({ sessionID }))
      expect(Either.isLeft(result) && ParseResult.isParseError(result.left)).toBe(true)
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )
})

describe("typed failures", () => {
  it.effect("SessionNotFoundError is decoded and caught with Effect.catchTag", () =>
    Effect.gen(function* () {
      server.reply(() =>
        json(404, { _tag: "SessionNotFoundError", sessionID: "ses_abc", message: "Session not found: ses_abc" })
      )
      const opencode = yield* client
      const caught = yield* opencode.sessions.get({ sessionID }).pipe(
        Effect.as("found"),
        Effect.catchTag("SessionNotFoundError", (error) => {
          expect(error).toBeInstanceOf(Errors.SessionNotFoundError)
          return Effect.succeed(`missing ${error.sessionID}`)
        })
      )
      expect(caught).toBe("missing ses_abc")
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )

  it.effect("API-wide failures are typed on every operation: UnauthorizedError on health.get", () =>
    Effect.gen(function* () {
      server.reply(() => json(401, { _tag: "UnauthorizedError", message: "no" }))
      const opencode = yield* client
      const caught = yield* opencode.health.get().pipe(
        Effect.as("ok"),
        Effect.catchTag("UnauthorizedError", (error) => Effect.succeed(error.message))
      )
      expect(caught).toBe("no")
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )

  it.effect("an undeclared status fails with an HttpClientError", () =>
    Effect.gen(function* () {
      server.reply(() => ({ status: 418, contentType: "text/plain", body: "teapot" }))
      const opencode = yield* client
      const caught = yield* opencode.health.get().pipe(
        Effect.as(0),
        Effect.catchTag("ResponseError", (error) => Effect.succeed(error.response.status))
      )
      expect(caught).toBe(418)
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )
})
