export * as OAuthAttempts from "./oauth-attempts.js"

/**
 * OAuth Attempts: one sign-in in progress per attempt, started by `connect.oauth` with one of the
 * provider's configured OAuth methods (`provider.<id>.oauth`, see `ConfigInfo.OAuthMethod`), and
 * finished by storing the granted tokens in the Credential Store (`type: "oauth"`).
 *
 * ```
 *  start ──► pending ──(redirect with the code / pasted code / device approved)──► exchange ──ok──► complete
 *               │                                                                    └─refused──► failed
 *               ├──(its time runs out)──► expired
 *               └──(cancel)──► gone (the attempt ID is unknown afterwards)
 * ```
 *
 * - Code flow, loopback redirect (mode `auto`): the attempt listens on `http://127.0.0.1:<port>/callback`
 *   (an ephemeral port) until it ends; the authorize URL carries the PKCE S256 challenge and a random
 *   `state`, and a callback whose `state` differs is refused without ending the attempt.
 * - Code flow, pasted code (mode `code`): `complete` takes the code the user copied.
 *   `complete` also accepts a code for a loopback attempt (a browser on another machine).
 * - Device flow (mode `auto`): the URL is the verification URL, the instructions carry the user code,
 *   and the token endpoint is polled in the background (see `OAuthTokens.pollDevice`).
 * - An attempt ends at `time.expires` (the method's `timeout`, default 10 minutes, or the device
 *   code's expiry if sooner): its listener closes, its polling stops, and it reads `expired`.
 * - A finished attempt (complete, failed, expired) stays readable for ten minutes after it expires.
 * - Closing the layer's scope ends every attempt.
 */

import { randomBytes } from "node:crypto"
import * as http from "node:http"
import type * as net from "node:net"
import type { HttpClient } from "@effect/platform"
import { Errors } from "@opencode-ai/schema"
import { Context, Duration, Effect, Exit, Fiber, Layer, Runtime, Scope } from "effect"
import * as Config from "../config/config.js"
import type * as ConfigInfo from "../config/config-info.js"
import * as CredentialStore from "./credential-store.js"
import * as OAuthTokens from "./oauth-tokens.js"

/** The public part of a started attempt. */
export interface Started {
  readonly attemptID: string
  readonly url: string
  readonly instructions: string
  readonly mode: "auto" | "code"
  readonly time: { readonly created: number; readonly expires: number }
}

/** An attempt's state as `attempt.status` reports it. */
export type Status =
  | { readonly status: "pending" | "complete" | "expired"; readonly time: Started["time"] }
  | { readonly status: "failed"; readonly message: string; readonly time: Started["time"] }

export interface Interface {
  /**
   * Starts an attempt for `providerID` with the method `method` (already looked up). Fails with
   * InvalidRequestError when the method cannot be started (e.g. the device endpoint refuses).
   */
  readonly start: (
    providerID: string,
    method: ConfigInfo.OAuthMethod,
    label: string | undefined
  ) => Effect.Effect<Started, Errors.InvalidRequestError>
  /** The attempt's status; InvalidRequestError when the ID is unknown (or was cancelled). */
  readonly status: (attemptID: string) => Effect.Effect<Status, Errors.InvalidRequestError>
  /** Ends a pending attempt and forgets it; InvalidRequestError when the ID is unknown. */
  readonly cancel: (attemptID: string) => Effect.Effect<void, Errors.InvalidRequestError>
  /**
   * Completes a pending code-flow attempt with the code the user pasted: the code is exchanged and the
   * tokens stored before this returns. InvalidRequestError when the ID is unknown, the attempt is not
   * pending or is a device attempt, no code is given, or the token endpoint refuses the code (the
   * attempt is then `failed`).
   */
  readonly complete: (attemptID: string, code: string | undefined) => Effect.Effect<void, Errors.InvalidRequestError>
}

