import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { configHome, startServer } from "./harness.js"

/** What came back: the status, the body's size and (up to 2 KiB of) its text. */
interface Answer {
  readonly status: number
  readonly bytes: number
  readonly text: string
  /** How much of the request body had been written when the response arrived. */
  readonly sent: number
}

/**
 * One request over a fresh connection. A `chunked` body is sent without Content-Length in 64 KiB
 * chunks, waiting for the socket to drain, and stops early once the response has arrived.
 */
const send = (
  url: string,
  request: {
    readonly method: string
    readonly path: string
    readonly headers?: Record<string, string>
    readonly body?: string | Buffer
    readonly chunked?: boolean
  }
) =>
  Effect.promise(
    () =>
      new Promise<Answer>((resolve, reject) => {
        const target = new URL(url)
        const body = request.body === undefined ? undefined : Buffer.from(request.body)
        let sent = 0
        let answered = false
        const req = http.request(
          {
            host: target.hostname,
            port: target.port,
            method: request.method,
            path: request.path,
            // Keep-alive, as fetch does: with `Connection: close` a server may close the socket as soon
            // as it has answered, and a client still sending a refused body sees EPIPE.
            agent: keepAlive,
            headers: {
              ...(body !== undefined && !request.chunked ? { "content-length": String(body.length) } : {}),
              ...request.headers
            }
          },
          (res) => {
            answered = true
            const chunks: Array<Buffer> = []
            res.on("data", (chunk: Buffer) => chunks.push(chunk))
            res.on("end", () => {
              const all = Buffer.concat(chunks)
              resolve({ status: res.statusCode ?? 0, bytes: all.length, text: all.subarray(0, 2048).toString(), sent })
            })
          }
        )
        // Writing after the server answered and closed may fail; the answer is what counts.
        req.on("error", (error) => (answered ? undefined : reject(error)))
        if (body === undefined) return void req.end()
        if (!request.chunked) {
          sent = body.length
          return void req.end(body)
        }
        const next = () => {
          while (sent < body.length && !answered) {
            const chunk = body.subarray(sent, sent + 65536)
            sent += chunk.length
            if (!req.write(chunk)) return void req.once("drain", next)
          }
          req.end()
        }
        next()
      })
  )

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 })
const json = { "content-type": "application/json" }
const MiB = 1024 * 1024
const huge = "x".repeat(50 * 1024 * 1024)
const deepArray = `${"[".repeat(5000)}${"]".repeat(5000)}`
const deepObject = `${'{"a":'.repeat(5000)}1${"}".repeat(5000)}`

interface Row {
  readonly finding: string
  readonly method: string
  readonly path: (session: string) => string
  readonly headers?: Record<string, string>
  readonly body?: string
  readonly chunked?: boolean
  /** An exact status, or "4xx" where only the class is fixed (another rule may answer first). */
  readonly status: number | "4xx"
  readonly tag?: string
  readonly field?: string
}

/** The fuzz findings on a server with the default limits (10 MiB bodies). */
const defaults: ReadonlyArray<Row> = [
  {
    finding: "50 MB prompt → 413",
    method: "POST",
    path: (s) => `/api/session/${s}/prompt`,
    headers: json,
    body: JSON.stringify({ prompt: { text: huge }, resume: false }),
    status: 413,
    tag: "PayloadTooLargeError"
  },
  {
    finding: "50 MB prompt, chunked (no Content-Length) → 413",
    method: "POST",
    path: (s) => `/api/session/${s}/prompt`,
    headers: json,
    body: JSON.stringify({ prompt: { text: huge }, resume: false }),
    chunked: true,
    status: 413,
    tag: "PayloadTooLargeError"
  },
  {
    finding: "2 MiB prompt (under the body limit) → 400 by the prompt text limit",
    method: "POST",
    path: (s) => `/api/session/${s}/prompt`,
    headers: json,
    body: JSON.stringify({ prompt: { text: "y".repeat(2 * MiB) }, resume: false }),
    status: 400,
    tag: "InvalidRequestError",
    field: "prompt.text"
  },
  {
    finding: "6 MiB data: URL attachment → 400 by the attachment limit",
    method: "POST",
    path: (s) => `/api/session/${s}/prompt`,
    headers: json,
    body: JSON.stringify({
      prompt: { text: "see", files: [{ uri: `data:text/plain,${"z".repeat(6 * MiB)}` }] },
      resume: false
    }),
    status: 400,
    tag: "InvalidRequestError",
    field: "prompt.files.0.uri"
  },
  {
    finding: "300 KiB instruction entry → 400 by the entry limit",
    method: "PUT",
    path: (s) => `/api/session/${s}/instructions/entries/big`,
    headers: json,
    body: JSON.stringify({ value: "v".repeat(300 * 1024) }),
    status: 400,
    tag: "InvalidRequestError",
    field: "value"
  },
  {
    finding: "5,000-deep JSON array → 400",
    method: "POST",
    path: () => "/api/session",
    headers: json,
    body: `{"id":${deepArray}}`,
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    finding: "5,000-deep JSON object as an instruction entry → 400",
    method: "PUT",
    path: (s) => `/api/session/${s}/instructions/entries/deep`,
    headers: json,
    body: `{"value":${deepObject}}`,
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    finding: "5,000-deep JSON as a prompt → 400",
    method: "POST",
    path: (s) => `/api/session/${s}/prompt`,
    headers: json,
    body: `{"prompt":${deepArray}}`,
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    finding: "5,000-deep JSON with no content type → 415",
    method: "POST",
    path: (s) => `/api/session/${s}/prompt`,
    body: `{"prompt":${deepArray}}`,
    status: 415,
    tag: "UnsupportedMediaTypeError"
  },
  {
    finding: "unparsable multipart body → 4xx",
    method: "POST",
    path: () => "/api/session",
    headers: { "content-type": "multipart/form-data" },
    body: "garbage",
    status: "4xx"
  },
  {
    finding: "well-formed multipart body → 4xx",
    method: "POST",
    path: () => "/api/session",
    headers: { "content-type": "multipart/form-data; boundary=b" },
    // A field the operation does not have: refused whatever rule about content types answers first.
    body: '--b\r\nContent-Disposition: form-data; name="colour"\r\n\r\nred\r\n--b--\r\n',
    status: "4xx"
  },
  {
    finding: "form-encoded body → 4xx",
    method: "POST",
    path: () => "/api/session",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "colour=red",
    status: "4xx"
  },
  {
    finding: "octet-stream body → 4xx",
    method: "POST",
    path: () => "/api/session",
    headers: { "content-type": "application/octet-stream" },
    body: "\u0000\u0001",
    status: "4xx"
  },
  {
    finding: "16 KB unknown path → small 404",
    method: "GET",
    path: () => `/api/${"p".repeat(16_000)}`,
    status: 404,
    tag: "RouteNotFoundError"
  }
]

