export * as Inspector from "./inspector.js"

import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { ManagedOutput } from "@opencode-ai/core"
import { Errors, Quote } from "@opencode-ai/schema"
import { Effect, Layer, Option } from "effect"

/**
 * The live session inspector (packages/inspector): a static page at `/` with its hashed script and
 * stylesheet under `/inspector/`, plus `/inspector/tool-output/{name}`, the Managed Tool Output File
 * a tool call's output links to. The routes join the API router, so every API-wide rule applies to
 * them unchanged: the Origin/Host guard, Basic auth (the browser asks once and the page's own calls,
 * same origin, reuse the credentials) and tagged JSON errors (an unknown name is a 404).
 *
 * Headers: `index.html` is `no-cache` (a new build is seen at once), the hashed assets are
 * `immutable` for a year, tool output is `no-store`; every answer carries `nosniff` and a
 * Content-Security-Policy that allows nothing but this origin (no CDN, no fonts, no inline script),
 * and refuses framing.
 */

/** Where the inspector's build output is, or `None` when it was not built (see {@link layer}). */
export const distDirectory = (): Option.Option<string> => {
  const candidates: Array<string> = []
  try {
    // The workspace dependency (`packages/server/node_modules/@opencode-ai/inspector`), from src or dist.
    const manifest = createRequire(import.meta.url).resolve("@opencode-ai/inspector/package.json")
    candidates.push(path.join(path.dirname(manifest), "dist"))
  } catch {
    // Not resolvable (a copied bundle): fall back to the repository layout below.
  }
  // packages/server/src/inspector.ts and the bundled packages/server/dist/bin.js are both one level
  // below packages/server.
  candidates.push(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../inspector/dist"))
  return Option.fromNullable(candidates.find((dir) => fs.existsSync(path.join(dir, "index.html"))))
}

const contentTypes: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8"
}

const securityHeaders = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

interface Asset {
  readonly body: Uint8Array
  readonly contentType: string
}

/** Reads the build output once: the page and the files of `assets/` (a few tens of KB). */
const readAssets = (dist: string) => {
  const page = fs.readFileSync(path.join(dist, "index.html"))
  const assets = new Map<string, Asset>()
  for (const name of fs.readdirSync(path.join(dist, "assets"))) {
    const contentType = contentTypes[path.extname(name)]
    if (contentType !== undefined)
      assets.set(name, { body: fs.readFileSync(path.join(dist, "assets", name)), contentType })
  }
  return { page, assets }
}

const notFound = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const route = Quote.clip(request.url.split("?")[0] ?? request.url)
  return HttpServerResponse.unsafeJson(
    new Errors.RouteNotFoundError({
      method: request.method,
      path: route,
      message: `No route for ${request.method} ${route}`
    }),
    { status: 404 }
  )
})

/**
 * The routes, when `enabled`. Without them `/` is the API's usual 404 `RouteNotFoundError`. An
 * enabled inspector whose build output is missing (the workspace was not built) is logged once and
 * left out the same way, rather than failing the server.
 */
export const layer = (enabled: boolean) =>
  enabled
    ? HttpApiBuilder.Router.use((router) =>
        Effect.gen(function* () {
          const dist = distDirectory()
          if (Option.isNone(dist)) {
            yield* Effect.logWarning(
              "the inspector page is not built (run `pnpm -r run build`); / answers 404 until it is"
            )
            return
          }
          const { page, assets } = readAssets(dist.value)
          const managed = yield* ManagedOutput.Service

          yield* router.get(
            "/",
            Effect.succeed(
              HttpServerResponse.uint8Array(page, {
                contentType: "text/html; charset=utf-8",
                headers: { "cache-control": "no-cache", ...securityHeaders }
              })
            )
          )
          yield* router.get(
            "/inspector/tool-output/:name",
            Effect.gen(function* () {
              const { name } = yield* HttpRouter.params
              const file = name === undefined ? undefined : path.join(managed.directory, name)
              if (file === undefined || name!.includes("/") || !managed.owns(file)) return yield* notFound
              return yield* HttpServerResponse.file(file, {
                // The platform's file response takes its type from the headers (not `contentType`).
                headers: {
                  "content-type": "text/plain; charset=utf-8",
                  "cache-control": "no-store",
                  ...securityHeaders
                }
              }).pipe(
                // Expired (swept) or never written: the same 404 as an unknown name.
                Effect.catchTag("SystemError", () => notFound)
              )
            })
          )
          yield* router.get(
            "/inspector/:name",
            Effect.gen(function* () {
              const { name } = yield* HttpRouter.params
              const asset = name === undefined ? undefined : assets.get(name)
              if (asset === undefined) return yield* notFound
              return HttpServerResponse.uint8Array(asset.body, {
                contentType: asset.contentType,
                headers: { "cache-control": "public, max-age=31536000, immutable", ...securityHeaders }
              })
            })
          )
        })
      )
    : Layer.empty
