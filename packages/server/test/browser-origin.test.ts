import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Config } from "@opencode-ai/core"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { type Browser, chromium, type Page } from "playwright-core"
import { startServer } from "./harness.js"

/**
 * A real headless Chromium on a page served from another loopback origin (another port) tries to
 * drive a server started with the defaults (no password, loopback): the `no-cors` Blob attack, form
 * posts and CORS fetches. None of them may create or prompt a session. An origin allowed with
 * `cors` gets real CORS, and a DNS-rebinding `Host` is refused.
 *
 * Without `/usr/bin/chromium` the suite is skipped, except in CI, where it fails instead
 * (`scripts/system-deps.sh` installs it).
 */
const chromiumPath = "/usr/bin/chromium"
const inCI = process.env.CI === "true"
const hasChromium = fs.existsSync(chromiumPath)

const { reply, text, toolCall, finish } = LLMScript

let browser: Browser | undefined

/** A page server on its own loopback port: `/` is an empty HTML page, so the page's origin is its URL. */
const pageServer = Effect.acquireRelease(
  Effect.async<{ server: http.Server; origin: string }>((resume) => {
    const server = http.createServer((_, response) => {
      response.writeHead(200, { "content-type": "text/html" })
      response.end("<!doctype html><title>elsewhere</title><body></body>")
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      if (address === null || typeof address === "string") throw new Error("expected a TCP address")
      resume(Effect.succeed({ server, origin: `http://127.0.0.1:${address.port}` }))
    })
  }),
  ({ server }) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
).pipe(Effect.map(({ origin }) => origin))

/**
 * `opencode serve`'s layer on 127.0.0.1 (ephemeral port) over a fresh database, with a scripted model
 * that, if it were ever prompted, would run `touch pwned` in the instance directory.
 */
const server = (options: { readonly cors?: ReadonlyArray<string>; readonly env?: Record<string, string> } = {}) =>
  Effect.gen(function* () {
    const llm = yield* ScriptedLLMServer.make()
    yield* llm.enqueue(
      reply(toolCall("call_1", "bash", { command: "touch pwned", description: "touch" }), finish("tool-calls")),
      reply(text("done"), finish("stop"))
    )
    const { url, port, dataHome, directory } = yield* startServer(options.env, {
      config: Config.layerTest(ScriptedLLMServer.config(llm.url)),
      ...(options.cors === undefined ? {} : { cors: options.cors })
    })
    const database = path.join(dataHome, "opencode", "opencode.db")
    /** The session ids in the database, read from the file itself. */
    const stored = Effect.sync(() => {
      const db = new Database(database, { readonly: true, fileMustExist: true })
      try {
        return (db.prepare("select id from session").all() as Array<{ id: string }>).map((row) => row.id)
      } finally {
        db.close()
      }
    })
    /** The session ids the server lists to a trusted caller (no Origin, from this process). */
    const listed = Effect.promise(async () => {
      const response = await fetch(`${url}/api/session`)
      expect(response.status).toBe(200)
      return ((await response.json()) as { data: Array<{ id: string }> }).data.map((session) => session.id)
    })
    return {
      url,
      port,
      directory,
      llm,
      stored,
      listed,
      /** Nothing was created, prompted or run. */
      untouched: Effect.gen(function* () {
        expect(yield* stored).toEqual([])
        expect(yield* listed).toEqual([])
        expect(yield* llm.requests).toEqual([])
        expect(fs.existsSync(path.join(directory, "pwned"))).toBe(false)
      })
    }
  })

/** A new page, closed with the scope. */
const newPage = Effect.acquireRelease(
  Effect.promise(async () => {
    if (browser === undefined) throw new Error("Chromium did not start")
    return browser.newPage()
  }),
  (page) => Effect.promise(() => page.close())
)

/** A new page at `url` (its origin is the page's), closed with the scope. */
const pageAt = (url: string) => Effect.tap(newPage, (page) => Effect.promise(() => page.goto(url)))

