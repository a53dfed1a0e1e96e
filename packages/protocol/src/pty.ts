export * as PtyGroup from "./pty.js"

import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Errors, Identifier, Location, Pty } from "@opencode-ai/schema"
import { Schema } from "effect"
import { ClientProjection } from "./client-projection.js"
import { documentLocationQuery, LocationQuery } from "./location.js"

const strict = { parseOptions: { onExcessProperty: "error" } } as const

export const PtyPath = Schema.Struct({ ptyID: Identifier.PtyID })

/** The query parameter of `connect` that carries a connect ticket. */
export const ticketParameter = "ticket"

/** The `connect` route, for the middleware that lets a ticket stand in for the `Authorization` header. */
export const connectRoute = /^\/api\/pty\/[^/]+\/connect$/

/**
 * `connect`'s query: the Location (`location[directory]`, `location[workspace]`, as flat keys on the
 * wire like every Location query), `cursor` (where the replay starts: an output offset from an
 * earlier meta frame, `-1` for none, default everything retained) and `ticket` (see `connectToken`).
 * Decoded, it is `{ location?: { directory?, workspace? }, cursor?, ticket? }`.
 */
export const ConnectQuery = Schema.transform(
  Schema.Struct({
    "location[directory]": Schema.optional(Schema.String),
    "location[workspace]": Schema.optional(Schema.String),
    cursor: Schema.optional(Schema.String),
    ticket: Schema.optional(Schema.String)
  }),
  Schema.Struct({
    location: Schema.optional(
      Schema.Struct({ directory: Schema.optional(Schema.String), workspace: Schema.optional(Schema.String) })
    ),
    cursor: Schema.optional(Schema.String),
    ticket: Schema.optional(Schema.String)
  }),
  {
    strict: true,
    decode: ({ cursor, ticket, ...flat }) => {
      const { location } = Schema.decodeSync(LocationQuery)(flat)
      return {
        ...(location === undefined ? {} : { location }),
        ...(cursor === undefined ? {} : { cursor }),
        ...(ticket === undefined ? {} : { ticket })
      }
    },
    encode: ({ location, cursor, ticket }) => ({
      ...Schema.encodeSync(LocationQuery)(location === undefined ? {} : { location }),
      ...(cursor === undefined ? {} : { cursor }),
      ...(ticket === undefined ? {} : { ticket })
    })
  }
)

const Listed = Schema.Struct({ location: Location.LocationInfo, data: Schema.Array(Pty.PtyInfo) })
const One = Schema.Struct({ location: Location.LocationInfo, data: Pty.PtyInfo })
const Ticket = Schema.Struct({ location: Location.LocationInfo, data: Pty.PtyTicketConnectToken })