/** Findings about echoed input: a server whose body limit (64 MiB) lets 50 MB fields through. */
const echoes: ReadonlyArray<Row> = [
  {
    finding: "50 MB agent name → small 400",
    method: "POST",
    path: (s) => `/api/session/${s}/agent`,
    headers: json,
    body: JSON.stringify({ agent: huge }),
    status: 400,
    tag: "InvalidRequestError",
    field: "agent"
  },
  {
    finding: "50 MB model id → small 400",
    method: "POST",
    path: (s) => `/api/session/${s}/model`,
    headers: json,
    body: JSON.stringify({ model: { providerID: "nope", id: huge } }),
    status: 400,
    tag: "InvalidRequestError",
    field: "model"
  },
  {
    finding: "50 MB session id in a body → small 400",
    method: "POST",
    path: () => "/api/session",
    headers: json,
    body: JSON.stringify({ id: huge }),
    status: 400,
    tag: "InvalidRequestError",
    field: "id"
  },
  {
    finding: "50 MB unknown key → small 400",
    method: "POST",
    path: () => "/api/session",
    headers: json,
    body: JSON.stringify({ [huge]: 1 }),
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    finding: "50 MB location directory → small 400",
    method: "POST",
    path: () => "/api/session",
    headers: json,
    body: JSON.stringify({ location: { directory: huge } }),
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    finding: "50 MB attachment path → small 400",
    method: "POST",
    path: (s) => `/api/session/${s}/prompt`,
    headers: json,
    body: JSON.stringify({ prompt: { text: "a", files: [{ uri: `ftp://${huge}` }] }, resume: false }),
    status: 400,
    tag: "InvalidRequestError"
  },
  {
    finding: "50 MB prompt (under a 64 MiB body limit) → small 400 by the prompt text limit",
    method: "POST",
    path: (s) => `/api/session/${s}/prompt`,
    headers: json,
    body: JSON.stringify({ prompt: { text: huge }, resume: false }),
    status: 400,
    tag: "InvalidRequestError",
    field: "prompt.text"
  }
]

const check = (url: string, session: string, row: Row) =>
  Effect.gen(function* () {
    const answer = yield* send(url, {
      method: row.method,
      path: row.path(session),
      ...(row.headers === undefined ? {} : { headers: row.headers }),
      ...(row.body === undefined ? {} : { body: row.body }),
      ...(row.chunked === undefined ? {} : { chunked: row.chunked })
    })
    const status = row.status === "4xx" ? Math.floor(answer.status / 100) * 100 : answer.status
    expect({ finding: row.finding, status }, answer.text).toEqual({
      finding: row.finding,
      status: row.status === "4xx" ? 400 : row.status
    })
    // Small: the error quotes at most 200 characters of any input.
    expect(answer.bytes, `${row.finding}: ${answer.text}`).toBeLessThan(1500)
    const body = JSON.parse(answer.text)
    expect(body._tag, row.finding).toBeTypeOf("string")
    expect(body.message, row.finding).toBeTypeOf("string")
    if (row.tag !== undefined) expect(body._tag, `${row.finding}: ${answer.text}`).toBe(row.tag)
    if (row.field !== undefined) expect(body.field, `${row.finding}: ${answer.text}`).toBe(row.field)
    if (row.tag === "PayloadTooLargeError") expect(body.limit, row.finding).toBe(10 * MiB)
    return answer
  })

