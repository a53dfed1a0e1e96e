import * as fs from "node:fs"
import * as path from "node:path"
import { HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { LLMScript, OAuthTestServer, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect, Layer, Logger, LogLevel, Schedule } from "effect"
import { Serve } from "../src/serve.js"
import { call, configHome, tempDir } from "./harness.js"

/**
 * Credentials and integrations (issue 15, item 4) over real HTTP: `auth.json` in the data directory
 * (mode 0600, written atomically, never logged, never answered), the integrations derived from the
 * catalog, a key connected at run time offered by `/api/provider` and carried to a loopback LLM, and
 * the OAuth attempts (PKCE code flow with a loopback redirect or a pasted code, device flow, expiry,
 * cancel) against a real loopback OAuth server.
 */

const secret = "sk-loopy-7c1f2e9d4b3a"

/** A model database (the cache file a server reads at start) with one provider, `loopy`, at `baseURL`. */
const modelsCache = (baseURL: string) => {
  const home = tempDir("cache")
  fs.mkdirSync(path.join(home, "opencode"))
  fs.writeFileSync(
    path.join(home, "opencode", "models.json"),
    JSON.stringify({
      loopy: {
        id: "loopy",
        name: "Loopy",
        npm: "@ai-sdk/openai-compatible",
        api: baseURL,
        env: ["LOOPY_API_KEY"],
        models: {
          "loop-1": { id: "loop-1", name: "Loop One", tool_call: true, limit: { context: 100000, output: 4096 } }
        }
      }
    })
  )
  return home
}

/**
 * The real listener on 127.0.0.1 (as `startServer`), over the data home `dataHome` (default: a fresh
 * one), with every log line the server writes, at every level, captured in `logs` (each request fiber
 * inherits the logger the server was built with).
 */
const start = (env: Record<string, string>, dataHome = tempDir("data")) =>
  Effect.gen(function* () {
    const logs: Array<string> = []
    const capture = Logger.replace(
      Logger.defaultLogger,
      Logger.make((entry) => void logs.push(Logger.logfmtLogger.log(entry)))
    )
    const context = yield* Layer.build(
      Serve.layer({
        port: 0,
        hostname: "127.0.0.1",
        printLogs: true,
        logLevel: LogLevel.All,
        directory: tempDir("project"),
        env: {
          XDG_DATA_HOME: dataHome,
          XDG_CACHE_HOME: tempDir("cache"),
          XDG_CONFIG_HOME: tempDir("config"),
          OPENCODE_DISABLE_MODELS_FETCH: "1",
          ...env
        }
      })
    ).pipe(Effect.provide(capture), Logger.withMinimumLogLevel(LogLevel.All), Effect.orDie)
    const server = yield* HttpServer.HttpServer.pipe(Effect.provide(context))
    if (server.address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    return {
      url: `http://127.0.0.1:${server.address.port}`,
      authFile: path.join(dataHome, "opencode", "auth.json"),
      logs: () => logs.join("\n")
    }
  })

/** Runs `effect` every 50 ms until `done` holds for its value; that value. */
const poll = <A>(effect: Effect.Effect<A>, done: (value: A) => boolean) =>
  effect.pipe(
    Effect.filterOrFail(done, () => "not yet" as const),
    Effect.retry(Schedule.spaced("50 millis")),
    Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("the condition never held") }),
    Effect.orDie
  )

const attemptStatus = (url: string, attemptID: string) =>
  Effect.map(call(`${url}/api/integration/attempt/${attemptID}`, "GET"), (response) => response.body)

const mode = (file: string) => fs.statSync(file).mode & 0o777

/** Prompts a new session and returns the LLM's `n`-th request. */
const prompt = (url: string, llm: ScriptedLLMServer.ScriptedLLMServer, n: number) =>
  Effect.gen(function* () {
    const session = (yield* call(`${url}/api/session`, "POST", { model: { providerID: "loopy", id: "loop-1" } })).body
      .data
    yield* llm.enqueue(LLMScript.reply(LLMScript.text("hello"), LLMScript.finish("stop")))
    expect((yield* call(`${url}/api/session/${session.id}/prompt`, "POST", { prompt: { text: "hi" } })).status).toBe(
      200
    )
    expect((yield* call(`${url}/api/session/${session.id}/wait`, "POST")).status).toBeLessThan(300)
    return yield* llm.awaitRequest(n)
  })

