export * as LazyHttpClient from "./lazy-http-client.js"

import { HttpClient, type HttpClientError } from "@effect/platform"
import { Context, Effect, Layer } from "effect"

/**
 * Core's outgoing `HttpClient` (provider adapters, the model database refresh, OAuth and credential
 * checks): the platform's undici client (`NodeHttpClient.layerUndici`), loaded on the first request
 * rather than at start. undici is a large module, and a server that sends no request (or not yet)
 * neither loads nor keeps it.
 *
 * Requests behave exactly as with the undici client: this one only hands each request to it (its
 * tracing, propagation and abort on interruption included). The undici dispatcher is built once, in
 * the layer's scope, and closed with it. Concurrent first requests share one load; a first request
 * interrupted while loading leaves nothing behind, and the next one loads again.
 */
export const layer: Layer.Layer<HttpClient.HttpClient> = Layer.scoped(
  HttpClient.HttpClient,
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const lock = yield* Effect.makeSemaphore(1)
    let loaded: HttpClient.HttpClient | undefined
    const load = Effect.promise(() => import("@effect/platform-node/NodeHttpClient")).pipe(
      Effect.flatMap((module) => Layer.buildWithScope(module.layerUndici, scope)),
      Effect.map((context) => Context.get(context, HttpClient.HttpClient)),
      Effect.tap((client) => {
        loaded = client
      })
    )
    const client = Effect.suspend(() =>
      loaded !== undefined
        ? Effect.succeed(loaded)
        : lock.withPermits(1)(Effect.suspend(() => (loaded !== undefined ? Effect.succeed(loaded) : load)))
    )
    return HttpClient.makeWith<HttpClientError.HttpClientError, never, HttpClientError.HttpClientError, never>(
      (request) => Effect.flatMap(request, (request) => Effect.flatMap(client, (undici) => undici.execute(request))),
      Effect.succeed
    )
  })
)
