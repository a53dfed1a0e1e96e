export * as DateSource from "./date-source.js"

/**
 * The date Instruction Source (`core/date`): the host-local calendar date. The value is the date
 * alone, so the source changes once a day, and the update states only the new date (never the old
 * one). A configured user timezone may later replace the host-local default.
 */

import { Clock, Effect, Schema } from "effect"
import { Instructions } from "./instructions.js"

export const key: Instructions.Key = Instructions.key("core/date")

/** A calendar date as `Date.prototype.toDateString` spells it in the host's local time, e.g. `Tue Jan 02 2024`. */
export const Value = Schema.String.annotations({ identifier: "DateInstruction" })

/** The host-local calendar date of `now`. */
export const calendarDate = (now: Date): string => now.toDateString()

export const baseline = (date: string): string => `Current date: ${date}`

/** States only the newly effective date. */
export const update = (date: string): string => `The current date is now ${date}.`

/** Reads the date from the Effect `Clock` (so tests drive it with `TestClock`). */
export const load: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, (millis) =>
  calendarDate(new Date(millis))
)

/** The date source. */
export const instructions: Instructions.Instructions<never> = Instructions.make({
  key,
  codec: Value,
  load,
  baseline,
  update,
  immediate: true
})
