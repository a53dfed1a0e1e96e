import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, inject, it } from "@effect/vitest"
import { Config } from "@opencode-ai/core"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { type Browser, chromium } from "playwright-core"
import { startServer } from "./harness.js"

/**
 * The Promise client as a browser app uses it: a page on another loopback origin (allowed with
 * `--cors`) imports the client's built `index.js` as a plain ES module (no import map, no bundler)
 * and drives a password-protected server in real headless Chromium. A native `EventSource`, which
 * cannot send an `Authorization` header, opens a session's stream with a stream token.
 *
 * Without `/usr/bin/chromium` the suite is skipped, except in CI, where it fails instead
 * (`scripts/system-deps.sh` installs it).
 */
const chromiumPath = "/usr/bin/chromium"
const inCI = process.env.CI === "true"
const hasChromium = fs.existsSync(chromiumPath)
const { reply, text, finish } = LLMScript

const password = "browser-secret"
const authorization = `Basic ${Buffer.from(`opencode:${password}`).toString("base64")}`

/** Serves an app page at `/` that imports the client bundle from `/client.js`, on its own loopback port. */
const pageServer = Effect.acquireRelease(
  Effect.async<{ server: http.Server; origin: string }>((resume) => {
    const bundle = fs.readFileSync(path.join(inject("clientBundle"), "index.js"))
    const server = http.createServer((request, response) => {
      if (request.url === "/client.js") {
        response.writeHead(200, { "content-type": "text/javascript" })
        response.end(bundle)
        return
      }
      // The app imports the client as a browser would, from its own origin.
      response.writeHead(200, { "content-type": "text/html" })
      response.end(
        `<!doctype html><title>app</title><script type="module">import { createOpencodeClient } from "/client.js"; window.createOpencodeClient = createOpencodeClient</script>`
      )
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      if (address === null || typeof address === "string") throw new Error("expected a TCP address")
      resume(Effect.succeed({ server, origin: `http://127.0.0.1:${address.port}` }))
    })
  }),
  ({ server }) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
).pipe(Effect.map(({ origin }) => origin))

/** A password-protected server that allows `origin`, over a scripted model answering one text turn. */
const serverFor = (origin: string) =>
  Effect.gen(function* () {
    const llm = yield* ScriptedLLMServer.make()
    yield* llm.enqueue(reply(text("hello from the model"), finish("stop")))
    const { url } = yield* startServer(
      { OPENCODE_SERVER_PASSWORD: password },
      { config: Config.layerTest(ScriptedLLMServer.config(llm.url)), cors: [origin] }
    )
    return url
  })

let browser: Browser | undefined

