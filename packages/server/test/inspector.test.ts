import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { createOpencodeClient } from "@opencode-ai/client"
import { Config, type ConfigInfo } from "@opencode-ai/core"
import { LLMScript, ScriptedLLMServer, TestDatabase } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { type Browser, chromium } from "playwright-core"
import { startServer, tempDir } from "./harness.js"

/**
 * The live session inspector that `opencode serve` serves at `/` (packages/inspector, built by the
 * global setup): its files and headers over plain HTTP, the API's guards in front of it, `ui: false`,
 * and a scripted session watched and answered from the page in real headless Chromium. The browser
 * cases are skipped without `/usr/bin/chromium`, except in CI, where they fail instead
 * (`scripts/system-deps.sh` installs it). The browser case saves `artifacts/inspector.png` at the
 * repository root.
 */
const chromiumPath = "/usr/bin/chromium"
const inCI = process.env.CI === "true"
const hasChromium = fs.existsSync(chromiumPath)
const artifacts = path.resolve(__dirname, "../../../artifacts")
const bin = path.resolve(__dirname, "../dist/bin.js")
const { reply, text, reasoning, toolCall, usage, finish, hold } = LLMScript

const get = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { headers })
    return { status: response.status, headers: response.headers, body: await response.text() }
  })

/** One raw request with exactly these headers (fetch would not let a test set `Host`). */
const raw = (port: number, route: string, headers: Record<string, string>) =>
  Effect.async<{ status: number; body: string }>((resume) => {
    const request = http.request({ host: "127.0.0.1", port, method: "GET", path: route, headers }, (response) => {
      let body = ""
      response.on("data", (chunk) => (body += chunk))
      response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, body })))
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end()
  })

/** The script and stylesheet the page names. */
const assetsOf = (page: string): ReadonlyArray<string> =>
  [...page.matchAll(/(?:src|href)="(\/inspector\/[^"]+)"/g)].map((match) => match[1]!)

