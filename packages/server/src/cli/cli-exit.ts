export * as CliExit from "./cli-exit.js"

import { Cause, Console, Effect, Schema } from "effect"

/**
 * The exit statuses of `opencode run` and `opencode session …`:
 *
 * | code | meaning                                                                              |
 * |------|--------------------------------------------------------------------------------------|
 * | 0    | done (for `run`: the turn ended normally)                                            |
 * | 1    | the turn failed (provider error, failed Step), or an unexpected error               |
 * | 2    | bad usage or input: conflicting flags, unknown session, invalid configuration       |
 * | 3    | `run`: a permission was refused (`--deny`, answered no, or no terminal to ask)      |
 * | 4    | the server could not be reached, or refused the credentials                          |
 * | 130  | interrupted with Ctrl-C (the session's running Step was interrupted first)           |
 */
export const code = {
  ok: 0,
  failed: 1,
  usage: 2,
  denied: 3,
  unreachable: 4,
  interrupted: 130
} as const
export type Code = (typeof code)[keyof typeof code]

/** An expected failure of a CLI command: `message` is printed on one line, then the process exits with `code`. */
export class CliFailure extends Schema.TaggedError<CliFailure>()("Cli/Failure", {
  code: Schema.Number,
  message: Schema.String
}) {}

export const fail = (exitCode: Code, message: string) => Effect.fail(new CliFailure({ code: exitCode, message }))

/**
 * Sets the process's exit status. It is also re-applied when the process exits, because the runtime's
 * teardown exits with 0 after an interruption (Ctrl-C) and that would otherwise replace it.
 */
export const set = (exitCode: number) =>
  Effect.sync(() => {
    process.exitCode = exitCode
    process.once("exit", () => {
      process.exitCode = exitCode
    })
  })

/** The message of an unexpected failure, on one line, without a stack. */
export const describe = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  const message =
    error instanceof Error
      ? error.message
      : typeof error === "object" && error !== null && "message" in error
        ? String((error as { message: unknown }).message)
        : String(error)
  return message.split("\n")[0] ?? ""
}

/**
 * Runs a command's program and turns every way it can end into one line on stderr and an exit status:
 * a CliFailure prints `opencode: <message>` and exits with its code; any other failure or defect exits
 * with 1. Interruption stays interruption (the program decides its own status for it). Never fails.
 */
export const report = <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<void, never, R> =>
  program.pipe(
    Effect.asVoid,
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
      const failure = Cause.failureOption(cause)
      if (failure._tag === "Some" && failure.value instanceof CliFailure) {
        return Effect.zipRight(Console.error(`opencode: ${failure.value.message}`), set(failure.value.code))
      }
      return Effect.zipRight(Console.error(`opencode: ${describe(cause)}`), set(code.failed))
    })
  )