/**
 * Submits a real HTML form from `page` into a hidden iframe and waits for the answer to load there.
 * `fields` are the form's inputs, in order.
 */
const submitForm = (page: Page, action: string, enctype: string, fields: ReadonlyArray<readonly [string, string]>) =>
  Effect.promise(() =>
    page.evaluate(
      ({ action, enctype, fields }) =>
        new Promise<void>((resolve) => {
          const sink = document.createElement("iframe")
          sink.name = `sink${Math.random().toString(36).slice(2)}`
          document.body.append(sink)
          const form = document.createElement("form")
          form.method = "POST"
          form.action = action
          form.enctype = enctype
          form.target = sink.name
          for (const [name, value] of fields) {
            const input = document.createElement("input")
            input.type = "hidden"
            input.name = name
            input.value = value
            form.append(input)
          }
          document.body.append(form)
          sink.addEventListener("load", () => resolve(), { once: true })
          form.submit()
        }),
      { action, enctype, fields }
    )
  )

// Counted as a failed test in CI (a failing beforeAll alone would report the suite's tests as skipped).
it.runIf(hasChromium || inCI)("Chromium is installed for the browser tests", () => {
  expect(fs.existsSync(chromiumPath), `${chromiumPath} (scripts/system-deps.sh installs it)`).toBe(true)
})

