export * as Middleware from "./middleware.js"

import { HttpApiMiddleware } from "@effect/platform"
import { UnauthorizedError } from "./errors.js"

/**
 * Guards every route. The server supplies the implementation (Basic auth when a password is
 * configured, a pass-through otherwise); clients never implement it.
 */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("@opencode-ai/protocol/Authorization", {
  failure: UnauthorizedError
}) {}
