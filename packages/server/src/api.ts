export * as ServerApi from "./api.js"

import { Api } from "@opencode-ai/protocol"
import { LocationMiddleware } from "./middleware/location.js"

/**
 * The authoritative OpenCode API: Protocol's endpoints and middleware placement with the server's
 * concrete Location key. Every handler group and the router are built against it; its OpenAPI document
 * and SDK Contract IR equal those of the clients' `Api.OpenCodeApi` (tested).
 */
export const api = Api.make({ location: LocationMiddleware.Key })