describe.skipIf(!hasChromium && !inCI)("a page on another origin, in headless Chromium", () => {
  beforeAll(async () => {
    if (!hasChromium) throw new Error(`${chromiumPath} is missing: CI must install Chromium (scripts/system-deps.sh)`)
    browser = await chromium.launch({
      executablePath: chromiumPath,
      // Root in a container has no user namespace sandbox. The resolver rule lets a page live at
      // evil.example while its name resolves to the loopback server, as after a DNS rebinding.
      args: ["--no-sandbox", "--host-resolver-rules=MAP evil.example 127.0.0.1"]
    })
  })
  afterAll(async () => {
    await browser?.close()
  })

  it.scopedLive("cannot create or prompt a session with the no-cors Blob attack", () =>
    Effect.gen(function* () {
      const target = yield* server()
      const page = yield* pageAt(yield* pageServer)
      const outcome = yield* Effect.promise(() =>
        page.evaluate(async (url) => {
          const id = "ses_zzattackblob"
          const send = (route: string, body: unknown) =>
            fetch(`${url}${route}`, { method: "POST", mode: "no-cors", body: new Blob([JSON.stringify(body)]) }).then(
              (response) => response.type,
              (error) => `rejected: ${String(error)}`
            )
          const created = await send("/api/session", { id })
          const prompted = await send(`/api/session/${id}/prompt`, { prompt: { text: "run it" } })
          return [created, prompted]
        }, target.url)
      )
      // An opaque answer: the page learns nothing, and the server refused both requests.
      expect(outcome).toEqual(["opaque", "opaque"])
      yield* target.untouched
    })
  )

  it.scopedLive("cannot create or prompt a session with form posts (text/plain trick, urlencoded, multipart)", () =>
    Effect.gen(function* () {
      const target = yield* server()
      const page = yield* pageAt(yield* pageServer)
      // text/plain sends `name=value`: a name that opens the JSON and a value that closes it.
      yield* submitForm(page, `${target.url}/api/session`, "text/plain", [[`{"id":"ses_zzformplain`, `x"}`]])
      yield* submitForm(page, `${target.url}/api/session/ses_zzformplain=x/prompt`, "text/plain", [
        [`{"prompt":{"text":"run`, ` it"}}`]
      ])
      yield* submitForm(page, `${target.url}/api/session`, "application/x-www-form-urlencoded", [
        ["id", "ses_zzformurlencoded"]
      ])
      yield* submitForm(page, `${target.url}/api/session`, "multipart/form-data", [["id", "ses_zzformmultipart"]])
      yield* target.untouched
    })
  )

  it.scopedLive("cannot create, prompt or read with CORS fetches from an origin not allowed", () =>
    Effect.gen(function* () {
      const target = yield* server()
      const page = yield* pageAt(yield* pageServer)
      const outcome = yield* Effect.promise(() =>
        page.evaluate(async (url) => {
          const attempt = (route: string, init: RequestInit) =>
            fetch(`${url}${route}`, { mode: "cors", ...init }).then(
              (response) => `status ${response.status}`,
              () => "blocked"
            )
          return {
            // A JSON body needs a preflight, which is refused.
            json: await attempt("/api/session", {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ id: "ses_zzcorsjson" })
            }),
            // These go without a preflight (a Blob with no type, a string as text/plain, a form
            // body): the server must refuse them itself, since the browser only hides the answer.
            blob: await attempt("/api/session", {
              method: "POST",
              body: new Blob([JSON.stringify({ id: "ses_zzcorsblob" })])
            }),
            prompt: await attempt("/api/session/ses_zzcorsblob/prompt", {
              method: "POST",
              body: new Blob([JSON.stringify({ prompt: { text: "run it" } })])
            }),
            text: await attempt("/api/session", { method: "POST", body: JSON.stringify({ id: "ses_zzcorstext" }) }),
            form: await attempt("/api/session", {
              method: "POST",
              body: new URLSearchParams({ id: "ses_zzcorsform" })
            }),
            read: await attempt("/api/session", {}),
            credentialed: await attempt("/api/session", { credentials: "include" })
          }
        }, target.url)
      )
      expect(outcome).toEqual({
        json: "blocked",
        blob: "blocked",
        prompt: "blocked",
        text: "blocked",
        form: "blocked",
        read: "blocked",
        credentialed: "blocked"
      })
      yield* target.untouched
    })
  )

  it.scopedLive("an origin allowed with cors creates and reads a session, with credentials, and streams events", () =>
    Effect.gen(function* () {
      const friend = yield* pageServer
      const password = "pw"
      const target = yield* server({ cors: [friend], env: { OPENCODE_SERVER_PASSWORD: password } })
      const page = yield* pageAt(friend)
      const outcome = yield* Effect.promise(() =>
        page.evaluate(
          async ({ url, authorization }) => {
            const headers = { authorization, "content-type": "application/json" }
            const created = await fetch(`${url}/api/session`, {
              method: "POST",
              mode: "cors",
              credentials: "include",
              headers,
              body: JSON.stringify({ id: "ses_zzfriend" })
            })
            const read = await fetch(`${url}/api/session/ses_zzfriend`, {
              mode: "cors",
              credentials: "include",
              headers: { authorization }
            })
            return {
              created: { status: created.status, id: (await created.json()).data.id },
              read: { status: read.status, id: (await read.json()).data.id }
            }
          },
          { url: target.url, authorization: `Basic ${Buffer.from(`opencode:${password}`).toString("base64")}` }
        )
      )
      expect(outcome).toEqual({
        created: { status: 200, id: "ses_zzfriend" },
        read: { status: 200, id: "ses_zzfriend" }
      })
      expect(yield* target.stored).toEqual(["ses_zzfriend"])

      // The preflight the browser made, as it made it: exact origin, credentials, the headers asked.
      const preflight = yield* Effect.promise(() =>
        fetch(`${target.url}/api/session`, {
          method: "OPTIONS",
          headers: {
            origin: friend,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization,content-type,last-event-id"
          }
        })
      )
      expect(preflight.status).toBe(204)
      expect(preflight.headers.get("access-control-allow-origin")).toBe(friend)
      expect(preflight.headers.get("access-control-allow-credentials")).toBe("true")
      expect(preflight.headers.get("vary")).toMatch(/Origin/)
      expect(preflight.headers.get("access-control-allow-headers")?.toLowerCase().split(/,\s*/)).toEqual(
        expect.arrayContaining(["content-type", "authorization", "last-event-id"])
      )
      expect(Number(preflight.headers.get("access-control-max-age"))).toBeGreaterThan(0)
    })
  )

  it.scopedLive("an allowed origin's EventSource receives the global stream; another origin's does not", () =>
    Effect.gen(function* () {
      const friend = yield* pageServer
      const stranger = yield* pageServer
      const target = yield* server({ cors: [friend] })
      const listen = (page: Page) =>
        Effect.promise(() =>
          page.evaluate(
            (url) =>
              new Promise<string>((resolve) => {
                const source = new EventSource(`${url}/api/event`, { withCredentials: true })
                source.addEventListener("server.connected", () => {
                  source.close()
                  resolve("connected")
                })
                source.onerror = () => {
                  source.close()
                  resolve("error")
                }
              }),
            target.url
          )
        )
      expect(yield* listen(yield* pageAt(friend))).toBe("connected")
      expect(yield* listen(yield* pageAt(stranger))).toBe("error")
      // The stranger's stream is refused by the server, not merely hidden by the browser.
      const refused = yield* Effect.promise(async () => {
        const response = await fetch(`${target.url}/api/event`, {
          headers: { origin: stranger, accept: "text/event-stream" }
        })
        return { status: response.status, body: await response.json() }
      })
      expect(refused).toEqual({
        status: 403,
        body: expect.objectContaining({ _tag: "ForbiddenOriginError", origin: stranger })
      })
    })
  )

  it.scopedLive("a page whose name was rebound to the loopback server is refused, and creates nothing", () =>
    Effect.gen(function* () {
      const target = yield* server()
      // The page's origin is http://evil.example:PORT, and its name resolves to 127.0.0.1.
      const page = yield* newPage
      const landed = yield* Effect.promise(async () => {
        const response = await page.goto(`http://evil.example:${target.port}/doc`)
        return { status: response?.status(), body: await response?.json() }
      })
      expect(landed).toMatchObject({ status: 403, body: { _tag: "ForbiddenHostError" } })
      const outcome = yield* Effect.promise(() =>
        page.evaluate(async () => {
          // Same origin as far as the browser knows: no preflight, and the page reads the answers.
          const created = await fetch("/api/session", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ id: "ses_zzrebound" })
          })
          const read = await fetch("/api/session")
          return { created: created.status, read: read.status, tag: (await read.json())._tag }
        })
      )
      expect(outcome).toEqual({ created: 403, read: 403, tag: "ForbiddenHostError" })
      yield* target.untouched
    })
  )
})

