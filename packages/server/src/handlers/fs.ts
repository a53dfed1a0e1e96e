export * as FileSystemHandlers from "./fs.js"

import { HttpApiBuilder, HttpRouter, HttpServerResponse } from "@effect/platform"
import { type LocationFileError, LocationFiles } from "@opencode-ai/core"
import { Errors } from "@opencode-ai/schema"
import { Effect } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"

/**
 * A Location file failure on the wire: a missing path is a 404 `PathNotFoundError`; every other one
 * is a 400 `InvalidRequestError` about the `path`, its `kind` saying why (`outside_location`,
 * `not_a_file`, `not_a_directory`, `file_too_large`).
 */
export const wireError = (error: LocationFileError.Any): Errors.PathNotFoundError | Errors.InvalidRequestError => {
  const invalid = (kind: string) => new Errors.InvalidRequestError({ kind, field: "path", message: error.message })
  switch (error._tag) {
    case "Core/PathNotFound":
      return new Errors.PathNotFoundError({ path: error.path, message: error.message })
    case "Core/PathOutsideLocation":
      return invalid("outside_location")
    case "Core/PathNotAFile":
      return invalid("not_a_file")
    case "Core/PathNotADirectory":
      return invalid("not_a_directory")
    case "Core/FileTooLarge":
      return invalid("file_too_large")
  }
}

/**
 * The `file` group (`filesystem` in the contract): Core's LocationFiles over the requested Location,
 * read from disk at each request. `read` takes its path from the route's wildcard (the router has
 * already percent-decoded it) and answers the bytes with their media type, never cached and never
 * sniffed by a browser.
 */
export const layer = HttpApiBuilder.group(ServerApi.api, "file", (handlers) =>
  Effect.gen(function* () {
    const files = yield* LocationFiles.Service
    return handlers
      .handle("read", () =>
        Effect.gen(function* () {
          const location = yield* LocationMiddleware.CurrentLocation
          const route = yield* HttpRouter.RouteContext
          const requested = route.params["*"] ?? ""
          const content = yield* Effect.mapError(files.read(location, requested), wireError)
          return HttpServerResponse.uint8Array(content.bytes, {
            contentType: content.mime,
            headers: { "cache-control": "no-store", "x-content-type-options": "nosniff" }
          })
        })
      )
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const location = yield* LocationMiddleware.CurrentLocation
          const data = yield* Effect.mapError(files.list(location, urlParams.path), wireError)
          return { location, data }
        })
      )
      .handle("find", ({ urlParams }) =>
        Effect.gen(function* () {
          const location = yield* LocationMiddleware.CurrentLocation
          const data = yield* files.find(location, {
            query: urlParams.query,
            type: urlParams.type,
            limit: urlParams.limit
          })
          return { location, data }
        })
      )
  })
)
