export * as LogLevelOption from "./log-level-option.js"

import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { Effect, FiberRef, LogLevel, Option } from "effect"

/*
 * `--log-level`: the one minimum level of log lines, accepted before the subcommand
 * (`opencode --log-level debug serve`) and after it (`opencode serve --log-level DEBUG`), in any case.
 *
 * @effect/cli has a built-in `--log-level` as well (lower-case Effect level names only). Both spellings
 * end up as the fiber's minimum log level: the built-in sets it around the whole command, and this
 * option sets it around the handler (see {@link apply}); a handler reads the result with
 * {@link current}. The help lists only this option (the CLI hides the built-ins and describes them in
 * its epilog). Given twice, the built-in's reading wins, so give it once.
 */

const levels: ReadonlyArray<readonly [string, LogLevel.LogLevel]> = [
  ["trace", LogLevel.Trace],
  ["debug", LogLevel.Debug],
  ["info", LogLevel.Info],
  ["warn", LogLevel.Warning],
  ["warning", LogLevel.Warning],
  ["error", LogLevel.Error],
  ["fatal", LogLevel.Fatal],
  ["all", LogLevel.All],
  ["none", LogLevel.None]
]

/** The level `name` (any case) names: `debug`, `info`, `warn`, `error`, and Effect's others. */
export const parse = (name: string): Option.Option<LogLevel.LogLevel> =>
  Option.map(Option.fromNullable(levels.find(([level]) => level === name.toLowerCase())), ([, level]) => level)

/** The `--log-level` option; absent when not given. */
export const option: Options.Options<Option.Option<LogLevel.LogLevel>> = Options.text("log-level").pipe(
  Options.withPseudoName("LEVEL"),
  Options.mapEffect((name) =>
    Option.match(parse(name), {
      onSome: Effect.succeed,
      onNone: () =>
        Effect.fail(
          ValidationError.invalidValue(
            HelpDoc.p(`--log-level ${name}: expected debug, info, warn or error (or trace, fatal, all, none)`)
          )
        )
    })
  ),
  Options.optional,
  Options.withDescription(
    "Minimum level of log lines: debug, info (the default), warn or error, in any case; also trace, fatal, all, none. Accepted before or after the command name."
  )
)

/** Runs `effect` with the given level as the minimum log level; unchanged when none was given. */
export const apply =
  (level: Option.Option<LogLevel.LogLevel>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Option.match(level, {
      onNone: () => effect,
      onSome: (value) => Effect.locally(effect, FiberRef.currentMinimumLogLevel, value)
    })

/** The minimum log level in effect: as `--log-level` set it, else INFO (Effect's default). */
export const current: Effect.Effect<LogLevel.LogLevel> = FiberRef.get(FiberRef.currentMinimumLogLevel)