/** One raw HTTP/1.1 request with exactly these headers (fetch would not let a test set `Host`). */
const raw = (url: string, method: string, headers: Record<string, string>, body?: string) =>
  Effect.async<{ status: number; body: unknown }>((resume) => {
    const { hostname, port } = new URL(url)
    const request = http.request({ host: hostname, port, method, path: "/api/session", headers }, (response) => {
      let text = ""
      response.on("data", (chunk) => (text += chunk))
      response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, body: JSON.parse(text) })))
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end(body)
  })

describe("DNS rebinding (Host) on a loopback listener", () => {
  it.scopedLive("refuses a foreign Host with 403 and creates nothing; loopback names with the port pass", () =>
    Effect.gen(function* () {
      const target = yield* server()
      const json = JSON.stringify({ id: "ses_zzhost" })
      const send = (host: string) =>
        raw(target.url, "POST", { host, "content-type": "application/json", "content-length": `${json.length}` }, json)
      for (const host of [
        `evil.example:${target.port}`,
        "evil.example",
        `localhost:${target.port + 1}`,
        `localhost.evil.example:${target.port}`,
        `127.0.0.1.evil.example:${target.port}`,
        `[::2]:${target.port}`
      ]) {
        const refused = yield* send(host)
        expect(refused.status, host).toBe(403)
        expect(refused.body, host).toMatchObject({ _tag: "ForbiddenHostError", host })
      }
      yield* target.untouched
      for (const host of [`localhost:${target.port}`, `127.0.0.1:${target.port}`, `[::1]:${target.port}`]) {
        expect((yield* raw(target.url, "GET", { host })).status, host).toBe(200)
      }
    })
  )
})
