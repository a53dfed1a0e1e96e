import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { DateSource } from "../../src/instructions/date-source.js"
import { Instructions } from "../../src/instructions/instructions.js"

/** Host-local wall-clock time, as the TestClock's epoch milliseconds. */
const local = (year: number, month: number, day: number, hour: number) => new Date(year, month, day, hour).getTime()

describe("DateSource", () => {
  it.effect(
    "The date Instruction Source initially preserves host-local calendar-date behavior; a configured user timezone may replace that default later.",
    () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(local(2024, 0, 2, 0))
        const baseline = yield* Instructions.initialize(DateSource.instructions)
        assert.strictEqual(baseline._tag, "Complete")
        const { applied, text } = baseline as Instructions.Complete
        assert.include(text, new Date(2024, 0, 2).toDateString())
        // Still the same host-local calendar day at 23:00: no change.
        yield* TestClock.setTime(local(2024, 0, 2, 23))
        assert.deepStrictEqual(yield* Instructions.reconcile(DateSource.instructions, applied), { _tag: "Unchanged" })
        // Past local midnight: the new date.
        yield* TestClock.setTime(local(2024, 0, 3, 0))
        const update = yield* Instructions.reconcile(DateSource.instructions, applied)
        assert.strictEqual(update._tag, "Updated")
        assert.include((update as Instructions.Updated).text, new Date(2024, 0, 3).toDateString())
      })
  )

  it.effect("Example dialogue: the update emits the newly effective date, not the old one", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(local(2024, 5, 30, 12))
      const baseline = (yield* Instructions.initialize(DateSource.instructions)) as Instructions.Complete
      yield* TestClock.setTime(local(2024, 6, 1, 12))
      const update = (yield* Instructions.reconcile(DateSource.instructions, baseline.applied)) as Instructions.Updated
      assert.strictEqual(update.text, DateSource.update(new Date(2024, 6, 1).toDateString()))
      assert.notInclude(update.text, new Date(2024, 5, 30).toDateString())
      assert.notInclude(update.text, "Jun")
    })
  )
})
