export * as RequestContext from "./request-context.js"

import { Etag, FileSystem, HttpPlatform, Path } from "@effect/platform"
import { Context } from "effect"

/**
 * What the API's app asks of the context a request's fiber starts from: the platform's services
 * (`HttpRouter.DefaultServices`, for file responses). Its handlers run with the services their groups
 * were built with, merged into the request's context by `HttpApiBuilder`, so a request needs no more.
 */
export type Services = HttpPlatform.HttpPlatform | Etag.Generator | FileSystem.FileSystem | Path.Path

/**
 * `context` narrowed to {@link Services}. A host's context holds every service of its Core (some 75),
 * and a request's fiber copies its context each time a span or a service is added to it; starting
 * from these few keeps each copy small.
 */
export const pick = (context: Context.Context<Services>): Context.Context<Services> =>
  Context.pick(HttpPlatform.HttpPlatform, Etag.Generator, FileSystem.FileSystem, Path.Path)(context)
