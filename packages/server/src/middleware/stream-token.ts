export * as StreamToken from "./stream-token.js"

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Clock, Context, Effect, Layer } from "effect"

/**
 * Stream tokens: short-lived credentials that open the event streams when sent as the `token` query
 * parameter, for clients that cannot set an `Authorization` header (a browser `EventSource`).
 *
 * A token is `<expiry>.<mac>`: the expiry (epoch ms, base 36) and an HMAC-SHA256 of it under a key
 * drawn at random when the router starts. Nothing is stored, so issuing costs no memory, and a
 * restart (a new key) voids every token. A token is valid until its expiry, for any number of
 * connections (an `EventSource` reconnects with the same URL); it is checked when a stream opens,
 * so a stream it opened runs on after it expires. It is accepted only on the event stream routes
 * (see `Authorization`), never as general credentials.
 */

/** How long a token opens streams. */
export const lifetimeMillis = 60_000

/** The query parameter that carries a token. */
export const parameter = "token"

export interface Interface {
  /** A new token and its expiry (epoch ms). */
  readonly issue: Effect.Effect<{ readonly token: string; readonly expiresAt: number }>
  /** Whether `token` was issued by this router and has not expired. */
  readonly verify: (token: string) => Effect.Effect<boolean>
}

/** `yield* StreamToken.Service`. */
export class Service extends Context.Tag("@opencode-ai/server/StreamToken")<Service, Interface>() {}

export const layer: Layer.Layer<Service> = Layer.sync(Service, () => {
  const key = randomBytes(32)
  const mac = (expiry: string) => createHmac("sha256", key).update(`stream:${expiry}`).digest()
  return Service.of({
    issue: Effect.map(Clock.currentTimeMillis, (now) => {
      const expiresAt = now + lifetimeMillis
      const expiry = expiresAt.toString(36)
      return { token: `${expiry}.${mac(expiry).toString("base64url")}`, expiresAt }
    }),
    verify: (token) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const dot = token.indexOf(".")
        if (dot <= 0) return false
        const expiry = token.slice(0, dot)
        const given = Buffer.from(token.slice(dot + 1), "base64url")
        const expected = mac(expiry)
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false
        return Number.parseInt(expiry, 36) > now
      })
  })
})
