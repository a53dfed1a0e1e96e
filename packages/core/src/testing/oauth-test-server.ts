export * as OAuthTestServer from "./oauth-test-server.js"

/**
 * A real OAuth 2.0 authorization server on 127.0.0.1 for tests, with one public client:
 * - `GET /authorize`: the authorization code flow with PKCE. It requires `response_type=code`, the
 *   client ID, a `redirect_uri`, a `code_challenge` with `code_challenge_method=S256` and a `state`,
 *   then redirects (302) to `redirect_uri?code=…&state=…` as if the user had signed in and approved.
 * - `POST /token`:
 *   - `grant_type=authorization_code`: the code must be unused and issued to this client and redirect
 *     URI, and `code_verifier` must hash (SHA-256, base64url) to its challenge; else `invalid_grant`.
 *   - `grant_type=refresh_token`: a current refresh token gets new tokens (the refresh token rotates).
 *   - `grant_type=urn:ietf:params:oauth:grant-type:device_code`: `slow_down` on the first poll when
 *     `slowDownFirst` is set, then `authorization_pending` until {@link OAuthTestServer.approve} (or
 *     `access_denied` after `deny`, `expired_token` after the device code expires).
 * - `POST /device/code`: a device code, a user code and `verification_uri(_complete)`.
 * Access tokens are `at-<n>`, refresh tokens `rt-<n>`; `expiresIn` sets their `expires_in`.
 */

import { createHash, randomBytes } from "node:crypto"
import * as http from "node:http"
import type * as net from "node:net"
import { Effect, type Scope } from "effect"

export interface Options {
  /** The one client's ID; default `test-client`. */
  readonly clientID?: string
  /** `expires_in` of issued access tokens, in seconds; default 3600. */
  readonly expiresIn?: number
  /** `expires_in` of device codes, in seconds; default 600. */
  readonly deviceExpiresIn?: number
  /** `interval` of device codes, in seconds; default 1. */
  readonly interval?: number
  /** Answer the first poll of each device code with `slow_down`. */
  readonly slowDownFirst?: boolean
}

export interface TokenRequest {
  readonly grantType: string
  readonly form: Readonly<Record<string, string>>
  /** The `error` answered, if any. */
  readonly error?: string | undefined
}

export interface OAuthTestServer {
  readonly url: string
  readonly clientID: string
  readonly authorizeURL: string
  readonly tokenURL: string
  readonly deviceAuthorizationURL: string
  /** Approves the device code shown as `userCode`. */
  readonly approve: (userCode: string) => void
  /** Denies it. */
  readonly deny: (userCode: string) => void
  /** Every `/token` request in arrival order. */
  readonly tokenRequests: () => ReadonlyArray<TokenRequest>
  /** Every access token issued, in order. */
  readonly issued: () => ReadonlyArray<string>
}

interface Device {
  readonly deviceCode: string
  readonly userCode: string
  readonly expires: number
  polls: number
  state: "pending" | "approved" | "denied" | "used"
}

