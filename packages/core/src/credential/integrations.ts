export * as Integrations from "./integrations.js"

/**
 * Integrations: the providers a user can connect, derived from the catalog (every provider of the
 * model database and the config, see `Catalog.connectable`), each with the ways it can be connected
 * and the connections it has.
 *
 * - Methods, in this order: the OAuth methods the config declares for it (`provider.<id>.oauth`; no
 *   provider offers OAuth otherwise), an API key (always), and its environment variables (when it
 *   names any).
 * - Connections: its stored credential (`type: "credential"`, ID and label only), then each of its
 *   environment variables that is set (non-empty).
 * - `connectKey` stores an API key in the Credential Store (replacing the provider's credential) and
 *   returns once the catalog offers the provider with it: `/api/provider` and `/api/model` list it at
 *   the next request, and requests to it carry the key (unless `options.apiKey` in the config wins).
 * - `removeCredential` deletes the credential; the provider leaves the catalog unless the config names
 *   it or an environment variable still holds a key.
 * - {@link Interface.apiKey} is the key a request to a provider carries: an OAuth access token that has
 *   expired (or expires within a minute) is refreshed at its method's token endpoint first, and the new
 *   tokens stored; when the refresh fails, the stored token is used and one warning is logged.
 * An unknown integration, credential or OAuth method is an InvalidRequestError (the contract's 400).
 */

import type { HttpClient } from "@effect/platform"
import { Errors } from "@opencode-ai/schema"
import { Context, Effect, Layer, Option } from "effect"
import type * as Catalog from "../config/catalog.js"
import * as Config from "../config/config.js"
import * as CredentialStore from "./credential-store.js"
import * as OAuthAttempts from "./oauth-attempts.js"
import * as OAuthTokens from "./oauth-tokens.js"

/** One way to connect an integration, in the contract's shape. */
export type Method =
  | { readonly type: "oauth"; readonly id: string; readonly label: string }
  | { readonly type: "key"; readonly label: string }
  | { readonly type: "env"; readonly names: ReadonlyArray<string> }

/** One connection of an integration, in the contract's shape: never a secret. */
export type Connection =
  | { readonly type: "credential"; readonly id: string; readonly label: string }
  | { readonly type: "env"; readonly name: string }

export interface Info {
  readonly id: string
  readonly name: string
  readonly methods: ReadonlyArray<Method>
  readonly connections: ReadonlyArray<Connection>
}

export interface Interface {
  /** Every integration, in catalog order (config providers first, then the database's). */
  readonly list: Effect.Effect<ReadonlyArray<Info>>
  readonly get: (integrationID: string) => Effect.Effect<Info, Errors.InvalidRequestError>
  /** Stores `key` as the provider's credential (see the module doc). An empty key is refused. */
  readonly connectKey: (
    integrationID: string,
    key: string,
    label: string | undefined
  ) => Effect.Effect<void, Errors.InvalidRequestError>
  /** Starts an OAuth attempt with the method `methodID` (see OAuthAttempts). */
  readonly connectOAuth: (
    integrationID: string,
    methodID: string,
    label: string | undefined
  ) => Effect.Effect<OAuthAttempts.Started, Errors.InvalidRequestError>
  /** Renames a credential; an empty label is refused. */
  readonly updateCredential: (credentialID: string, label: string) => Effect.Effect<void, Errors.InvalidRequestError>
  /** Deletes a credential (see the module doc). */
  readonly removeCredential: (credentialID: string) => Effect.Effect<void, Errors.InvalidRequestError>
  /** The key requests to `providerID` carry (see the module doc); none without one. */
  readonly apiKey: (providerID: string) => Effect.Effect<string | undefined>
}

/** Integrations; `yield* Integrations.Service`. */
export class Service extends Context.Tag("@opencode-ai/core/Integrations")<Service, Interface>() {}

const invalid = (field: string, message: string) =>
  new Errors.InvalidRequestError({ kind: "integration", field, message })

/** Refresh an access token this long before it expires. */
const refreshMargin = 60 * 1000

/**
 * The integrations of one runtime instance: the catalog of `Config`, the credentials of the store,
 * `env` for the environment connections.
 */
export const layer = (options: {
  readonly env: Readonly<Record<string, string | undefined>>
}): Layer.Layer<
  Service,
  never,
  CredentialStore.Service | Config.Service | OAuthAttempts.Service | HttpClient.HttpClient
