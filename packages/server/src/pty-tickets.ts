export * as PtyTickets from "./pty-tickets.js"

import { randomBytes } from "node:crypto"
import type { Identifier, Pty } from "@opencode-ai/schema"
import { Clock, Context, Duration, Effect, Layer } from "effect"

/**
 * PTY connect tickets: what `POST /api/pty/{ptyID}/connect-token` issues and `connect` accepts as
 * its `ticket` query parameter in place of the `Authorization` header, which a browser cannot set
 * on a WebSocket. A ticket is 32 random bytes (base64url), bound to one PTY of one Location
 * directory, valid once and for a short {@link defaultLifetime}.
 *
 * Unlike a stream token (`StreamToken`, an HMAC that opens any number of streams), a ticket is
 * single-use, so it is state: the tickets not yet spent live in memory until they are presented or
 * expire (at most {@link capacity}; past that the oldest is dropped). Presenting a ticket spends it,
 * whether or not it matches the PTY it is presented for. A restart voids every ticket.
 */

export const defaultLifetime = Duration.seconds(60)

/** The most unspent tickets kept. */
export const capacity = 10_000

export interface Scope {
  readonly ptyID: Identifier.PtyID
  readonly directory: string
}

export interface Interface {
  /** A new ticket for `scope`. */
  readonly issue: (scope: Scope) => Effect.Effect<Pty.PtyTicketConnectToken>
  /** Spends `ticket`: true when it was issued for `scope` and has not expired nor been spent. */
  readonly consume: (ticket: string, scope: Scope) => Effect.Effect<boolean>
}

export class Service extends Context.Tag("@opencode-ai/server/PtyTickets")<Service, Interface>() {}

export interface Options {
  /** How long a ticket is valid; default {@link defaultLifetime}. */
  readonly lifetime?: Duration.DurationInput | undefined
}

export const layer = (options: Options = {}): Layer.Layer<Service> =>
  Layer.sync(Service, () => {
    const lifetime = Duration.toMillis(Duration.decode(options.lifetime ?? defaultLifetime))
    const expiresIn = Math.max(1, Math.round(lifetime / 1000))
    // Insertion order is issue order, so the first entries are the oldest.
    const tickets = new Map<string, Scope & { readonly expiresAt: number }>()
    const sweep = (now: number) => {
      for (const [ticket, entry] of tickets) if (entry.expiresAt <= now) tickets.delete(ticket)
      while (tickets.size >= capacity) {
        const oldest = tickets.keys().next()
        if (oldest.done === true) break
        tickets.delete(oldest.value)
      }
    }
    return Service.of({
      issue: (scope) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          sweep(now)
          const ticket = randomBytes(32).toString("base64url")
          tickets.set(ticket, { ptyID: scope.ptyID, directory: scope.directory, expiresAt: now + lifetime })
          return { ticket, expires_in: expiresIn }
        }),
      consume: (ticket, scope) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const entry = tickets.get(ticket)
          tickets.delete(ticket)
          return (
            entry !== undefined &&
            entry.expiresAt > now &&
            entry.ptyID === scope.ptyID &&
            entry.directory === scope.directory
          )
        })
    })
  })