/** Starts the server; closed with the scope. */
export const make = (options: Options = {}): Effect.Effect<OAuthTestServer, never, Scope.Scope> =>
  Effect.gen(function* () {
    const clientID = options.clientID ?? "test-client"
    const codes = new Map<string, { challenge: string; redirectURI: string; used: boolean }>()
    const refreshTokens = new Set<string>()
    const devices = new Map<string, Device>()
    const requests: Array<TokenRequest> = []
    const issued: Array<string> = []
    let counter = 0

    const json = (response: http.ServerResponse, status: number, body: unknown) =>
      response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))

    const grant = () => {
      counter += 1
      const access = `at-${counter}-${randomBytes(4).toString("hex")}`
      const refresh = `rt-${counter}-${randomBytes(4).toString("hex")}`
      issued.push(access)
      refreshTokens.add(refresh)
      return {
        access_token: access,
        refresh_token: refresh,
        token_type: "Bearer",
        expires_in: options.expiresIn ?? 3600
      }
    }

    const readForm = (request: http.IncomingMessage) =>
      new Promise<Record<string, string>>((resolve) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () =>
          resolve(Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString("utf8"))))
        )
      })

    const handler = async (request: http.IncomingMessage, response: http.ServerResponse, base: string) => {
      const url = new URL(request.url ?? "/", base)
      if (request.method === "GET" && url.pathname === "/authorize") {
        const p = url.searchParams
        const redirectURI = p.get("redirect_uri")
        if (
          p.get("response_type") !== "code" ||
          p.get("client_id") !== clientID ||
          redirectURI === null ||
          p.get("code_challenge_method") !== "S256" ||
          (p.get("code_challenge") ?? "") === "" ||
          (p.get("state") ?? "") === ""
        ) {
          return json(response, 400, { error: "invalid_request" })
        }
        const code = `code-${randomBytes(8).toString("hex")}`
        codes.set(code, { challenge: p.get("code_challenge")!, redirectURI, used: false })
        const target = new URL(redirectURI)
        target.searchParams.set("code", code)
        target.searchParams.set("state", p.get("state")!)
        return response.writeHead(302, { location: target.toString() }).end()
      }
      if (request.method === "POST" && url.pathname === "/device/code") {
        const form = await readForm(request)
        if (form.client_id !== clientID) return json(response, 400, { error: "invalid_client" })
        const device: Device = {
          deviceCode: `dc-${randomBytes(8).toString("hex")}`,
          userCode: randomBytes(3).toString("hex").toUpperCase(),
          expires: Date.now() + (options.deviceExpiresIn ?? 600) * 1000,
          polls: 0,
          state: "pending"
        }
        devices.set(device.deviceCode, device)
        return json(response, 200, {
          device_code: device.deviceCode,
          user_code: device.userCode,
          verification_uri: `${base}/device`,
          verification_uri_complete: `${base}/device?user_code=${device.userCode}`,
          expires_in: options.deviceExpiresIn ?? 600,
          interval: options.interval ?? 1
        })
      }
      if (request.method === "POST" && url.pathname === "/token") {
        const form = await readForm(request)
        const answer = (status: number, body: Record<string, unknown>) => {
          requests.push({ grantType: form.grant_type ?? "", form, error: body.error as string | undefined })
          return json(response, status, body)
        }
        if (form.client_id !== clientID) return answer(401, { error: "invalid_client" })
        switch (form.grant_type) {
          case "authorization_code": {
            const entry = codes.get(form.code ?? "")
            if (entry === undefined || entry.used || entry.redirectURI !== form.redirect_uri) {
              return answer(400, { error: "invalid_grant", error_description: "unknown, used or misdirected code" })
            }
            const hashed = createHash("sha256")
              .update(form.code_verifier ?? "")
              .digest("base64url")
            if (hashed !== entry.challenge) {
              return answer(400, { error: "invalid_grant", error_description: "PKCE verification failed" })
            }
            entry.used = true
            return answer(200, grant())
          }
          case "refresh_token": {
            if (!refreshTokens.delete(form.refresh_token ?? "")) return answer(400, { error: "invalid_grant" })
            return answer(200, grant())
          }
          case "urn:ietf:params:oauth:grant-type:device_code": {
            const device = devices.get(form.device_code ?? "")
            if (device === undefined || device.state === "used") return answer(400, { error: "invalid_grant" })
            device.polls += 1
            if (Date.now() >= device.expires) return answer(400, { error: "expired_token" })
            if (device.state === "denied") return answer(400, { error: "access_denied" })
            if (options.slowDownFirst === true && device.polls === 1) return answer(400, { error: "slow_down" })
            if (device.state === "pending") return answer(400, { error: "authorization_pending" })
            device.state = "used"
            return answer(200, grant())
          }
          default:
            return answer(400, { error: "unsupported_grant_type" })
        }
      }
      return json(response, 404, { error: "not_found" })
    }

    const server = http.createServer()
    const port = yield* Effect.acquireRelease(
      Effect.async<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as net.AddressInfo).port)))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const base = `http://127.0.0.1:${port}`
    server.on("request", (request, response) => {
      handler(request, response, base).catch(() => json(response, 500, { error: "server_error" }))
    })
    const byUserCode = (userCode: string) => [...devices.values()].find((device) => device.userCode === userCode)
    return {
      url: base,
      clientID,
      authorizeURL: `${base}/authorize`,
      tokenURL: `${base}/token`,
      deviceAuthorizationURL: `${base}/device/code`,
      approve: (userCode) => {
        const device = byUserCode(userCode)
        if (device !== undefined) device.state = "approved"
      },
      deny: (userCode) => {
        const device = byUserCode(userCode)
        if (device !== undefined) device.state = "denied"
      },
      tokenRequests: () => [...requests],
      issued: () => [...issued]
    } satisfies OAuthTestServer
  })