describe.skipIf(!hasChromium && !inCI)("the built Promise client in a page on another origin (Chromium)", () => {
  beforeAll(async () => {
    if (!hasChromium) throw new Error(`${chromiumPath} is missing: CI must install Chromium (scripts/system-deps.sh)`)
    browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] })
  })
  afterAll(async () => {
    await browser?.close()
  })

  /** Runs `script` in a fresh page of `origin` with the server's URL and credentials. */
  const inPage = <A>(
    origin: string,
    serverUrl: string,
    script: (input: { serverUrl: string; auth: string }) => Promise<A>
  ) =>
    Effect.promise(async () => {
      const page = await browser!.newPage()
      try {
        await page.goto(origin)
        await page.waitForFunction(() => "createOpencodeClient" in window)
        return (await page.evaluate(script, { serverUrl, auth: authorization })) as A
      } finally {
        await page.close()
      }
    })

  it.scoped(
    "imports the bundle as it is, creates a session, prompts the scripted model and streams its events",
    () =>
      Effect.gen(function* () {
        const origin = yield* pageServer
        const serverUrl = yield* serverFor(origin)
        const result = yield* inPage(origin, serverUrl, async ({ serverUrl, auth }) => {
          const { createOpencodeClient } = window as any
          const client = createOpencodeClient({ baseUrl: serverUrl, headers: { authorization: auth } })
          const session = await client.sessions.create({})
          const seen: Array<string> = []
          const streamed = (async () => {
            for await (const event of client.sessions.events({ sessionID: session.id })) {
              seen.push(event.type)
              if (event.type === "session.next.step.ended") break
            }
          })()
          await client.sessions.prompt({ sessionID: session.id, prompt: { text: "hi" } })
          await streamed
          const page = await client.sessions.messages({ sessionID: session.id, order: "asc" })
          return { seen, messages: page.items }
        })
        expect(result.seen).toEqual(expect.arrayContaining(["session.next.step.started", "session.next.step.ended"]))
        expect(result.seen.indexOf("session.next.text.ended")).toBeGreaterThan(-1)
        const assistant = result.messages.find((message: { type: string }) => message.type === "assistant")
        expect(JSON.stringify(assistant)).toContain("hello from the model")
      }),
    120_000
  )

  it.scoped(
    "a native EventSource is refused without a token and streams with one from events.token()",
    () =>
      Effect.gen(function* () {
        const origin = yield* pageServer
        const serverUrl = yield* serverFor(origin)
        const result = yield* inPage(origin, serverUrl, async ({ serverUrl, auth }) => {
          const { createOpencodeClient } = window as any
          const client = createOpencodeClient({ baseUrl: serverUrl, headers: { authorization: auth } })
          const session = await client.sessions.create({})
          const stream = `${serverUrl}/api/session/${session.id}/event`
          const opened = (url: string) =>
            new Promise<boolean>((resolve) => {
              const source = new EventSource(url)
              source.onopen = () => {
                source.close()
                resolve(true)
              }
              source.onerror = () => {
                source.close()
                resolve(false)
              }
            })
          const withoutToken = await opened(stream)
          const forged = await opened(`${stream}?token=${encodeURIComponent("zzzzzz.AAAA")}`)
          const { token } = await client.events.token()
          const types = await new Promise<Array<string>>((resolve) => {
            const source = new EventSource(`${stream}?token=${encodeURIComponent(token)}`)
            const seen: Array<string> = []
            // Frames are named by their type: listen per type (`onmessage` sees only unnamed frames).
            for (const type of ["session.next.prompted", "session.next.step.started", "session.next.step.ended"]) {
              source.addEventListener(type, () => {
                seen.push(type)
                if (type === "session.next.step.ended") {
                  source.close()
                  resolve(seen)
                }
              })
            }
            source.onopen = () => void client.sessions.prompt({ sessionID: session.id, prompt: { text: "hi" } })
          })
          return { withoutToken, forged, types }
        })
        expect(result.withoutToken).toBe(false)
        expect(result.forged).toBe(false)
        expect(result.types).toEqual(["session.next.prompted", "session.next.step.started", "session.next.step.ended"])
      }),
    120_000
  )
})

describe("stream tokens", () => {
  it.scoped("open only the event streams: any other route still needs the credentials", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer({ OPENCODE_SERVER_PASSWORD: password })
      const call = (route: string, init: RequestInit = {}) =>
        Effect.promise(() => fetch(`${url}${route}`, init).then((response) => response.status))
      expect(yield* call("/api/event/token", { method: "POST" })).toBe(401)
      const { token } = yield* Effect.promise(() =>
        fetch(`${url}/api/event/token`, { method: "POST", headers: { authorization } }).then((r) => r.json())
      )
      expect(yield* call(`/api/session?token=${encodeURIComponent(token)}`)).toBe(401)
      expect(yield* call(`/api/event/token?token=${encodeURIComponent(token)}`, { method: "POST" })).toBe(401)
      const stream = yield* Effect.promise(async () => {
        const controller = new AbortController()
        const response = await fetch(`${url}/api/event?token=${encodeURIComponent(token)}`, {
          signal: controller.signal
        })
        controller.abort()
        return response.status
      })
      expect(stream).toBe(200)
      // Tampering with the expiry invalidates the signature.
      const [expiry, mac] = token.split(".")
      const later = `${(Number.parseInt(expiry, 36) + 3_600_000).toString(36)}.${mac}`
      expect(yield* call(`/api/event?token=${encodeURIComponent(later)}`)).toBe(401)
    })
  )
})
