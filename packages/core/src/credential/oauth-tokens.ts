export * as OAuthTokens from "./oauth-tokens.js"

/**
 * The OAuth 2.0 requests the runtime makes to a provider's authorization server: the PKCE pair
 * (RFC 7636, S256), the code exchange, the device authorization and its token polling (RFC 8628),
 * and the refresh. Every request is a form POST (`application/x-www-form-urlencoded`) answered with
 * JSON. A failure's message names the endpoint and the server's `error` code, never a token.
 */

import { createHash, randomBytes } from "node:crypto"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Data, Duration, Effect } from "effect"
import { Traced } from "../observability/traced.js"

/** The tokens a token endpoint granted; `expires` in epoch milliseconds. */
export interface Tokens {
  readonly access: string
  readonly refresh: string
  readonly expires: number
}

/** A token or device endpoint refused or could not be reached. `error` is the OAuth error code, if any. */
export class OAuthError extends Data.TaggedError("OAuthError")<{
  readonly message: string
  readonly error?: string | undefined
}> {}

/** A fresh PKCE verifier (43 URL-safe characters) and its S256 challenge. */
export const pkce = (): { readonly verifier: string; readonly challenge: string } => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

/** An unguessable `state` value. */
export const state = (): string => randomBytes(16).toString("base64url")

/** How long one request to an authorization server may take. */
const requestTimeout = Duration.seconds(30)

/** POSTs `form` to `url`: the JSON answer and the status, or an OAuthError for a transport failure. */
const post = (url: string, form: Readonly<Record<string, string>>) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post(url).pipe(HttpClientRequest.bodyUrlParams(form), HttpClientRequest.acceptJson)
    )
    const body = yield* Effect.orElseSucceed(response.json, () => undefined)
    return {
      status: response.status,
      body: (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>
    }
  }).pipe(
    Effect.scoped,
    Effect.timeoutFail({
      duration: requestTimeout,
      onTimeout: () => new OAuthError({ message: `${url} did not answer in time` })
    }),
    Effect.catchTag("RequestError", "ResponseError", (error) =>
      Effect.fail(new OAuthError({ message: `${url} cannot be reached: ${error.reason}` }))
    )
  )

const text = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined)

/** The refusal of a token endpoint as an OAuthError (its `error` code and description). */
const refusal = (url: string, status: number, body: Record<string, unknown>) => {
  const code = text(body.error)
  const description = text(body.error_description)
  return new OAuthError({
    message: `${url} refused (${status}${code === undefined ? "" : ` ${code}`})${description === undefined ? "" : `: ${description}`}`,
    ...(code === undefined ? {} : { error: code })
  })
}

/** The tokens of a successful token response; `previous` keeps a refresh token the server did not rotate. */
const tokens = (url: string, body: Record<string, unknown>, previous?: string) =>
  Effect.gen(function* () {
    const access = text(body.access_token)
    if (access === undefined) return yield* new OAuthError({ message: `${url} answered without an access_token` })
    const expiresIn = typeof body.expires_in === "number" && body.expires_in > 0 ? body.expires_in : 3600
    return {
      access,
      refresh: text(body.refresh_token) ?? previous ?? "",
      expires: Date.now() + expiresIn * 1000
    } satisfies Tokens
  })

/** Exchanges an authorization code (with the PKCE verifier) at `tokenURL`. */
export const exchangeCode = Traced.fn("OAuthTokens.exchangeCode")(function* (options: {
  readonly tokenURL: string
  readonly clientID: string
  readonly code: string
  readonly redirectURI: string
  readonly verifier: string
}) {
  const { status, body } = yield* post(options.tokenURL, {
    grant_type: "authorization_code",
    code: options.code,
    redirect_uri: options.redirectURI,
    client_id: options.clientID,
    code_verifier: options.verifier
  })
  if (status < 200 || status >= 300) return yield* refusal(options.tokenURL, status, body)
  return yield* tokens(options.tokenURL, body)
})

/** Trades a refresh token for new tokens at `tokenURL`. */
export const refresh = Traced.fn("OAuthTokens.refresh")(function* (options: {
  readonly tokenURL: string
  readonly clientID: string
  readonly refresh: string
}) {
  const { status, body } = yield* post(options.tokenURL, {
    grant_type: "refresh_token",
    refresh_token: options.refresh,
    client_id: options.clientID
  })
  if (status < 200 || status >= 300) return yield* refusal(options.tokenURL, status, body)
  return yield* tokens(options.tokenURL, body, options.refresh)
})

/** A device authorization: what the user is shown, and what polling needs. */
export interface DeviceAuthorization {
  readonly deviceCode: string
  readonly userCode: string
  /** `verification_uri_complete` when given (the code already filled in), else `verification_uri`. */
  readonly url: string
  /** Seconds until the device code expires. */
  readonly expiresIn: number
  /** Seconds between polls (default 5). */
  readonly interval: number
}

/** Requests a device code at `deviceAuthorizationURL`. */
export const authorizeDevice = Traced.fn("OAuthTokens.authorizeDevice")(function* (options: {
  readonly deviceAuthorizationURL: string
  readonly clientID: string
  readonly scopes: ReadonlyArray<string>
}) {
  const url = options.deviceAuthorizationURL
  const { status, body } = yield* post(url, {
    client_id: options.clientID,
    ...(options.scopes.length === 0 ? {} : { scope: options.scopes.join(" ") })
  })
  if (status < 200 || status >= 300) return yield* refusal(url, status, body)
  const deviceCode = text(body.device_code)
  const userCode = text(body.user_code)
  const verification = text(body.verification_uri_complete) ?? text(body.verification_uri)
  if (deviceCode === undefined || userCode === undefined || verification === undefined) {
    return yield* new OAuthError({ message: `${url} answered without a device_code, user_code or verification_uri` })
  }
  return {
    deviceCode,
    userCode,
    url: verification,
    expiresIn: typeof body.expires_in === "number" && body.expires_in > 0 ? body.expires_in : 900,
    interval: typeof body.interval === "number" && body.interval > 0 ? body.interval : 5
  } satisfies DeviceAuthorization
})

/**
 * Polls `tokenURL` for a device code until the user approves: waits `interval` seconds between polls,
 * five more after each `slow_down`, and keeps polling on `authorization_pending`. Fails with the
 * OAuthError of any other refusal (`access_denied`, `expired_token`, …). Interruptible between polls.
 */
export const pollDevice = Traced.fn("OAuthTokens.pollDevice")(function* (options: {
  readonly tokenURL: string
  readonly clientID: string
  readonly deviceCode: string
  readonly interval: number
}) {
  let interval = options.interval
  while (true) {
    yield* Effect.sleep(Duration.seconds(interval))
    const { status, body } = yield* post(options.tokenURL, {
      grant_type: "urn:ietf:params:oauth:grant-type:device_code",
      device_code: options.deviceCode,
      client_id: options.clientID
    })
    if (status >= 200 && status < 300) return yield* tokens(options.tokenURL, body)
    const code = text(body.error)
    if (code === "authorization_pending") continue
    if (code === "slow_down") {
      interval += 5
      continue
    }
    return yield* refusal(options.tokenURL, status, body)
  }
})