const newSession = (url: string) =>
  Effect.promise(() =>
    fetch(`${url}/api/session`, { method: "POST", headers: json, body: "{}" }).then(
      (r) => r.json() as Promise<{ data: { id: string } }>
    )
  ).pipe(Effect.map((r) => r.data.id))

const historyTypes = (url: string, session: string) =>
  Effect.promise(() =>
    fetch(`${url}/api/session/${session}/history`).then((r) => r.json() as Promise<{ data: Array<{ type: string }> }>)
  ).pipe(Effect.map((r) => r.data.map((e) => e.type)))

describe("bounded input", () => {
  it.scoped(
    "the issue's findings with the default limits: 413, 400, 4xx, never a 5xx or a large body",
    () =>
      Effect.gen(function* () {
        const { url } = yield* startServer()
        const session = yield* newSession(url)
        for (const row of defaults) {
          const answer = yield* check(url, session, row)
          // Refused as soon as it passed the limit: most of the 50 MB was never sent.
          if (row.chunked) expect(answer.sent, row.finding).toBeLessThan(40 * MiB)
        }
        // Nothing any of them sent was admitted, and the server still serves.
        expect(yield* historyTypes(url, session)).toEqual([])
        const health = yield* Effect.promise(() => fetch(`${url}/api/health`))
        expect(health.status).toBe(200)
      }),
    120_000
  )

  it.scoped(
    "server.max_body raises the limit, and a 50 MB field still gives a small 400",
    () =>
      Effect.gen(function* () {
        const { url } = yield* startServer({ XDG_CONFIG_HOME: configHome({ server: { max_body: 64 * MiB } }) })
        const session = yield* newSession(url)
        for (const row of echoes) yield* check(url, session, row)
        expect(yield* historyTypes(url, session)).toEqual([])
      }),
    120_000
  )

  it.scoped("server.max_body lowers the limit", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer({ XDG_CONFIG_HOME: configHome({ server: { max_body: 1000 } }) })
      const session = yield* newSession(url)
      const over = yield* send(url, {
        method: "POST",
        path: `/api/session/${session}/prompt`,
        headers: json,
        body: JSON.stringify({ prompt: { text: "a".repeat(1000) }, resume: false })
      })
      expect(over.status).toBe(413)
      expect(JSON.parse(over.text)).toMatchObject({ _tag: "PayloadTooLargeError", limit: 1000 })
      const under = yield* send(url, {
        method: "POST",
        path: `/api/session/${session}/prompt`,
        headers: json,
        body: JSON.stringify({ prompt: { text: "a".repeat(100) }, resume: false })
      })
      expect(under.status, under.text).toBe(200)
    })
  )

  it.scoped(
    "a body is read as UTF-8 the way a web Request reads it: a byte order mark dropped, bad bytes replaced",
    () =>
      Effect.gen(function* () {
        const { url } = yield* startServer()
        const created = yield* send(url, {
          method: "POST",
          path: "/api/session",
          headers: json,
          body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("{}")])
        })
        expect(created.status, created.text).toBe(200)
        const session = JSON.parse(created.text).data.id
        const prompt = yield* send(url, {
          method: "POST",
          path: `/api/session/${session}/prompt`,
          headers: json,
          // "caf" and a lone 0xff byte (never valid UTF-8), then "é" in its two bytes.
          body: Buffer.concat([
            Buffer.from('{"prompt":{"text":"caf'),
            Buffer.from([0xff]),
            Buffer.from(' café"},"resume":false}')
          ])
        })
        expect(prompt.status, prompt.text).toBe(200)
        expect(JSON.parse(prompt.text).data.prompt.text).toBe("caf\uFFFD café")
      })
  )

  it.scoped("an attached file over 5 MiB is refused at admission, naming the attachment", () =>
    Effect.gen(function* () {
      const { url, directory } = yield* startServer()
      const session = yield* newSession(url)
      // Inside the session's directory: a file outside it is refused for that reason first.
      const file = path.join(directory, "big.txt")
      fs.writeFileSync(file, Buffer.alloc(5 * MiB + 1, 0x61))
      const answer = yield* send(url, {
        method: "POST",
        path: `/api/session/${session}/prompt`,
        headers: json,
        body: JSON.stringify({ prompt: { text: "read this", files: [{ uri: file }] }, resume: false })
      })
      expect(answer.status, answer.text).toBe(400)
      expect(JSON.parse(answer.text)).toMatchObject({ _tag: "InvalidRequestError", field: "prompt.files.0.uri" })
      fs.truncateSync(file, 5 * MiB)
      const exact = yield* send(url, {
        method: "POST",
        path: `/api/session/${session}/prompt`,
        headers: json,
        body: JSON.stringify({ prompt: { text: "read this", files: [{ uri: file }] }, resume: false })
      })
      expect(exact.status, exact.text).toBe(200)
    })
  )
})
