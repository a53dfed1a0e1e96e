import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest"
import {
  ClientError,
  createOpencodeClient,
  isClientError,
  isInvalidCursorError,
  isInvalidRequestError,
  isSessionNotFoundError,
  isUnauthorizedError,
  type Page,
  type SessionsListResult,
  type SessionV2Info
} from "../src/index.js"
import { json, type Loopback, refusedUrl, sessionJson, start } from "./loopback.js"

let server: Loopback
beforeAll(async () => {
  server = await start()
})
afterAll(() => server.close())

const last = () => server.received[server.received.length - 1]!

/** The rejection of `promise`, failing the test when it resolves. */
const rejection = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected the call to reject")
}

const clientError = async (promise: Promise<unknown>): Promise<ClientError> => {
  const error = await rejection(promise)
  expect(error).toBeInstanceOf(ClientError)
  return error as ClientError
}

describe("createOpencodeClient", () => {
  it("is synchronous and sends nothing until a method is called", () => {
    const before = server.received.length
    const client = createOpencodeClient({ baseUrl: server.baseUrl })
    expect(typeof client.sessions.get).toBe("function")
    expect(server.received.length).toBe(before)
    expect(() => createOpencodeClient({ baseUrl: "not a url" })).toThrow(TypeError)
  })

  it("defaults to globalThis.fetch, looked up at call time", async () => {
    server.reply(() => json(200, { healthy: true }))
    const original = globalThis.fetch
    const seen: Array<string> = []
    globalThis.fetch = (input, init) => {
      seen.push(String(input))
      return original(input, init)
    }
    try {
      await createOpencodeClient({ baseUrl: server.baseUrl }).health.get()
    } finally {
      globalThis.fetch = original
    }
    expect(seen).toEqual([`${server.baseUrl}/api/health`])
  })
})

describe("success values", () => {
  const client = () => createOpencodeClient({ baseUrl: server.baseUrl })

  it("unwraps a {data} envelope: sessions.get resolves to the SessionV2Info", async () => {
    server.reply(() => json(200, { data: sessionJson("ses_abc") }))
    const info = await client().sessions.get({ sessionID: "ses_abc" })
    expectTypeOf(info).toEqualTypeOf<SessionV2Info>()
    expect(info).toEqual(sessionJson("ses_abc"))
    expect(last().method).toBe("GET")
    expect(last().url.pathname).toBe("/api/session/ses_abc")
  })

  it("URI-encodes path parameters", async () => {
    server.reply(() => json(200, { data: sessionJson("ses_a/b") }))
    await client().sessions.get({ sessionID: "ses_a/b c" })
    expect(last().url.pathname).toBe("/api/session/ses_a%2Fb%20c")
  })

  it("projects a {data, cursor} list envelope to a Page: items and the links present", async () => {
    server.reply(() => json(200, { data: [sessionJson("ses_1")], cursor: { next: "abc" } }))
    const result = await client().sessions.list()
    expectTypeOf(result).toEqualTypeOf<SessionsListResult>()
    expectTypeOf(result).toEqualTypeOf<Page<SessionV2Info>>()
    expect(result).toEqual({ items: [sessionJson("ses_1")], next: "abc" })
    expect("previous" in result).toBe(false)
  })

  it("returns an object that is not an envelope whole: health.get", async () => {
    server.reply(() => json(200, { healthy: true }))
    const health = await client().health.get()
    expect(health).toEqual({ healthy: true })
    expectTypeOf(health.healthy).toEqualTypeOf<true>()
  })

  it("sends body fields as JSON and omits undefined ones", async () => {
    server.reply(() => json(200, { data: sessionJson("ses_new") }))
    const info = await client().sessions.create({ agent: "build", model: { id: "m", providerID: "p" }, id: undefined })
    expect(info.id).toBe("ses_new")
    expect(last().method).toBe("POST")
    expect(last().headers["content-type"]).toBe("application/json")
    expect(JSON.parse(last().body)).toEqual({ agent: "build", model: { id: "m", providerID: "p" } })
  })

  it("sends {} when every body field is omitted", async () => {
    server.reply(() => json(200, { data: sessionJson("ses_new") }))
    await client().sessions.create()
    expect(last().body).toBe("{}")
  })
})

