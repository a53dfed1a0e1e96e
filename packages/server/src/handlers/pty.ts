export * as PtyHandlers from "./pty.js"

import * as nodePath from "node:path"
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Ptys, Traced } from "@opencode-ai/core"
import { Errors } from "@opencode-ai/schema"
import { Effect, Option } from "effect"
import { ServerApi } from "../api.js"
import { LocationMiddleware } from "../middleware/location.js"
import { PtyEnvironment } from "../pty-environment.js"
import { PtySocket } from "../pty-socket.js"
import { PtyTickets } from "../pty-tickets.js"

const notUpgrade = new Errors.InvalidRequestError({
  message:
    "GET /api/pty/{ptyID}/connect is a WebSocket upgrade: send `Connection: Upgrade` and `Upgrade: websocket`. The embedded host has no socket and cannot serve it.",
  kind: "upgrade"
})

/**
 * The `pty` group over Core's Ptys, each operation in the requested Location (a PTY of another
 * Location is a 404):
 * - `create` asks the host's PTY Environment for its overlay (Location directory, resolved `cwd`);
 * - `connectToken` issues a single-use ticket (PtyTickets) bound to the PTY and the Location;
 * - `connect` checks, in order: the Location (400), the PTY (404), the cursor (400), that the
 *   request is a WebSocket upgrade (400; the embedded host never is), then spends the ticket if
 *   one is given (403 when it is not valid for this PTY; without one, the `Authorization` middleware
 *   already required credentials), and only then upgrades and runs the connection (PtySocket).
 */
export const layer = HttpApiBuilder.group(ServerApi.api, "pty", (handlers) =>
  Effect.gen(function* () {
    const ptys = yield* Ptys.Service
    const environment = yield* PtyEnvironment.Service
    const tickets = yield* PtyTickets.Service
    return handlers
      .handle(
        "list",
        Traced.fn("PtyHandlers.list")(function* () {
          const location = yield* LocationMiddleware.CurrentLocation
          return { location, data: [...(yield* ptys.list(location.directory))] }
        })
      )
      .handle(
        "create",
        Traced.fn("PtyHandlers.create")(function* ({ payload }) {
          const location = yield* LocationMiddleware.CurrentLocation
          const cwd = nodePath.resolve(location.directory, payload.cwd ?? ".")
          const overlay = yield* environment.get({ directory: location.directory, cwd })
          const data = yield* ptys.create({ ...payload, directory: location.directory, overlay })
          return { location, data }
        })
      )
      .handle(
        "get",
        Traced.fn("PtyHandlers.get")(function* ({ path }) {
          const location = yield* LocationMiddleware.CurrentLocation
          return { location, data: yield* ptys.get(location.directory, path.ptyID) }
        })
      )
      .handle(
        "update",
        Traced.fn("PtyHandlers.update")(function* ({ path, payload }) {
          const location = yield* LocationMiddleware.CurrentLocation
          return { location, data: yield* ptys.update(location.directory, path.ptyID, payload) }
        })
      )
      .handle(
        "remove",
        Traced.fn("PtyHandlers.remove")(function* ({ path }) {
          const location = yield* LocationMiddleware.CurrentLocation
          yield* ptys.remove(location.directory, path.ptyID)
        })
      )
      .handle(
        "connectToken",
        Traced.fn("PtyHandlers.connectToken")(function* ({ path }) {
          const location = yield* LocationMiddleware.CurrentLocation
          yield* ptys.get(location.directory, path.ptyID)
          return { location, data: yield* tickets.issue({ ptyID: path.ptyID, directory: location.directory }) }
        })
      )
      .handleRaw(
        "connect",
        Traced.fn("PtyHandlers.connect")(function* ({ path, urlParams, request }) {
          const location = yield* LocationMiddleware.CurrentLocation
          yield* ptys.get(location.directory, path.ptyID)
          const cursor = Ptys.parseCursor(urlParams.cursor)
          if (urlParams.cursor !== undefined && Option.isNone(cursor)) {
            return yield* new Errors.InvalidRequestError({
              message: "cursor: Expected -1 or an output offset (a non-negative integer)",
              kind: "validation",
              field: "cursor"
            })
          }
          if (request.headers.upgrade?.toLowerCase() !== "websocket") return yield* notUpgrade
          if (urlParams.ticket !== undefined) {
            const valid = yield* tickets.consume(urlParams.ticket, {
              ptyID: path.ptyID,
              directory: location.directory
            })
            if (!valid) {
              return yield* new Errors.ForbiddenError({
                message: "The PTY connect ticket is not valid: it was spent, has expired, or is for another PTY"
              })
            }
          }
          const socket = yield* Effect.mapError(request.upgrade, () => notUpgrade)
          yield* Effect.scoped(
            Effect.flatMap(ptys.attach(location.directory, path.ptyID, Option.getOrUndefined(cursor)), (attachment) =>
              PtySocket.serve(socket, attachment)
            )
          )
          return HttpServerResponse.empty()
        })
      )
  })
)
