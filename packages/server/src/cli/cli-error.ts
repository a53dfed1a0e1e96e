export * as CliError from "./cli-error.js"

import { HelpDoc, type ValidationError } from "@effect/cli"
import { Effect, Schema } from "effect"
import { Colour } from "./colour.js"
import { ExitCode } from "./exit-code.js"

/**
 * An expected failure of a command, as the user reads it: `message` says what went wrong, `hint`
 * what to do about it, and `exitCode` is the documented status (see ExitCode). The entry point prints
 * it as one line (see {@link line}) and exits with that status; nothing else is printed for it.
 * A command's handler turns its own expected failures into this; anything else is a defect.
 */
export class Failure extends Schema.TaggedError<Failure>()("Cli/Failure", {
  message: Schema.String,
  hint: Schema.optional(Schema.String),
  exitCode: Schema.Int
}) {}

/** `text` on one line: line breaks and runs of blanks become single spaces, escape sequences go. */
const oneLine = (text: string) => Colour.strip(text).replace(/\s+/g, " ").trim()

/** The line printed for a failure: `opencode: <message> (<hint>)`, always one line. */
export const line = (failure: Failure): string =>
  `opencode: ${oneLine(failure.message)}${failure.hint === undefined ? "" : ` (${oneLine(failure.hint)})`}`

/** A usage error @effect/cli found while parsing (unknown flag, bad value…), with the usage hint. */
export const usage = (error: ValidationError.ValidationError): Failure => {
  const said = HelpDoc.isEmpty(error.error) ? "" : oneLine(HelpDoc.toAnsiText(error.error))
  return new Failure({
    message: said === "" ? "invalid command line" : said,
    hint: "see --help",
    exitCode: ExitCode.usage
  })
}

/** Fails with a {@link Failure}: `message` (and `hint`) printed in one line, then the exit status `exitCode`. */
export const fail = (exitCode: number, message: string, hint?: string) =>
  Effect.fail(new Failure({ message, exitCode, ...(hint === undefined ? {} : { hint }) }))

/** The first line of an error's message. */
export const describe = (error: unknown): string => {
  const message =
    error instanceof Error
      ? error.message
      : typeof error === "object" && error !== null && "message" in error
        ? String((error as { message: unknown }).message)
        : String(error)
  return message.split("\n")[0] ?? ""
}

/**
 * A command's program with every expected failure as a {@link Failure}: one that is not already one
 * becomes "failed" (status 1) with its message's first line. Defects and interruption pass unchanged.
 */
export const report = <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<void, Failure, R> =>
  program.pipe(
    Effect.asVoid,
    Effect.mapError((error) =>
      error instanceof Failure ? error : new Failure({ message: describe(error), exitCode: ExitCode.failed })
    )
  )
