export * as PermissionHandlers from "./permission.js"

import { HttpApiBuilder } from "@effect/platform"
import { PermissionRequests } from "@opencode-ai/core"
import { Effect } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"

/** The `permissions` group: pending requests, their answers and the saved permissions (Core's PermissionRequests). */
export const layer = HttpApiBuilder.group(ServerApi.api, "permissions", (handlers) =>
  Effect.gen(function* () {
    const permissions = yield* PermissionRequests.Service
    return handlers
      .handle("listRequests", () =>
        Effect.gen(function* () {
          const location = yield* LocationMiddleware.CurrentLocation
          const data = yield* permissions.listIn({ directory: location.directory, workspaceID: location.workspaceID })
          return { location, data }
        })
      )
      .handle("listSaved", ({ urlParams }) => Effect.map(permissions.saved(urlParams.projectID), (data) => ({ data })))
      .handle("removeSaved", ({ path }) => permissions.removeSaved(path.id))
      .handle("create", ({ path, payload }) =>
        Effect.map(permissions.create(path.sessionID, payload), (data) => ({ data }))
      )
      .handle("list", ({ path }) => Effect.map(permissions.list(path.sessionID), (data) => ({ data })))
      .handle("get", ({ path }) => Effect.map(permissions.get(path.sessionID, path.requestID), (data) => ({ data })))
      .handle("reply", ({ path, payload }) => permissions.reply(path.sessionID, path.requestID, payload))
  })
)
