/**
 * The rest-of-path runtime of the Effect client, imported as a namespace: `import * as RestPath`.
 *
 * `HttpApiClient` fills only `:name` path parameters, so a route ending in the wildcard `*`
 * (`/api/fs/read/*`) would be requested literally. The generated facade runs such a call
 * {@link within} the path it names, and the client built with {@link transformClient} puts that path,
 * percent-encoded ({@link encode}), in place of the trailing `*`. Everything else about the call (the
 * query, the decoding of the success and of the declared failures) stays `HttpApiClient`'s.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, FiberRef, GlobalValue } from "effect"

const current = GlobalValue.globalValue("@opencode-ai/client/effect/RestPath", () =>
  FiberRef.unsafeMake<string | undefined>(undefined)
)

/**
 * A path as one percent-encoded URL segment (its slashes as `%2F`), so that no URL parser resolves its
 * dot segments before the server sees them; `""`, `.` and `..` get a leading `./` for the same reason.
 * The server decodes it whole.
 */
export const encode = (path: string): string =>
  encodeURIComponent(path === "" || path === "." || path === ".." ? `./${path}` : path)

/** Runs `effect` (one call of a wildcard route) with `path` as the rest of its URL. */
export const within = <A, E, R>(path: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locally(effect, current, path)

/** Replaces a request URL's trailing `*` with the path set by {@link within}; other requests pass unchanged. */
export const transformClient = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.mapRequestEffect(client, (request) =>
    Effect.map(FiberRef.get(current), (rest) =>
      rest === undefined || !request.url.endsWith("/*")
        ? request
        : HttpClientRequest.setUrl(request, `${request.url.slice(0, -1)}${encode(rest)}`)
    )
  )