describe("credentials and integrations over HTTP", () => {
  it.scopedLive(
    "a provider connected by key appears in the catalog, its requests carry the key, and the key is kept private",
    () =>
      Effect.gen(function* () {
        const llm = yield* ScriptedLLMServer.make()
        const dataHome = tempDir("data")
        // An upstream-written auth.json with a loose mode: narrowed at start, its entry kept.
        fs.mkdirSync(path.join(dataHome, "opencode"))
        const authFile = path.join(dataHome, "opencode", "auth.json")
        fs.writeFileSync(authFile, JSON.stringify({ other: { type: "api", key: "sk-other" } }), { mode: 0o644 })
        fs.chmodSync(authFile, 0o644)
        const server = yield* start({ XDG_CACHE_HOME: modelsCache(llm.url) }, dataHome)
        const { url } = server
        expect(mode(authFile)).toBe(0o600)

        // Before: loopy is connectable but not offered.
        const before = yield* call(`${url}/api/integration/loopy`, "GET")
        expect(before.status).toBe(200)
        expect(before.body.data).toEqual({
          id: "loopy",
          name: "Loopy",
          methods: [
            { type: "key", label: "API key" },
            { type: "env", names: ["LOOPY_API_KEY"] }
          ],
          connections: []
        })
        expect((yield* call(`${url}/api/provider/loopy`, "GET")).status).toBe(404)
        const list = (yield* call(`${url}/api/integration`, "GET")).body
        expect(list.location.directory).toBeDefined()
        expect(list.data.map((item: any) => item.id)).toEqual(["loopy"])

        const old = fs.statSync(authFile).ino
        const oldHandle = fs.openSync(authFile, "r")
        const connected = yield* call(`${url}/api/integration/loopy/connect/key`, "POST", { key: secret })
        expect(connected).toEqual({ status: 204, body: undefined })

        // Written atomically: a new file renamed over the old one (which is untouched), mode 0600,
        // no temporary file left; the other provider's entry kept.
        expect(fs.statSync(authFile).ino).not.toBe(old)
        expect(JSON.parse(fs.readFileSync(oldHandle, "utf8"))).toEqual({ other: { type: "api", key: "sk-other" } })
        fs.closeSync(oldHandle)
        expect(mode(authFile)).toBe(0o600)
        expect(fs.readdirSync(path.dirname(authFile)).filter((name) => name.startsWith("auth.json"))).toEqual([
          "auth.json"
        ])
        expect(JSON.parse(fs.readFileSync(authFile, "utf8"))).toEqual({
          other: { type: "api", key: "sk-other" },
          loopy: { type: "api", key: secret }
        })

        // After: offered, with its models, at once.
        const provider = yield* call(`${url}/api/provider/loopy`, "GET")
        expect(provider.status).toBe(200)
        expect(provider.body.data).toMatchObject({ id: "loopy", name: "Loopy" })
        expect(provider.body.data.disabled).toBeUndefined()
        const providers = (yield* call(`${url}/api/provider`, "GET")).body.data as Array<any>
        expect(providers.map((item) => item.id)).toContain("loopy")
        const models = (yield* call(`${url}/api/model`, "GET")).body.data as Array<any>
        expect(
          models.filter((model) => model.providerID === "loopy").map((model) => [model.id, model.enabled])
        ).toEqual([["loop-1", true]])
        const integration = (yield* call(`${url}/api/integration/loopy`, "GET")).body.data
        expect(integration.connections).toEqual([{ type: "credential", id: "loopy", label: "API key" }])

        // The adapter uses the stored key.
        const request = yield* prompt(url, llm, 1)
        expect(request.headers.authorization).toBe(`Bearer ${secret}`)

        // Never answered, never logged.
        const answers = JSON.stringify([
          before.body,
          list,
          provider.body,
          providers,
          models,
          integration,
          (yield* call(`${url}/api/integration`, "GET")).body
        ])
        expect(answers).not.toContain(secret)
        expect(server.logs().length).toBeGreaterThan(0)
        expect(server.logs()).not.toContain(secret)
      })
  )

  it.scopedLive(
    "update renames a credential, remove deletes it and the provider leaves the catalog; bad requests are 400",
    () =>
      Effect.gen(function* () {
        const llm = yield* ScriptedLLMServer.make()
        const { url, authFile, logs } = yield* start({ XDG_CACHE_HOME: modelsCache(llm.url) })
        const invalid = (response: { status: number; body: any }) => {
          expect(response.status).toBe(400)
          expect(response.body._tag).toBe("InvalidRequestError")
        }
        invalid(yield* call(`${url}/api/integration/nope`, "GET"))
        invalid(yield* call(`${url}/api/integration/nope/connect/key`, "POST", { key: "k" }))
        invalid(yield* call(`${url}/api/integration/loopy/connect/key`, "POST", { key: "" }))
        // A refused body does not echo the key.
        const refused = yield* call(`${url}/api/integration/loopy/connect/key`, "POST", { key: secret, extra: 1 })
        invalid(refused)
        expect(JSON.stringify(refused.body)).not.toContain(secret)
        invalid(yield* call(`${url}/api/integration/loopy/connect/oauth`, "POST", { methodID: "x", inputs: {} }))
        invalid(yield* call(`${url}/api/credential/loopy`, "PATCH", { label: "work" }))
        invalid(yield* call(`${url}/api/credential/loopy`, "DELETE"))
        expect(fs.existsSync(authFile)).toBe(false)

        expect(
          (yield* call(`${url}/api/integration/loopy/connect/key`, "POST", { key: secret, label: "personal" })).status
        ).toBe(204)
        expect((yield* call(`${url}/api/integration/loopy`, "GET")).body.data.connections).toEqual([
          { type: "credential", id: "loopy", label: "personal" }
        ])
        expect((yield* call(`${url}/api/credential/loopy`, "PATCH", { label: "work" })).status).toBe(204)
        invalid(yield* call(`${url}/api/credential/loopy`, "PATCH", { label: " " }))
        expect((yield* call(`${url}/api/integration/loopy`, "GET")).body.data.connections).toEqual([
          { type: "credential", id: "loopy", label: "work" }
        ])
        expect(JSON.parse(fs.readFileSync(authFile, "utf8"))).toEqual({
          loopy: { type: "api", key: secret, label: "work" }
        })
        expect((yield* call(`${url}/api/provider/loopy`, "GET")).status).toBe(200)

        expect((yield* call(`${url}/api/credential/loopy`, "DELETE")).status).toBe(204)
        expect(JSON.parse(fs.readFileSync(authFile, "utf8"))).toEqual({})
        expect((yield* call(`${url}/api/provider/loopy`, "GET")).status).toBe(404)
        const models = (yield* call(`${url}/api/model`, "GET")).body.data as Array<any>
        expect(models.filter((model) => model.providerID === "loopy")).toEqual([])
        expect((yield* call(`${url}/api/integration/loopy`, "GET")).body.data.connections).toEqual([])
        invalid(yield* call(`${url}/api/credential/loopy`, "DELETE"))
        expect(logs()).not.toContain(secret)
      })
  )

  it.scopedLive("a provider that still has an environment key stays offered after its credential is removed", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const { url } = yield* start({ XDG_CACHE_HOME: modelsCache(llm.url), LOOPY_API_KEY: "sk-env" })
      expect((yield* call(`${url}/api/integration/loopy`, "GET")).body.data.connections).toEqual([
        { type: "env", name: "LOOPY_API_KEY" }
      ])
      expect((yield* call(`${url}/api/integration/loopy/connect/key`, "POST", { key: secret })).status).toBe(204)
      // The stored credential wins over the environment.
      expect((yield* prompt(url, llm, 1)).headers.authorization).toBe(`Bearer ${secret}`)
      expect((yield* call(`${url}/api/credential/loopy`, "DELETE")).status).toBe(204)
      expect((yield* call(`${url}/api/provider/loopy`, "GET")).status).toBe(200)
      expect((yield* prompt(url, llm, 2)).headers.authorization).toBe("Bearer sk-env")
    })
  )
})