describe("query encoding", () => {
  const client = () => createOpencodeClient({ baseUrl: server.baseUrl })

  it("omits undefined parameters and stringifies the rest", async () => {
    server.reply(() => json(200, { data: [], cursor: {} }))
    await client().sessions.list({ limit: 10, order: "asc", search: undefined, directory: "/a b&c" })
    const params = last().url.searchParams
    expect([...params.keys()]).toEqual(["limit", "order", "directory"])
    expect(params.get("limit")).toBe("10")
    expect(params.get("order")).toBe("asc")
    expect(params.get("directory")).toBe("/a b&c")
  })

  it("sends no query string when nothing is set", async () => {
    server.reply(() => json(200, { data: [], cursor: {} }))
    await client().sessions.list({ cursor: undefined })
    expect(last().url.search).toBe("")
  })

  it("encodes location as a deepObject: location[directory], location[workspace]", async () => {
    server.reply(() => json(200, { directory: "/w", project: { id: "p", directory: "/w" } }))
    const info = await client().location.get({ location: { directory: "/w", workspace: "wrk_1" } })
    expect(info.project.id).toBe("p")
    const params = last().url.searchParams
    expect([...params.entries()]).toEqual([
      ["location[directory]", "/w"],
      ["location[workspace]", "wrk_1"]
    ])
  })

  it("omits undefined deepObject members", async () => {
    server.reply(() => json(200, { directory: "/w", project: { id: "p", directory: "/w" } }))
    await client().location.get({ location: { directory: "/w", workspace: undefined } })
    expect([...last().url.searchParams.entries()]).toEqual([["location[directory]", "/w"]])
  })
})

describe("headers", () => {
  it("merges client headers with per-call overrides, case-insensitively", async () => {
    server.reply(() => json(200, { healthy: true }))
    const client = createOpencodeClient({
      baseUrl: server.baseUrl,
      headers: { Authorization: "Basic client", "x-client": "1" }
    })
    await client.health.get({}, { headers: { authorization: "Basic call", "x-call": "2" } })
    expect(last().headers.authorization).toBe("Basic call")
    expect(last().headers["x-client"]).toBe("1")
    expect(last().headers["x-call"]).toBe("2")
    expect(last().headers.accept).toBe("application/json")
    await client.health.get()
    expect(last().headers.authorization).toBe("Basic client")
    expect(last().headers["x-call"]).toBeUndefined()
  })

  it("uses the fetch it was given", async () => {
    server.reply(() => json(200, { healthy: true }))
    const urls: Array<string> = []
    const client = createOpencodeClient({
      baseUrl: `${server.baseUrl}/`,
      fetch: (input, init) => {
        urls.push(String(input))
        return fetch(input, init)
      }
    })
    await client.health.get()
    expect(urls).toEqual([`${server.baseUrl}/api/health`])
  })
})

describe("declared failures", () => {
  const client = () => createOpencodeClient({ baseUrl: server.baseUrl })

  it("rejects with the tagged wire value when status and _tag are declared", async () => {
    const body = { _tag: "SessionNotFoundError", sessionID: "ses_x", message: "Session not found: ses_x" }
    server.reply(() => json(404, body))
    const error = await rejection(client().sessions.get({ sessionID: "ses_x" }))
    expect(error).toEqual(body)
    expect(error).not.toBeInstanceOf(Error)
    expect(isSessionNotFoundError(error)).toBe(true)
    expect(isInvalidRequestError(error)).toBe(false)
    expect(isClientError(error)).toBe(false)
    if (isSessionNotFoundError(error)) expectTypeOf(error.sessionID).toEqualTypeOf<string>()
  })

  it("recognises each declared failure of an operation, including API-wide ones", async () => {
    server.reply(() => json(400, { _tag: "InvalidCursorError", message: "bad cursor" }))
    expect(isInvalidCursorError(await rejection(client().sessions.list({ cursor: "zz" })))).toBe(true)
    server.reply(() => json(400, { _tag: "InvalidRequestError", message: "bad limit", kind: "Query" }))
    expect(isInvalidRequestError(await rejection(client().sessions.list({ limit: 0 })))).toBe(true)
    server.reply(() => json(401, { _tag: "UnauthorizedError", message: "no" }))
    expect(isUnauthorizedError(await rejection(client().health.get()))).toBe(true)
  })

  it("guards are structural: any realm's plain object with the tag passes, lookalikes do not", () => {
    expect(isSessionNotFoundError(JSON.parse('{"_tag":"SessionNotFoundError"}'))).toBe(true)
    expect(isSessionNotFoundError({ _tag: "SessionNotFound" })).toBe(false)
    expect(isSessionNotFoundError(null)).toBe(false)
    expect(isSessionNotFoundError("SessionNotFoundError")).toBe(false)
  })
})

