export * as StartupError from "./startup-error.js"

import type { HttpServerError } from "@effect/platform"
import { Schema } from "effect"

/*
 * The expected ways `opencode serve` fails to start, besides an invalid configuration (`ConfigError`,
 * from Core): each names what could not be used and why, so that the CLI can say it in one line with
 * a hint and a distinct exit code. Anything else that stops start-up is a defect.
 */

/**
 * The listener could not bind `hostname:port`. `code` is the system error code when there is one:
 * `EADDRINUSE` (the port is taken), `EACCES` (a privileged port), `EADDRNOTAVAIL` (no interface has
 * that address), `ENOTFOUND` / `EAI_AGAIN` (the hostname does not resolve); `message` is the system's
 * own words.
 */
export class ListenError extends Schema.TaggedError<ListenError>()("Server/ListenError", {
  hostname: Schema.String,
  port: Schema.Number,
  code: Schema.optional(Schema.String),
  message: Schema.String
}) {}

/**
 * The data directory (`kind: "directory"`) or the database file and its directory (`kind: "database"`)
 * cannot be created, read or written, checked before anything is opened. `reason` is the system's
 * words (e.g. `ENOTDIR: not a directory, mkdir '…'`); `message` is the whole story.
 */
export class DataDirError extends Schema.TaggedError<DataDirError>()("Server/DataDirError", {
  kind: Schema.Literal("directory", "database"),
  path: Schema.String,
  reason: Schema.String,
  message: Schema.String
}) {}

export type Any = ListenError | DataDirError

/** The ListenError for a failed `listen` (the platform reports it as a ServeError around Node's error). */
export const listenFailed = (
  error: HttpServerError.ServeError,
  listener: { readonly hostname: string; readonly port: number }
) => {
  const cause = error.cause as (Error & { code?: unknown }) | undefined
  return new ListenError({
    hostname: listener.hostname,
    port: listener.port,
    ...(typeof cause?.code === "string" ? { code: cause.code } : {}),
    message: cause?.message ?? error.message
  })
}