/** `GET /api/pty`: the PTYs of the Location, running and exited, oldest first. */
export const list = HttpApiEndpoint.get("list", "/api/pty")
  .setUrlParams(LocationQuery)
  .addSuccess(Listed)
  .annotate(OpenApi.Identifier, "v2.pty.list")
  .annotate(OpenApi.Summary, "List PTYs")
  .annotate(
    OpenApi.Description,
    "The PTYs of the requested Location, oldest first; an exited PTY is listed, with its exit code, until it is removed."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/**
 * `POST /api/pty`: starts a program (default: the user's shell) in a new pseudo-terminal for the
 * Location. A `cwd` that is not a directory, or a `command` that cannot be found, is a 400.
 */
export const create = HttpApiEndpoint.post("create", "/api/pty")
  .setUrlParams(LocationQuery)
  .setPayload(Pty.PtyCreateInput.annotations(strict))
  .addSuccess(One)
  .annotate(OpenApi.Identifier, "v2.pty.create")
  .annotate(OpenApi.Summary, "Create a PTY")
  .annotate(
    OpenApi.Description,
    "Starts a program (default: the user's login shell) in a new pseudo-terminal, in `cwd` (default: the Location's directory), with `env` added to its environment."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/** `GET /api/pty/{ptyID}`: one PTY of the Location. */
export const get = HttpApiEndpoint.get("get", "/api/pty/:ptyID")
  .setPath(PtyPath)
  .setUrlParams(LocationQuery)
  .addSuccess(One)
  .addError(Errors.PtyNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.pty.get")
  .annotate(OpenApi.Summary, "Get a PTY")
  .annotate(OpenApi.Description, "One PTY of the requested Location, with its exit code once it has exited.")
  .annotate(OpenApi.Transform, documentLocationQuery)

/** `PUT /api/pty/{ptyID}`: renames and/or resizes a PTY. */
export const update = HttpApiEndpoint.put("update", "/api/pty/:ptyID")
  .setPath(PtyPath)
  .setUrlParams(LocationQuery)
  .setPayload(Pty.PtyUpdateInput.annotations(strict))
  .addSuccess(One)
  .addError(Errors.PtyNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.pty.update")
  .annotate(OpenApi.Summary, "Update a PTY")
  .annotate(
    OpenApi.Description,
    "Sets the title and/or the terminal size (rows and columns; the program receives SIGWINCH). A size given to an exited PTY is ignored."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/** `DELETE /api/pty/{ptyID}`: kills the PTY's program and everything it started, and forgets it. */
export const remove = HttpApiEndpoint.del("remove", "/api/pty/:ptyID")
  .setPath(PtyPath)
  .setUrlParams(LocationQuery)
  .addSuccess(Schema.Void, { status: 204 })
  .addError(Errors.PtyNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.pty.remove")
  .annotate(OpenApi.Summary, "Remove a PTY")
  .annotate(
    OpenApi.Description,
    "Kills the PTY's program and every process it started (its whole session, background jobs included), closes its connections and forgets it."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

/**
 * `POST /api/pty/{ptyID}/connect-token`: a single-use, short-lived ticket for `connect`. The 403 is
 * the contract's; this server refuses foreign web pages on every route already (the origin policy),
 * so the operation has no refusal of its own.
 */
export const connectToken = HttpApiEndpoint.post("connectToken", "/api/pty/:ptyID/connect-token")
  .setPath(PtyPath)
  .setUrlParams(LocationQuery)
  .addSuccess(Ticket)
  .addError(Errors.ForbiddenError, { status: 403 })
  .addError(Errors.PtyNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.pty.connectToken")
  .annotate(OpenApi.Summary, "Get a PTY connect ticket")
  .annotate(
    OpenApi.Description,
    "A ticket that opens one WebSocket to this PTY when sent as the `ticket` query parameter of `connect`, instead of the `Authorization` header (which a browser cannot set on a WebSocket). It is valid once, for `expires_in` seconds."
  )
  .annotate(OpenApi.Transform, documentLocationQuery)

const documentWebSocket = (operation: Record<string, unknown>): Record<string, unknown> => ({
  ...operation,
  "x-websocket": true
})

/**
 * `GET /api/pty/{ptyID}/connect`: a WebSocket upgrade. After the upgrade the server sends the
 * retained output from `cursor` (text frames of at most 64 KiB), then one meta frame (a binary frame:
 * a 0x00 byte, then the UTF-8 JSON `{"cursor": <offset of the end of the output>}`), then the
 * output as it comes; every text or binary (UTF-8) frame the client sends is typed into the
 * terminal. The socket closes (1000) when the program exits or the PTY is removed. Authorized by
 * the `Authorization` header or by a `ticket` (403 when spent, expired or for another PTY); a request
 * that is not a WebSocket upgrade is a 400.
 */
export const connect = HttpApiEndpoint.get("connect", "/api/pty/:ptyID/connect")
  .setPath(PtyPath)
  .setUrlParams(ConnectQuery)
  .addSuccess(Schema.Boolean)
  .addError(Errors.ForbiddenError, { status: 403 })
  .addError(Errors.PtyNotFoundError, { status: 404 })
  .annotate(OpenApi.Identifier, "v2.pty.connect")
  .annotate(OpenApi.Summary, "Connect to a PTY")
  .annotate(
    OpenApi.Description,
    "A WebSocket upgrade: the PTY's retained output from `cursor` (default: all of it, `-1`: none), a meta frame (a 0x00 byte, then JSON `{cursor}`), then its live output; frames the client sends are typed into the terminal. Authorize with the `Authorization` header or a `ticket` from `connect-token`."
  )
  .annotate(OpenApi.Transform, documentWebSocket)

export const group = HttpApiGroup.make("pty")
  .add(list)
  .add(create)
  .add(get)
  .add(update)
  .add(remove)
  .add(connectToken)
  .add(connect)
  .annotate(OpenApi.Title, "pty")
  .annotate(ClientProjection.Namespace, "ptys")
