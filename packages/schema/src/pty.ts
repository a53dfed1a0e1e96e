export * as Pty from "./pty.js"

import { Schema } from "effect"
import { define } from "./event.js"
import { PtyID } from "./identifier.js"

/**
 * A PTY: a pseudo-terminal running one program (by default the user's shell) for a Location, driven
 * over `GET /api/pty/{ptyID}/connect` (a WebSocket). `status` is `running` until the program exits;
 * an exited PTY keeps its record, with `exitCode`, until it is removed. `pid` is the program's
 * process id: it leads the PTY's session and process group.
 */
export const PtyInfo = Schema.Struct({
  id: PtyID,
  title: Schema.String,
  command: Schema.String,
  args: Schema.Array(Schema.String),
  cwd: Schema.String,
  status: Schema.Literal("running", "exited"),
  pid: Schema.NonNegativeInt,
  exitCode: Schema.optional(Schema.NonNegativeInt)
}).annotations({ identifier: "Pty" })
export interface PtyInfo extends Schema.Schema.Type<typeof PtyInfo> {}

/**
 * `POST /api/pty`: what to run. Every field is optional: `command` defaults to the user's shell (run
 * as a login shell), `cwd` to the Location's directory (a relative one is taken from there), `title`
 * to `Terminal <last 4 characters of the id>`. `env` adds to the environment the program inherits
 * (see the PTY Environment for the order).
 */
export const PtyCreateInput = Schema.Struct({
  command: Schema.optional(Schema.String),
  args: Schema.optional(Schema.Array(Schema.String)),
  cwd: Schema.optional(Schema.String),
  title: Schema.optional(Schema.String),
  env: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
})
export interface PtyCreateInput extends Schema.Schema.Type<typeof PtyCreateInput> {}

/** The terminal's size in character cells. */
export const PtySize = Schema.Struct({
  rows: Schema.Int.pipe(Schema.positive()),
  cols: Schema.Int.pipe(Schema.positive())
})
export interface PtySize extends Schema.Schema.Type<typeof PtySize> {}

/** `PUT /api/pty/{ptyID}`: a new title, a new size, or both; an omitted field is left as it is. */
export const PtyUpdateInput = Schema.Struct({
  title: Schema.optional(Schema.String),
  size: Schema.optional(PtySize)
})
export interface PtyUpdateInput extends Schema.Schema.Type<typeof PtyUpdateInput> {}

/**
 * `POST /api/pty/{ptyID}/connect-token`: a ticket that opens one WebSocket to that PTY when sent as
 * the `ticket` query parameter of `connect`, in place of the `Authorization` header a browser cannot
 * set on a WebSocket. It is single-use and valid for `expires_in` seconds.
 */
export const PtyTicketConnectToken = Schema.Struct({
  ticket: Schema.String,
  expires_in: Schema.Int.pipe(Schema.positive())
}).annotations({ identifier: "PtyTicketConnectToken" })
export interface PtyTicketConnectToken extends Schema.Schema.Type<typeof PtyTicketConnectToken> {}

/*
 * The PTY events of the instance-wide live stream (`GET /api/event`), live-only (never replayed):
 *
 *   pty.created ─► pty.updated* ─► pty.exited? ─► pty.deleted
 */

/** A PTY was created (its program is running). */
export const PtyCreated = define("pty.created", { info: PtyInfo }, "PtyCreated")
export interface PtyCreated extends Schema.Schema.Type<typeof PtyCreated> {}

/** A PTY's title or size was changed. */
export const PtyUpdated = define("pty.updated", { info: PtyInfo }, "PtyUpdated")
export interface PtyUpdated extends Schema.Schema.Type<typeof PtyUpdated> {}

/** A PTY's program exited; the PTY is kept, with its exit code, until it is removed. */
export const PtyExited = define("pty.exited", { id: PtyID, exitCode: Schema.NonNegativeInt }, "PtyExited")
export interface PtyExited extends Schema.Schema.Type<typeof PtyExited> {}

/** A PTY was removed. */
export const PtyDeleted = define("pty.deleted", { id: PtyID }, "PtyDeleted")
export interface PtyDeleted extends Schema.Schema.Type<typeof PtyDeleted> {}