/** OAuth Attempts; `yield* OAuthAttempts.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/OAuthAttempts")<Service, Interface>() {}

/** How long an attempt waits for the user when its method names no `timeout`. */
export const defaultTimeout = Duration.minutes(10)
/** How long a finished attempt stays readable after it expires. */
const retention = 10 * 60 * 1000

interface Attempt {
  readonly id: string
  readonly providerID: string
  readonly method: ConfigInfo.OAuthMethod
  readonly label: string | undefined
  readonly created: number
  readonly expires: number
  readonly mode: "auto" | "code"
  readonly verifier: string
  readonly redirectURI: string
  readonly scope: Scope.CloseableScope
  outcome:
    | { readonly status: "pending" | "complete" | "expired" }
    | { readonly status: "failed"; readonly message: string }
  /** Set while a code is being exchanged, so a second one is refused. */
  exchanging: boolean
}

const invalid = (field: string, message: string) =>
  new Errors.InvalidRequestError({ kind: "integration", field, message })

const unknownAttempt = (attemptID: string) => invalid("attemptID", `No OAuth attempt ${attemptID}`)

/** The attempts of one runtime instance, over its Credential Store and Config (see the module doc). */
export const layer: Layer.Layer<Service, never, CredentialStore.Service | Config.Service | HttpClient.HttpClient> =
  Layer.scoped(
    Service,
    Effect.gen(function* () {
      const store = yield* CredentialStore.Service
      const config = yield* Config.Service
      const context = yield* Effect.context<HttpClient.HttpClient>()
      const runtime = yield* Effect.runtime<never>()
      const attempts = new Map<string, Attempt>()
      const lock = yield* Effect.makeSemaphore(1)

      yield* Effect.addFinalizer(() =>
        Effect.forEach([...attempts.values()], (attempt) => Scope.close(attempt.scope, Exit.void), { discard: true })
      )

      const prune = Effect.sync(() => {
        const now = Date.now()
        for (const [id, attempt] of attempts) if (attempt.expires + retention < now) attempts.delete(id)
      })

      /** Moves a pending attempt to `outcome` and ends its listener and polling (not from inside its scope). */
      const finish = (attempt: Attempt, outcome: Attempt["outcome"]) =>
        lock
          .withPermits(1)(
            Effect.suspend(() => {
              if (attempt.outcome.status !== "pending") return Effect.void
              attempt.outcome = outcome
              return Effect.forkDaemon(Scope.close(attempt.scope, Exit.void))
            })
          )
          .pipe(Effect.asVoid)

      /** Stores granted tokens as the provider's credential; the attempt completes. */
      const succeed = (attempt: Attempt, tokens: OAuthTokens.Tokens) =>
        Effect.gen(function* () {
          yield* store.set(attempt.providerID, {
            type: "oauth",
            access: tokens.access,
            refresh: tokens.refresh,
            expires: tokens.expires,
            method: attempt.method.id,
            ...(attempt.label === undefined ? {} : { label: attempt.label })
          })
          yield* config.resync
          yield* finish(attempt, { status: "complete" })
        }).pipe(
          Effect.catchTag("CredentialStoreError", (error) =>
            finish(attempt, { status: "failed", message: error.message })
          )
        )

      /** Exchanges `code` for the attempt; fails with the reason when the token endpoint refuses. */
      const exchange = (attempt: Attempt, code: string) =>
        Effect.gen(function* () {
          if (attempt.exchanging) return yield* Effect.fail("a code for this attempt is already being exchanged")
          attempt.exchanging = true
          const result = yield* OAuthTokens.exchangeCode({
            tokenURL: attempt.method.tokenURL,
            clientID: attempt.method.clientID,
            code,
            redirectURI: attempt.redirectURI,
            verifier: attempt.verifier
          }).pipe(Effect.provide(context), Effect.either)
          attempt.exchanging = false
          if (result._tag === "Left") {
            yield* finish(attempt, { status: "failed", message: result.left.message })
            return yield* Effect.fail(result.left.message)
          }
          yield* succeed(attempt, result.right)
          const outcome = attempt.outcome
          if (outcome.status === "failed") return yield* Effect.fail(outcome.message)
        })

      /** The loopback listener of a code-flow attempt, closed with the attempt's scope. */
      const listen = (resolveAttempt: () => Attempt | undefined, expectedState: string) =>
        Effect.acquireRelease(
          Effect.async<http.Server>((resume) => {
            const server = http.createServer((request, response) => {
              const url = new URL(request.url ?? "/", "http://127.0.0.1")
              const attempt = resolveAttempt()
              const reply = (status: number, message: string) =>
                response.writeHead(status, { "content-type": "text/plain; charset=utf-8" }).end(`${message}\n`)
              if (url.pathname !== "/callback" || attempt === undefined) return reply(404, "Not found")
              if (url.searchParams.get("state") !== expectedState) return reply(400, "This sign-in link is not valid.")
              if (attempt.outcome.status !== "pending") return reply(400, "This sign-in has already ended.")
              const error = url.searchParams.get("error")
              if (error !== null) {
                const description = url.searchParams.get("error_description")
                Runtime.runFork(runtime)(
                  finish(attempt, {
                    status: "failed",
                    message: `The authorization server refused: ${error}${description === null ? "" : ` (${description})`}`
                  })
                )
                return reply(400, "Sign-in failed. You can close this window.")
              }
              const code = url.searchParams.get("code")
              if (code === null || code === "") return reply(400, "The redirect carries no code.")
              Runtime.runCallback(runtime)(Effect.either(exchange(attempt, code)), {
                onExit: (exit) => {
                  const ok = Exit.isSuccess(exit) && exit.value._tag === "Right"
                  reply(
                    ok ? 200 : 400,
                    ok ? "Signed in. You can close this window." : "Sign-in failed. You can close this window."
                  )
                }
              })
            })
            server.once("error", (error) => resume(Effect.die(error)))
            server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
          }),
          (server) =>
            Effect.async<void>((resume) => {
              server.closeAllConnections()
              server.close(() => resume(Effect.void))
            })
        )

      const start: Interface["start"] = (providerID, method, label) =>
        Effect.gen(function* () {
          yield* prune
          const id = `att_${randomBytes(12).toString("hex")}`
          const created = Date.now()
          const timeout = method.timeout === undefined ? Duration.toMillis(defaultTimeout) : method.timeout * 1000
          const scope = yield* Scope.make()
          const base = { id, providerID, method, label, created, scope, exchanging: false }
          const built = yield* Effect.gen(function* () {
            if (method.flow === "device") {
              if (method.deviceAuthorizationURL === undefined) {
                return yield* invalid("methodID", `OAuth method ${method.id} has no deviceAuthorizationURL`)
              }
              const device = yield* OAuthTokens.authorizeDevice({
                deviceAuthorizationURL: method.deviceAuthorizationURL,
                clientID: method.clientID,
                scopes: method.scopes ?? []
              }).pipe(
                Effect.provide(context),
                Effect.mapError((error) => invalid("methodID", error.message))
              )
              const attempt: Attempt = {
                ...base,
                expires: created + Math.min(timeout, device.expiresIn * 1000),
                mode: "auto",
                verifier: "",
                redirectURI: "",
                outcome: { status: "pending" }
              }
              const poll = OAuthTokens.pollDevice({
                tokenURL: method.tokenURL,
                clientID: method.clientID,
                deviceCode: device.deviceCode,
                interval: device.interval
              }).pipe(Effect.provide(context))
              yield* Effect.forkIn(
                Effect.matchEffect(poll, {
                  onFailure: (error) =>
                    finish(attempt, {
                      status: error.error === "expired_token" ? "expired" : "failed",
                      ...(error.error === "expired_token" ? {} : { message: error.message })
                    } as Attempt["outcome"]),
                  onSuccess: (tokens) => succeed(attempt, tokens)
                }),
                scope
              )
              return {
                attempt,
                url: device.url,
                instructions: `Open ${device.url} and enter the code ${device.userCode}`
              }
            }
            if (method.authorizeURL === undefined) {
              return yield* invalid("methodID", `OAuth method ${method.id} has no authorizeURL`)
            }
            const { verifier, challenge } = OAuthTokens.pkce()
            const expectedState = OAuthTokens.state()
            const paste = method.redirect === "paste"
            let redirectURI: string
            if (paste) {
              if (method.redirectURI === undefined) {
                return yield* invalid("methodID", `OAuth method ${method.id} pastes its code but names no redirectURI`)
              }
              redirectURI = method.redirectURI
            } else {
              const server = yield* Scope.extend(
                listen(() => attempts.get(id), expectedState),
                scope
              )
              redirectURI = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/callback`
            }
            const url = new URL(method.authorizeURL)
            url.searchParams.set("response_type", "code")
            url.searchParams.set("client_id", method.clientID)
            url.searchParams.set("redirect_uri", redirectURI)
            if ((method.scopes ?? []).length > 0) url.searchParams.set("scope", (method.scopes ?? []).join(" "))
            url.searchParams.set("code_challenge", challenge)
            url.searchParams.set("code_challenge_method", "S256")
            url.searchParams.set("state", expectedState)
            const attempt: Attempt = {
              ...base,
              expires: created + timeout,
              mode: paste ? "code" : "auto",
              verifier,
              redirectURI,
              outcome: { status: "pending" }
            }
            return {
              attempt,
              url: url.toString(),
              instructions: paste
                ? "Open the URL, sign in, and paste the code you are given"
                : "Open the URL and sign in; this completes by itself"
            }
          }).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
          const attempt = built.attempt
          attempts.set(id, attempt)
          // The attempt's own end: expired unless something finished it first.
          yield* Effect.forkDaemon(
            Effect.sleep(Duration.millis(Math.max(0, attempt.expires - Date.now()))).pipe(
              Effect.zipRight(finish(attempt, { status: "expired" }))
            )
          ).pipe(Effect.tap((fiber) => Scope.addFinalizer(scope, Fiber.interrupt(fiber))))
          return {
            attemptID: id,
            url: built.url,
            instructions: built.instructions,
            mode: attempt.mode,
            time: { created, expires: attempt.expires }
          } satisfies Started
        })

      const find = (attemptID: string) =>
        Effect.suspend(() => {
          const attempt = attempts.get(attemptID)
          return attempt === undefined ? Effect.fail(unknownAttempt(attemptID)) : Effect.succeed(attempt)
        })

      return {
        start,
        status: (attemptID) =>
          Effect.gen(function* () {
            yield* prune
            const attempt = yield* find(attemptID)
            if (attempt.outcome.status === "pending" && Date.now() >= attempt.expires) {
              yield* finish(attempt, { status: "expired" })
            }
            const time = { created: attempt.created, expires: attempt.expires }
            const outcome = attempt.outcome
            return outcome.status === "failed"
              ? { status: "failed" as const, message: outcome.message, time }
              : { status: outcome.status, time }
          }),
        cancel: (attemptID) =>
          Effect.gen(function* () {
            const attempt = yield* find(attemptID)
            attempts.delete(attemptID)
            yield* Scope.close(attempt.scope, Exit.void)
          }),
        complete: (attemptID, code) =>
          Effect.gen(function* () {
            const attempt = yield* find(attemptID)
            if (attempt.outcome.status === "pending" && Date.now() >= attempt.expires) {
              yield* finish(attempt, { status: "expired" })
            }
            if (attempt.outcome.status !== "pending") {
              return yield* invalid("attemptID", `OAuth attempt ${attemptID} is ${attempt.outcome.status}`)
            }
            if (attempt.method.flow === "device") {
              return yield* invalid("attemptID", `OAuth attempt ${attemptID} completes when the device is approved`)
            }
            if (code === undefined || code === "") return yield* invalid("code", "A code is required")
            yield* exchange(attempt, code).pipe(Effect.mapError((message) => invalid("code", message)))
          })
      } satisfies Interface
    })
  )
