export * as CliConsole from "./cli-console.js"

import { type Console, Effect, FiberRef } from "effect"
import { Colour } from "./colour.js"

/*
 * The Console `opencode` runs its command line with. Two jobs:
 * - colour only where it may go (see Colour): @effect/cli renders help and errors with ANSI styles
 *   unconditionally, so escape sequences are removed from what goes to a stream without colour;
 * - each error reported once: while it parses, @effect/cli prints a usage error itself (several lines,
 *   styled) and then fails with it; the CLI's entry point reports that failure in its own one line, so
 *   what @effect/cli writes to stderr outside a command's handler is dropped. Inside a handler (see
 *   {@link inHandler}) stderr passes through.
 */

/** Set while a command's handler runs: its stderr output is its own and is kept. */
export const handlerRunning: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(false)

/** Runs a command's handler so that what it writes to stderr is kept. */
export const inHandler = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locally(effect, handlerRunning, true)

const text = (colour: boolean, args: ReadonlyArray<unknown>) =>
  colour ? args : args.map((arg) => (typeof arg === "string" ? Colour.strip(arg) : arg))

/** `base` with the two rules above, for streams whose colour is decided by `colour`. */
export const make = (base: Console.Console, colour: Colour.Streams): Console.Console => {
  const out =
    (write: (...args: ReadonlyArray<unknown>) => Effect.Effect<void>) =>
    (...args: ReadonlyArray<unknown>) =>
      write(...text(colour.stdout, args))
  const err =
    (write: (...args: ReadonlyArray<unknown>) => Effect.Effect<void>) =>
    (...args: ReadonlyArray<unknown>) =>
      Effect.flatMap(FiberRef.get(handlerRunning), (running) =>
        running ? write(...text(colour.stderr, args)) : Effect.void
      )
  return {
    ...base,
    log: out(base.log),
    info: out(base.info),
    debug: out(base.debug),
    error: err(base.error),
    warn: err(base.warn),
    trace: err(base.trace)
  }
}
