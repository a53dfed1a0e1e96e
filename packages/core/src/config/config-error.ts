export * as ConfigErrors from "./config-error.js"

/**
 * Why the configuration could not be loaded. Every invalid config fails startup with one of these,
 * never a generic error later: a JSONC syntax error, a value of the wrong shape, a `{file:…}`
 * reference that cannot be read, a provider `npm` package that selects no wire protocol, or a model
 * reference naming no configured model.
 */

import { Schema } from "effect"

/**
 * `file` is the path of the offending config file (or `OPENCODE_CONFIG_CONTENT` for the inline
 * source); `line` and `column` are 1-based and point at the offending value (or key), 0 when the
 * failure has no position (e.g. an unreadable file); `key` is the dotted path of the offending key
 * when there is one (`agent.build.steps`); `reason` says what is wrong, starting with that key.
 * `message` is the whole story, `file:line:column: reason` (`file: reason` without a position), so
 * that even a generic error report (a `Cause.pretty` at startup) names the place.
 */
export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  file: Schema.String,
  line: Schema.Number,
  column: Schema.Number,
  message: Schema.String,
  reason: Schema.String,
  key: Schema.optional(Schema.String)
}) {}

/** A position in a config document: 1-based, or 0/0 when unknown. */
export interface Position {
  readonly file: string
  readonly line: number
  readonly column: number
}

/** A ConfigError at `position`, about `key` when given (the reason is then prefixed with it). */
export const at = (position: Position, reason: string, key?: string): ConfigError => {
  const keyed = key === undefined || key === "" ? undefined : key
  const full = keyed === undefined ? reason : `${keyed}: ${reason}`
  const where = position.line > 0 ? `${position.file}:${position.line}:${position.column}` : position.file
  return new ConfigError({
    file: position.file,
    line: position.line,
    column: position.column,
    message: `${where}: ${full}`,
    reason: full,
    ...(keyed === undefined ? {} : { key: keyed })
  })
}