/** A config declaring OAuth methods for `loopy` against `oauth`. */
const oauthConfig = (oauth: OAuthTestServer.OAuthTestServer, extra: Record<string, unknown> = {}) =>
  configHome({
    provider: {
      loopy: {
        oauth: [
          {
            id: "browser",
            label: "Sign in with a browser",
            flow: "code",
            clientID: oauth.clientID,
            authorizeURL: oauth.authorizeURL,
            tokenURL: oauth.tokenURL,
            scopes: ["models"],
            ...extra
          },
          {
            id: "paste",
            label: "Sign in and paste a code",
            flow: "code",
            redirect: "paste",
            redirectURI: "http://127.0.0.1:9/never-contacted",
            clientID: oauth.clientID,
            authorizeURL: oauth.authorizeURL,
            tokenURL: oauth.tokenURL,
            ...extra
          },
          {
            id: "device",
            label: "Sign in on another device",
            flow: "device",
            clientID: oauth.clientID,
            deviceAuthorizationURL: oauth.deviceAuthorizationURL,
            tokenURL: oauth.tokenURL,
            ...extra
          }
        ]
      }
    }
  })

/** Follows an authorize URL as a browser would, without following the redirect: the redirect target. */
const authorize = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url, { redirect: "manual" })
    expect(response.status).toBe(302)
    return new URL(response.headers.get("location")!)
  })