describe("the inspector page at /", () => {
  it.scoped("is served with its hashed assets, content types, cache headers and a strict CSP", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const page = yield* get(`${url}/`)
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(page.headers.get("cache-control")).toBe("no-cache")
      expect(page.headers.get("x-content-type-options")).toBe("nosniff")
      expect(page.headers.get("content-security-policy")).toContain("default-src 'none'")
      expect(page.headers.get("content-security-policy")).toContain("connect-src 'self'")
      expect(page.body).toContain("<title>OpenCode inspector</title>")
      // Nothing from anywhere else: every script and stylesheet is the server's own.
      expect(page.body).not.toMatch(/(?:src|href)="(?:https?:)?\/\//)

      const assets = assetsOf(page.body)
      expect(assets.map((asset) => path.extname(asset)).sort()).toEqual([".css", ".js"])
      for (const asset of assets) {
        const response = yield* get(`${url}${asset}`)
        expect(response.status, asset).toBe(200)
        expect(response.headers.get("content-type"), asset).toBe(
          asset.endsWith(".js") ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8"
        )
        expect(response.headers.get("cache-control"), asset).toBe("public, max-age=31536000, immutable")
        expect(response.body.length, asset).toBeGreaterThan(100)
      }

      for (const route of [
        "/inspector/app-NOPE.js",
        "/inspector/tool-output/tool_000000000000AAAAAAAAAAAAAA",
        "/inspector/tool-output/..%2Fopencode.db"
      ]) {
        const missing = yield* get(`${url}${route}`)
        expect(missing.status, route).toBe(404)
        expect(JSON.parse(missing.body), route).toMatchObject({ _tag: "RouteNotFoundError", method: "GET" })
      }
    })
  )

  it.scoped("is off with ui: false: / and its assets are the API's tagged 404", () =>
    Effect.gen(function* () {
      const on = yield* startServer()
      const assets = assetsOf((yield* get(`${on.url}/`)).body)
      const { url } = yield* startServer({}, { ui: false })
      for (const route of ["/", ...assets]) {
        const response = yield* get(`${url}${route}`)
        expect(response.status, route).toBe(404)
        expect(response.headers.get("content-type"), route).toMatch(/^application\/json/)
        expect(JSON.parse(response.body), route).toEqual({
          _tag: "RouteNotFoundError",
          method: "GET",
          path: route,
          message: `No route for GET ${route}`
        })
      }
    })
  )

  it.scoped("is guarded like the API: a foreign Origin or Host is refused, a password is asked for", () =>
    Effect.gen(function* () {
      const { url, port } = yield* startServer({ OPENCODE_SERVER_PASSWORD: "inspector-secret" })
      const authorization = `Basic ${Buffer.from("opencode:inspector-secret").toString("base64")}`
      const page = yield* get(`${url}/`, { authorization })
      expect(page.status).toBe(200)
      for (const route of ["/", ...assetsOf(page.body)]) {
        const foreignOrigin = yield* get(`${url}${route}`, { authorization, origin: "http://evil.example" })
        expect(foreignOrigin.status, route).toBe(403)
        expect(JSON.parse(foreignOrigin.body), route).toMatchObject({ _tag: "ForbiddenOriginError" })
        const foreignHost = yield* raw(port, route, { authorization, host: `evil.example:${port}` })
        expect(foreignHost.status, route).toBe(403)
        expect(JSON.parse(foreignHost.body), route).toMatchObject({ _tag: "ForbiddenHostError" })
        // The browser's Basic auth prompt: a 401 with the challenge, before anything is served.
        const anonymous = yield* get(`${url}${route}`)
        expect(anonymous.status, route).toBe(401)
        expect(anonymous.headers.get("www-authenticate"), route).toContain("Basic")
        // The server's own origin (a same-origin request from the page) passes.
        expect((yield* get(`${url}${route}`, { authorization, origin: url })).status, route).toBe(200)
      }
    })
  )

  it.scopedLive(
    "is served by the built binary (dist/bin.js finds the inspector's build output)",
    () =>
      Effect.gen(function* () {
        const home = tempDir("inspector-bin")
        const child = yield* Effect.acquireRelease(
          Effect.sync(() =>
            spawn(process.execPath, [bin, "serve", "--port", "0", "--hostname", "127.0.0.1"], {
              env: {
                ...process.env,
                XDG_DATA_HOME: path.join(home, "data"),
                XDG_CONFIG_HOME: path.join(home, "config"),
                XDG_CACHE_HOME: path.join(home, "cache"),
                OPENCODE_DISABLE_MODELS_FETCH: "1",
                ...TestDatabase.serverEnv(path.join(home, "data"))
              },
              cwd: home,
              stdio: ["ignore", "pipe", "pipe"]
            })
          ),
          (child) => Effect.sync(() => child.kill("SIGTERM"))
        )
        const url = yield* Effect.async<string>((resume) => {
          let out = ""
          child.stdout!.on("data", (chunk) => {
            out += chunk
            const found = /listening on (http:\/\/\S+)/.exec(out)
            if (found !== null) resume(Effect.succeed(found[1]!))
          })
        })
        const page = yield* get(`${url}/`)
        expect(page.status).toBe(200)
        expect(page.body).toContain("<title>OpenCode inspector</title>")
        for (const asset of assetsOf(page.body)) expect((yield* get(`${url}${asset}`)).status, asset).toBe(200)
      }),
    60_000
  )

  describe.skipIf(!hasChromium && !inCI)("in headless Chromium", () => {
    let browser: Browser | undefined
    beforeAll(async () => {
      if (!hasChromium) throw new Error(`${chromiumPath} is missing: CI must install Chromium (scripts/system-deps.sh)`)
      browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] })
    })
    afterAll(async () => {
      await browser?.close()
    })

    it.scopedLive(
      "watches a scripted session stream in and answers its permission from the page, by keyboard",
      () =>
        Effect.gen(function* () {
          const llm = yield* ScriptedLLMServer.make()
          const gate = LLMScript.gate()
          yield* llm.enqueue(
            reply(
              text("Counting the lines ", "for you"),
              hold(gate),
              text(" now."),
              toolCall("call_1", "bash", { command: "seq 1 3000", description: "Count to 3000" }),
              usage({ input: 1200, output: 40 }),
              finish("tool-calls")
            ),
            reply(
              reasoning("The count has finished."),
              text("All 3000 lines are counted."),
              usage({ input: 2400, output: 12, reasoning: 8 }),
              finish("stop")
            )
          )
          yield* llm.enqueueTitle(reply(text("Counting to three thousand"), finish("stop")))
          const { url } = yield* startServer(
            {},
            {
              config: Config.layerTest({
                ...ScriptedLLMServer.config(llm.url),
                agent: { build: { permission: { bash: "ask" } } }
              } as ConfigInfo.Info)
            }
          )
          const client = createOpencodeClient({ baseUrl: url })
          const page = yield* Effect.acquireRelease(
            Effect.promise(() => browser!.newPage({ viewport: { width: 1400, height: 1000 } })),
            (page) => Effect.promise(() => page.close())
          )
          const requested: Array<string> = []
          page.on("request", (request) => requested.push(request.url()))
          const errors: Array<string> = []
          page.on("pageerror", (error) => errors.push(error.message))

          yield* Effect.promise(async () => {
            await page.goto(`${url}/`)
            await page.getByRole("status").getByText("Live").waitFor()
          })
          // Landmarks and their names.
          yield* Effect.promise(async () => {
            await page.getByRole("navigation", { name: "Sessions" }).waitFor()
            await page.getByRole("main", { name: "No session selected" }).waitFor()
            await page.getByRole("complementary", { name: "Steps" }).waitFor()
          })

          // A session made through the API appears in the list, live, and opens by itself (none was chosen).
          const session = yield* Effect.promise(() => client.sessions.create({}))
          const entry = page.locator(`[data-session="${session.id}"]`)
          yield* Effect.promise(async () => {
            await entry.getByText("idle").waitFor()
            await page.getByRole("main", { name: session.title }).waitFor()
            expect(await entry.getAttribute("aria-current")).toBe("page")
          })
          const transcript = page.locator("#transcript")
          expect(yield* Effect.promise(() => transcript.getAttribute("aria-live"))).toBe("polite")

          yield* Effect.promise(() =>
            client.sessions.prompt({ sessionID: session.id, prompt: { text: "count to 3000" } })
          )
          yield* gate.reached
          // Held mid-stream: the text so far is on the page already (deltas), the rest is not.
          yield* Effect.promise(async () => {
            await transcript.getByText("Counting the lines for you", { exact: true }).waitFor()
            await entry.getByText("running").waitFor()
            await page.locator("#timeline .step").first().getByText("running").waitFor()
          })
          yield* gate.release

          // The permission card: labelled controls, reachable and operable by keyboard.
          const group = page.getByRole("group", { name: "Reply to the bash permission" })
          const once = group.getByRole("button", { name: "Allow once" })
          yield* Effect.promise(async () => {
            await once.waitFor()
            await page.getByRole("article", { name: "Permission: bash" }).getByText("seq 1 3000").waitFor()
            await transcript.getByText("Counting the lines for you now.", { exact: true }).waitFor()
            await entry.getByText("1 waiting for a reply").waitFor()
          })
          const focused = () => page.evaluate(() => document.activeElement?.textContent ?? null)
          yield* Effect.promise(() => once.focus())
          expect(yield* Effect.promise(focused)).toBe("Allow once")
          yield* Effect.promise(() => page.keyboard.press("Tab"))
          expect(yield* Effect.promise(focused)).toBe("Always allow")
          yield* Effect.promise(() => page.keyboard.press("Tab"))
          expect(yield* Effect.promise(focused)).toBe("Reject")
          yield* Effect.promise(() => page.keyboard.press("Shift+Tab"))
          yield* Effect.promise(() => page.keyboard.press("Shift+Tab"))
          expect(yield* Effect.promise(focused)).toBe("Allow once")
          yield* Effect.promise(() => page.keyboard.press("Enter"))

          // The tool ran: its bounded output, and the link to the complete output in its managed file.
          const tool = transcript.locator(".entry.tool")
          yield* Effect.promise(async () => {
            await group.waitFor({ state: "detached" })
            await tool.getByText("done", { exact: true }).waitFor()
            await transcript.getByText("All 3000 lines are counted.", { exact: true }).waitFor()
            await entry.getByText("idle").waitFor()
          })
          const output = yield* Effect.promise(() => tool.getByLabel("Output", { exact: true }).textContent())
          expect(output).toMatch(/^1\n2\n3\n/)
          expect(output).toContain("\n2999\n3000\n")
          expect(output!.split("\n").length).toBeLessThan(3000)
          const link = tool.getByRole("link", { name: "Complete output" })
          const complete = yield* Effect.promise(async () => {
            const href = await link.getAttribute("href")
            return page.evaluate(async (href) => {
              const response = await fetch(href!)
              return {
                status: response.status,
                type: response.headers.get("content-type"),
                body: await response.text()
              }
            }, href)
          })
          expect(complete.status).toBe(200)
          expect(complete.type).toBe("text/plain; charset=utf-8")
          // The complete text: every line the command printed, which the preview left out.
          expect(complete.body.split("\n").slice(0, 3000)).toEqual(
            Array.from({ length: 3000 }, (_, i) => String(i + 1))
          )

          // The reply reached the server as "once"; nothing is pending.
          expect(yield* Effect.promise(() => client.permissions.list({ sessionID: session.id }))).toEqual([])
          const history = yield* Effect.promise(() => client.sessions.history({ sessionID: session.id }))
          expect(history.data.find((e) => e.type === "session.next.tool.success")).toBeDefined()

          // Reasoning is folded; the timeline has both Steps with durations.
          const reasoningBlock = transcript.locator("details", { hasText: "Reasoning" })
          expect(yield* Effect.promise(() => reasoningBlock.getAttribute("open"))).toBeNull()
          expect(yield* Effect.promise(() => reasoningBlock.locator("pre").textContent())).toBe(
            "The count has finished."
          )
          const steps = page.locator("#timeline .step")
          yield* Effect.promise(() => steps.nth(1).locator(".duration").waitFor())
          expect(yield* Effect.promise(() => steps.count())).toBe(2)
          for (const duration of yield* Effect.promise(() => steps.locator(".duration").allTextContents())) {
            expect(duration).toMatch(/^\d+(\.\d)? (ms|s)$|^\d+ min \d+ s$/)
          }
          expect(yield* Effect.promise(() => steps.nth(0).textContent())).toContain("tool-calls")
          expect(yield* Effect.promise(() => steps.nth(1).textContent())).toContain("stop")
          // The session's title and tokens, once recorded, in the list.
          yield* Effect.promise(async () => {
            await entry.getByText("Counting to three thousand").waitFor()
            await entry.getByText("$0.00 · 3,600 in · 52 out · 8 reasoning tokens").waitFor()
          })

          yield* Effect.promise(async () => {
            fs.mkdirSync(artifacts, { recursive: true })
            await page.screenshot({ path: path.join(artifacts, "inspector.png"), fullPage: true })
          })
          expect(errors).toEqual([])
          expect(requested.filter((address) => !address.startsWith(url))).toEqual([])
        }),
      120_000
    )

    it.scopedLive("behind a password, works with the credentials the browser was given once", () =>
      Effect.gen(function* () {
        const { url } = yield* startServer({ OPENCODE_SERVER_PASSWORD: "inspector-secret" })
        const context = yield* Effect.acquireRelease(
          Effect.promise(() =>
            browser!.newContext({ httpCredentials: { username: "opencode", password: "inspector-secret" } })
          ),
          (context) => Effect.promise(() => context.close())
        )
        const page = yield* Effect.promise(() => context.newPage())
        const session = yield* Effect.promise(() =>
          createOpencodeClient({
            baseUrl: url,
            headers: { authorization: `Basic ${Buffer.from("opencode:inspector-secret").toString("base64")}` }
          }).sessions.create({})
        )
        yield* Effect.promise(async () => {
          await page.goto(`${url}/`)
          // The event stream and the list calls all passed auth.
          await page.getByRole("status").getByText("Live").waitFor()
          const entry = page.getByRole("link", {
            name: new RegExp(session.title.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
          })
          await entry.getByText("idle").waitFor()
          // Chosen with the keyboard: the session opens and focus moves to it.
          await entry.focus()
          await page.keyboard.press("Enter")
          await page.getByRole("main", { name: session.title }).waitFor()
          expect(await page.evaluate(() => document.activeElement?.id)).toBe("main")
        })
      })
    )

    it.scopedLive(
      "answers a question from the page: options as labelled radio buttons, sent with the keyboard",
      () =>
        Effect.gen(function* () {
          const llm = yield* ScriptedLLMServer.make()
          yield* llm.enqueue(
            reply(
              toolCall("call_q", "question", {
                questions: [
                  {
                    question: "Which colour should the button be?",
                    header: "Colour",
                    options: [
                      { label: "Red", description: "warm" },
                      { label: "Blue", description: "cool" }
                    ]
                  }
                ]
              }),
              finish("tool-calls")
            ),
            reply(text("Blue it is."), finish("stop")),
            // The summary of the compaction asked for below.
            reply(text("The user picked blue for the button."), finish("stop"))
          )
          yield* llm.enqueueTitle(reply(text("Button colour"), finish("stop")))
          const { url } = yield* startServer(
            {},
            {
              config: Config.layerTest({
                ...ScriptedLLMServer.config(llm.url),
                agent: { build: { permission: { question: "allow" } } }
              } as ConfigInfo.Info)
            }
          )
          const client = createOpencodeClient({ baseUrl: url })
          const session = yield* Effect.promise(() => client.sessions.create({}))
          const page = yield* Effect.acquireRelease(
            Effect.promise(() => browser!.newPage()),
            (page) => Effect.promise(() => page.close())
          )
          // Opened straight on the session by its address.
          yield* Effect.promise(async () => {
            await page.goto(`${url}/#session=${encodeURIComponent(session.id)}`)
            await page.getByRole("status").getByText("Live").waitFor()
          })
          yield* Effect.promise(() =>
            client.sessions.prompt({ sessionID: session.id, prompt: { text: "pick a colour" } })
          )
          const card = page.getByRole("article", { name: "Question" })
          const group = card.getByRole("group", { name: "Colour: Which colour should the button be?" })
          yield* Effect.promise(async () => {
            await group.waitFor()
            await group.getByLabel("Red").waitFor()
            await group.getByLabel("Your own answer").waitFor()
            await group.getByLabel("Blue").focus()
            await page.keyboard.press("Space")
            expect(await group.getByLabel("Blue").isChecked()).toBe(true)
          })
          // An instruction entry set while the session waits: the Step after the answer tells the
          // model, and the transcript marks the update.
          yield* Effect.promise(() =>
            client.instructions.put({ sessionID: session.id, key: "style", value: "Prefer calm colours." })
          )
          yield* Effect.promise(async () => {
            await card.getByRole("button", { name: "Send answers" }).focus()
            await page.keyboard.press("Enter")
            await card.waitFor({ state: "detached" })
            await page.locator("#transcript").getByText("Blue it is.", { exact: true }).waitFor()
          })
          const transcript = page.locator("#transcript")
          const instructions = transcript.locator("details", { hasText: "Instructions updated" })
          yield* Effect.promise(() => instructions.waitFor())
          expect(yield* Effect.promise(() => instructions.locator("pre").textContent())).toContain(
            "Prefer calm colours."
          )
          // A compaction is marked, its summary folded.
          yield* Effect.promise(() => client.sessions.wait({ sessionID: session.id }))
          yield* Effect.promise(() => client.sessions.compact({ sessionID: session.id }))
          yield* Effect.promise(async () => {
            await transcript.getByText("Compaction started (manual)").waitFor()
            await transcript
              .locator("details", { hasText: "Compacted (manual)" })
              .getByText("The user picked blue for the button.")
              .waitFor({ state: "attached" })
          })
          const history = yield* Effect.promise(() => client.sessions.history({ sessionID: session.id }))
          const answered = history.data.find((e) => e.type === "session.next.tool.success")
          expect(answered?.type === "session.next.tool.success" && answered.data.structured).toEqual({
            answers: [["Blue"]]
          })
        }),
      120_000
    )
  })
})
