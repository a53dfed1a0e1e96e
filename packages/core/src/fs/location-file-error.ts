export * as LocationFileError from "./location-file-error.js"

/**
 * The expected failures of reading and listing files of a Location (`LocationFiles`). Each carries
 * the `path` as the request named it and a human-readable `message`; none reveals anything about a
 * file outside the Location beyond the fact that the path leads out of it.
 */

import { Schema } from "effect"

/**
 * The path leads out of the Location: lexically (`..`, an absolute path elsewhere) or through a
 * symlink whose real target lies outside the Location's real directory.
 */
export class OutsideLocation extends Schema.TaggedError<OutsideLocation>()("Core/PathOutsideLocation", {
  path: Schema.String,
  message: Schema.String
}) {}

/** Nothing exists at the path (a dangling symlink inside the Location included). */
export class NotFound extends Schema.TaggedError<NotFound>()("Core/PathNotFound", {
  path: Schema.String,
  message: Schema.String
}) {}

/** A read names something that is not a regular file (a directory, a socket, a device). */
export class NotAFile extends Schema.TaggedError<NotAFile>()("Core/PathNotAFile", {
  path: Schema.String,
  message: Schema.String
}) {}

/** A listing names something that is not a directory. */
export class NotADirectory extends Schema.TaggedError<NotADirectory>()("Core/PathNotADirectory", {
  path: Schema.String,
  message: Schema.String
}) {}

/** A read names a file larger than the read limit; `size` and `limit` are in bytes. */
export class TooLarge extends Schema.TaggedError<TooLarge>()("Core/FileTooLarge", {
  path: Schema.String,
  size: Schema.Number,
  limit: Schema.Number,
  message: Schema.String
}) {}

/** Any failure of a Location file operation. */
export const Any = Schema.Union(OutsideLocation, NotFound, NotAFile, NotADirectory, TooLarge)
export type Any = OutsideLocation | NotFound | NotAFile | NotADirectory | TooLarge