const startOAuth = (url: string, methodID: string) =>
  Effect.map(call(`${url}/api/integration/loopy/connect/oauth`, "POST", { methodID, inputs: {} }), (response) => {
    expect(response.status).toBe(200)
    return response.body.data as {
      attemptID: string
      url: string
      instructions: string
      mode: string
      time: { created: number; expires: number }
    }
  })

describe("OAuth attempts against a loopback OAuth server", () => {
  it.scopedLive(
    "code flow with PKCE and a loopback redirect: the browser's redirect completes it, the tokens are stored and refreshed when used",
    () =>
      Effect.gen(function* () {
        const llm = yield* ScriptedLLMServer.make()
        // Tokens that expire within the refresh margin: every use refreshes first.
        const oauth = yield* OAuthTestServer.make({ expiresIn: 30 })
        const server = yield* start({ XDG_CACHE_HOME: modelsCache(llm.url), XDG_CONFIG_HOME: oauthConfig(oauth) })
        const { url, authFile } = server
        const methods = (yield* call(`${url}/api/integration/loopy`, "GET")).body.data.methods
        expect(methods).toEqual([
          { type: "oauth", id: "browser", label: "Sign in with a browser" },
          { type: "oauth", id: "paste", label: "Sign in and paste a code" },
          { type: "oauth", id: "device", label: "Sign in on another device" },
          { type: "key", label: "API key" },
          { type: "env", names: ["LOOPY_API_KEY"] }
        ])

        const attempt = yield* startOAuth(url, "browser")
        expect(attempt.mode).toBe("auto")
        expect(attempt.time.expires).toBeGreaterThan(attempt.time.created)
        const authorizeURL = new URL(attempt.url)
        expect(authorizeURL.origin + authorizeURL.pathname).toBe(oauth.authorizeURL)
        expect(authorizeURL.searchParams.get("code_challenge_method")).toBe("S256")
        expect(authorizeURL.searchParams.get("scope")).toBe("models")
        expect((yield* attemptStatus(url, attempt.attemptID)).data.status).toBe("pending")

        // The browser: the authorization server redirects to the loopback listener.
        const redirect = yield* authorize(attempt.url)
        expect(redirect.hostname).toBe("127.0.0.1")
        // A forged redirect (wrong state) is refused and does not end the attempt.
        const forged = new URL(redirect)
        forged.searchParams.set("state", "forged")
        expect((yield* Effect.promise(() => fetch(forged))).status).toBe(400)
        expect((yield* attemptStatus(url, attempt.attemptID)).data.status).toBe("pending")
        const landed = yield* Effect.promise(() => fetch(redirect))
        expect(landed.status).toBe(200)
        const status = yield* poll(attemptStatus(url, attempt.attemptID), (body) => body.data.status !== "pending")
        expect(status.data).toEqual({ status: "complete", time: attempt.time })

        const stored = JSON.parse(fs.readFileSync(authFile, "utf8")).loopy
        expect(stored).toMatchObject({ type: "oauth", access: oauth.issued()[0], method: "browser" })
        expect(mode(authFile)).toBe(0o600)
        expect((yield* call(`${url}/api/integration/loopy`, "GET")).body.data.connections).toEqual([
          { type: "credential", id: "loopy", label: "OAuth" }
        ])
        expect((yield* call(`${url}/api/provider/loopy`, "GET")).status).toBe(200)

        // Used: the access token expires within the margin, so it is refreshed first.
        const request = yield* prompt(url, llm, 1)
        expect(oauth.tokenRequests().map((item) => item.grantType)).toEqual(["authorization_code", "refresh_token"])
        expect(request.headers.authorization).toBe(`Bearer ${oauth.issued()[1]}`)
        expect(JSON.parse(fs.readFileSync(authFile, "utf8")).loopy.access).toBe(oauth.issued()[1])
        // The listener closed with the attempt.
        expect(
          yield* Effect.promise(() =>
            fetch(redirect).then(
              () => "answered",
              () => "closed"
            )
          )
        ).toBe("closed")
        for (const token of oauth.issued()) expect(server.logs()).not.toContain(token)
      })
  )

  it.scopedLive(
    "code flow with a pasted code: complete exchanges it; a code issued for another verifier fails PKCE",
    () =>
      Effect.gen(function* () {
        const oauth = yield* OAuthTestServer.make()
        const { url, authFile } = yield* start({
          XDG_CACHE_HOME: modelsCache("http://127.0.0.1:9/v1"),
          XDG_CONFIG_HOME: oauthConfig(oauth)
        })
        const first = yield* startOAuth(url, "paste")
        const second = yield* startOAuth(url, "paste")
        expect(first.mode).toBe("code")
        const secondCode = (yield* authorize(second.url)).searchParams.get("code")!

        // No code, then the other attempt's code (its PKCE challenge does not match this verifier).
        const missing = yield* call(`${url}/api/integration/attempt/${first.attemptID}/complete`, "POST", {})
        expect(missing.status).toBe(400)
        const wrong = yield* call(`${url}/api/integration/attempt/${first.attemptID}/complete`, "POST", {
          code: secondCode
        })
        expect(wrong.status).toBe(400)
        expect(wrong.body).toMatchObject({ _tag: "InvalidRequestError", field: "code" })
        expect(wrong.body.message).toContain("PKCE verification failed")
        const failed = (yield* attemptStatus(url, first.attemptID)).data
        expect(failed.status).toBe("failed")
        expect(failed.message).toContain("invalid_grant")
        expect(fs.existsSync(authFile)).toBe(false)

        const done = yield* call(`${url}/api/integration/attempt/${second.attemptID}/complete`, "POST", {
          code: secondCode
        })
        expect(done.status).toBe(204)
        expect((yield* attemptStatus(url, second.attemptID)).data.status).toBe("complete")
        expect(JSON.parse(fs.readFileSync(authFile, "utf8")).loopy).toMatchObject({
          type: "oauth",
          access: oauth.issued()[0]
        })
        // A finished attempt cannot be completed again.
        expect(
          (yield* call(`${url}/api/integration/attempt/${second.attemptID}/complete`, "POST", { code: secondCode }))
            .status
        ).toBe(400)
      })
  )

  it.scopedLive("device flow: slow_down and authorization_pending are polled through until the user approves", () =>
    Effect.gen(function* () {
      const oauth = yield* OAuthTestServer.make({ slowDownFirst: true, interval: 1 })
      const { url, authFile } = yield* start({
        XDG_CACHE_HOME: modelsCache("http://127.0.0.1:9/v1"),
        XDG_CONFIG_HOME: oauthConfig(oauth)
      })
      const attempt = yield* startOAuth(url, "device")
      expect(attempt.mode).toBe("auto")
      expect(attempt.url).toContain(`${oauth.url}/device?user_code=`)
      const userCode = new URL(attempt.url).searchParams.get("user_code")!
      expect(attempt.instructions).toContain(userCode)
      // A device attempt does not take a code.
      expect(
        (yield* call(`${url}/api/integration/attempt/${attempt.attemptID}/complete`, "POST", { code: "x" })).status
      ).toBe(400)

      const errors = () => oauth.tokenRequests().map((item) => item.error)
      yield* poll(Effect.sync(errors), (seen) => seen.includes("authorization_pending"))
      expect((yield* attemptStatus(url, attempt.attemptID)).data.status).toBe("pending")
      oauth.approve(userCode)
      const status = yield* poll(attemptStatus(url, attempt.attemptID), (body) => body.data.status !== "pending")
      expect(status.data.status).toBe("complete")
      expect(errors()[0]).toBe("slow_down")
      expect(errors().at(-1)).toBeUndefined()
      expect(JSON.parse(fs.readFileSync(authFile, "utf8")).loopy).toMatchObject({
        type: "oauth",
        access: oauth.issued()[0],
        method: "device"
      })
    })
  )

  it.scopedLive("attempts expire (listener closed), a denied device attempt fails, and cancel forgets an attempt", () =>
    Effect.gen(function* () {
      const oauth = yield* OAuthTestServer.make({ interval: 1 })
      const { url } = yield* start({
        XDG_CACHE_HOME: modelsCache("http://127.0.0.1:9/v1"),
        XDG_CONFIG_HOME: oauthConfig(oauth, { timeout: 1 })
      })
      const expiring = yield* startOAuth(url, "browser")
      expect(expiring.time.expires - expiring.time.created).toBe(1000)
      const redirect = yield* authorize(expiring.url)
      const expired = yield* poll(attemptStatus(url, expiring.attemptID), (body) => body.data.status !== "pending")
      expect(expired.data).toEqual({ status: "expired", time: expiring.time })
      expect(
        yield* Effect.promise(() =>
          fetch(redirect).then(
            () => "answered",
            () => "closed"
          )
        )
      ).toBe("closed")
      expect(
        (yield* call(`${url}/api/integration/attempt/${expiring.attemptID}/complete`, "POST", { code: "x" })).status
      ).toBe(400)

      const cancelled = yield* startOAuth(url, "browser")
      const cancelRedirect = yield* authorize(cancelled.url)
      expect((yield* call(`${url}/api/integration/attempt/${cancelled.attemptID}`, "DELETE")).status).toBe(204)
      expect((yield* call(`${url}/api/integration/attempt/${cancelled.attemptID}`, "GET")).status).toBe(400)
      expect((yield* call(`${url}/api/integration/attempt/${cancelled.attemptID}`, "DELETE")).status).toBe(400)
      expect(
        yield* Effect.promise(() =>
          fetch(cancelRedirect).then(
            () => "answered",
            () => "closed"
          )
        )
      ).toBe("closed")
      expect((yield* call(`${url}/api/integration/attempt/att_unknown`, "GET")).body._tag).toBe("InvalidRequestError")
    })
  )

  it.scopedLive("a device attempt expires with its device code; one the user denies fails", () =>
    Effect.gen(function* () {
      const oauth = yield* OAuthTestServer.make({ interval: 1, deviceExpiresIn: 1 })
      const { url } = yield* start({
        XDG_CACHE_HOME: modelsCache("http://127.0.0.1:9/v1"),
        XDG_CONFIG_HOME: oauthConfig(oauth)
      })
      const expiring = yield* startOAuth(url, "device")
      expect(expiring.time.expires - expiring.time.created).toBe(1000)
      const expired = yield* poll(attemptStatus(url, expiring.attemptID), (body) => body.data.status !== "pending")
      expect(expired.data.status).toBe("expired")

      const denyServer = yield* OAuthTestServer.make({ interval: 1 })
      const second = yield* start({
        XDG_CACHE_HOME: modelsCache("http://127.0.0.1:9/v1"),
        XDG_CONFIG_HOME: oauthConfig(denyServer)
      })
      const denied = yield* startOAuth(second.url, "device")
      denyServer.deny(new URL(denied.url).searchParams.get("user_code")!)
      const failed = yield* poll(attemptStatus(second.url, denied.attemptID), (body) => body.data.status !== "pending")
      expect(failed.data.status).toBe("failed")
      expect(failed.data.message).toContain("access_denied")
    })
  )
})