> =>
  Layer.effect(
    Service,
    Effect.gen(function* () {
      const store = yield* CredentialStore.Service
      const config = yield* Config.Service
      const attempts = yield* OAuthAttempts.Service
      const context = yield* Effect.context<HttpClient.HttpClient>()
      const refreshLock = yield* Effect.makeSemaphore(1)

      const info = (provider: Catalog.Connectable, entries: CredentialStore.Entries): Info => {
        const stored = entries[provider.id]
        return {
          id: provider.id,
          name: provider.name,
          methods: [
            ...provider.oauth.map((method): Method => ({ type: "oauth", id: method.id, label: method.label })),
            { type: "key", label: "API key" },
            ...(provider.env.length === 0 ? [] : [{ type: "env" as const, names: provider.env }])
          ],
          connections: [
            ...(stored === undefined
              ? []
              : [{ type: "credential" as const, id: provider.id, label: CredentialStore.labelOf(stored) }]),
            ...provider.env
              .filter((name) => (options.env[name] ?? "") !== "")
              .map((name): Connection => ({ type: "env", name }))
          ]
        }
      }

      const find = (integrationID: string) =>
        Effect.suspend(() => {
          const provider = config.connectable.find((item) => item.id === integrationID)
          return provider === undefined
            ? Effect.fail(invalid("integrationID", `No integration ${integrationID}`))
            : Effect.succeed(provider)
        })

      const storeFailure = (error: CredentialStore.CredentialStoreError) =>
        Effect.zipRight(
          Effect.logError(error.message),
          Effect.dieMessage("The credentials file cannot be written; see the log")
        )

      /** The stored tokens of `providerID`, refreshed first when they are about to expire. */
      const fresh = (providerID: string, entry: CredentialStore.OAuthEntry) =>
        refreshLock
          .withPermits(1)(
            Effect.gen(function* () {
              // Another request may have refreshed while this one waited.
              const current = yield* store.get(providerID)
              if (current?.type !== "oauth")
                return current === undefined ? undefined : CredentialStore.secretOf(current)
              if (current.expires - refreshMargin > Date.now()) return current.access
              const method = config.connectable
                .find((item) => item.id === providerID)
                ?.oauth.find((item) => item.id === (current.method ?? item.id))
              if (method === undefined || current.refresh === "") {
                yield* Effect.logWarning(
                  `The OAuth token of ${providerID} has expired and cannot be refreshed (no configured OAuth method or refresh token)`
                )
                return current.access
              }
              const refreshed = yield* OAuthTokens.refresh({
                tokenURL: method.tokenURL,
                clientID: method.clientID,
                refresh: current.refresh
              }).pipe(Effect.provide(context), Effect.either)
              if (refreshed._tag === "Left") {
                yield* Effect.logWarning(
                  `The OAuth token of ${providerID} could not be refreshed: ${refreshed.left.message}`
                )
                return current.access
              }
              const tokens = refreshed.right
              yield* store
                .modify(providerID, (stored) =>
                  stored.type === "oauth"
                    ? { ...stored, access: tokens.access, refresh: tokens.refresh, expires: tokens.expires }
                    : stored
                )
                .pipe(Effect.catchAll((error) => Effect.logWarning(error.message)))
              yield* config.resync
              return tokens.access
            })
          )
          .pipe(Effect.orElseSucceed(() => entry.access))

      return {
        list: Effect.map(store.entries, (entries) => config.connectable.map((provider) => info(provider, entries))),
        get: (integrationID) =>
          Effect.gen(function* () {
            const provider = yield* find(integrationID)
            return info(provider, yield* store.entries)
          }),
        connectKey: (integrationID, key, label) =>
          Effect.gen(function* () {
            const provider = yield* find(integrationID)
            if (key.trim() === "") return yield* invalid("key", "The key is empty")
            if (label !== undefined && label.trim() === "") return yield* invalid("label", "The label is empty")
            yield* store
              .set(provider.id, { type: "api", key, ...(label === undefined ? {} : { label }) })
              .pipe(Effect.catchAll(storeFailure))
            yield* config.resync
          }),
        connectOAuth: (integrationID, methodID, label) =>
          Effect.gen(function* () {
            const provider = yield* find(integrationID)
            const method = provider.oauth.find((item) => item.id === methodID)
            if (method === undefined) {
              return yield* invalid(
                "methodID",
                provider.oauth.length === 0
                  ? `Integration ${integrationID} offers no OAuth method`
                  : `Integration ${integrationID} has no OAuth method ${methodID} (its methods: ${provider.oauth.map((item) => item.id).join(", ")})`
              )
            }
            if (label !== undefined && label.trim() === "") return yield* invalid("label", "The label is empty")
            return yield* attempts.start(provider.id, method, label)
          }),
        updateCredential: (credentialID, label) =>
          Effect.gen(function* () {
            if (label.trim() === "") return yield* invalid("label", "The label is empty")
            const found = yield* store
              .modify(credentialID, (entry) => ({ ...entry, label }))
              .pipe(Effect.catchAll(storeFailure))
            if (!found) return yield* invalid("credentialID", `No credential ${credentialID}`)
          }),
        removeCredential: (credentialID) =>
          Effect.gen(function* () {
            const found = yield* store.remove(credentialID).pipe(Effect.catchAll(storeFailure))
            if (!found) return yield* invalid("credentialID", `No credential ${credentialID}`)
            yield* config.resync
          }),
        apiKey: (providerID) =>
          Effect.gen(function* () {
            const provider = config.provider(providerID)
            if (Option.isNone(provider)) return undefined
            if (provider.value.keySource !== "credential") return provider.value.apiKey
            const entry = yield* store.get(providerID)
            if (entry === undefined) return provider.value.apiKey
            if (entry.type !== "oauth") return CredentialStore.secretOf(entry)
            return yield* fresh(providerID, entry)
          })
      } satisfies Interface
    })
  )