describe("ClientError reasons", () => {
  it("Transport: connection refused", async () => {
    const client = createOpencodeClient({ baseUrl: await refusedUrl() })
    const error = await clientError(client.health.get())
    expect(error.reason).toBe("Transport")
    expect(error.status).toBeUndefined()
    expect(error.cause).toBeDefined()
    expect(isClientError(error)).toBe(true)
  })

  it("Transport: aborted through the call's signal", async () => {
    server.reply(() => ({ hang: true }))
    const controller = new AbortController()
    const pending = createOpencodeClient({ baseUrl: server.baseUrl }).sessions.get(
      { sessionID: "ses_slow" },
      { signal: controller.signal }
    )
    await new Promise((resolve) => setTimeout(resolve, 50))
    controller.abort()
    const error = await clientError(pending)
    expect(error.reason).toBe("Transport")
    expect((error.cause as Error).name).toBe("AbortError")
  })

  it("UnexpectedStatus: a status the operation does not declare", async () => {
    server.reply(() => ({ status: 418, contentType: "text/plain", body: "teapot" }))
    const error = await clientError(createOpencodeClient({ baseUrl: server.baseUrl }).health.get())
    expect(error.reason).toBe("UnexpectedStatus")
    expect(error.status).toBe(418)
    expect(error.body).toBe("teapot")
  })

  it("UnexpectedStatus: a declared status with an undeclared _tag", async () => {
    // 404 is declared for sessions.get, but only with SessionNotFoundError.
    server.reply(() => json(404, { _tag: "RouteNotFoundError", method: "GET", path: "/x", message: "no route" }))
    const error = await clientError(
      createOpencodeClient({ baseUrl: server.baseUrl }).sessions.get({ sessionID: "ses_x" })
    )
    expect(error.reason).toBe("UnexpectedStatus")
    expect(error.status).toBe(404)
    // The same status is undeclared for health.get.
    const other = await clientError(createOpencodeClient({ baseUrl: server.baseUrl }).health.get())
    expect(other.reason).toBe("UnexpectedStatus")
  })

  it("UnexpectedStatus: a declared status whose body is not JSON", async () => {
    server.reply(() => ({ status: 401, contentType: "text/html", body: "<h1>login</h1>" }))
    const error = await clientError(createOpencodeClient({ baseUrl: server.baseUrl }).health.get())
    expect(error.reason).toBe("UnexpectedStatus")
    expect(error.status).toBe(401)
  })

  it("UnsupportedContentType: a success without a JSON content type", async () => {
    server.reply(() => ({ status: 200, contentType: "text/plain", body: '{"healthy":true}' }))
    const error = await clientError(createOpencodeClient({ baseUrl: server.baseUrl }).health.get())
    expect(error.reason).toBe("UnsupportedContentType")
    expect(error.status).toBe(200)
  })

  it("accepts JSON content types with parameters", async () => {
    server.reply(() => ({ status: 200, contentType: "application/json; charset=utf-8", body: '{"healthy":true}' }))
    await expect(createOpencodeClient({ baseUrl: server.baseUrl }).health.get()).resolves.toEqual({ healthy: true })
  })

  it("MalformedResponse: a JSON content type with a body that is not JSON", async () => {
    server.reply(() => ({ status: 200, contentType: "application/json", body: '{"data": ' }))
    const error = await clientError(
      createOpencodeClient({ baseUrl: server.baseUrl }).sessions.get({ sessionID: "ses_1" })
    )
    expect(error.reason).toBe("MalformedResponse")
    expect(error.cause).toBeInstanceOf(SyntaxError)
  })

  it("MalformedResponse: a declared error status with a broken JSON body", async () => {
    server.reply(() => ({ status: 404, contentType: "application/json", body: "{" }))
    const error = await clientError(
      createOpencodeClient({ baseUrl: server.baseUrl }).sessions.get({ sessionID: "ses_1" })
    )
    expect(error.reason).toBe("MalformedResponse")
    expect(error.status).toBe(404)
  })

  it("does not validate shapes: a syntactically valid mismatch resolves as is", async () => {
    server.reply(() => json(200, { data: { unexpected: true } }))
    await expect(
      createOpencodeClient({ baseUrl: server.baseUrl }).sessions.get({ sessionID: "ses_1" })
    ).resolves.toEqual({
      unexpected: true
    })
  })
})
