import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { InstructionEntry } from "../../src/instructions/instruction-entry.js"
import { Instructions } from "../../src/instructions/instructions.js"

const name = Schema.decodeSync(InstructionEntry.Name)

describe("InstructionEntry", () => {
  it.effect(
    "InstructionEntry stores API-managed per-Session JSON values. Each entry contributes one api/<key> Instruction Source, so adding, replacing, or removing an entry is reconciled at the next Safe Step Boundary.",
    () =>
      Effect.gen(function* () {
        const style = { name: name("style"), value: "Answer in French." }
        const limits = { name: name("limits"), value: { maxFiles: 3, paths: ["src"] } }
        const first = InstructionEntry.instructions([style])
        assert.deepStrictEqual(first.keys, [Instructions.key("api/style")])
        const baseline = (yield* Instructions.initialize(first)) as Instructions.Complete

        // add
        const added = (yield* Instructions.reconcile(
          InstructionEntry.instructions([style, limits]),
          baseline.applied
        )) as Instructions.Updated
        assert.strictEqual(added.text, InstructionEntry.baseline(limits.name)(limits.value))
        // replace
        const replaced = (yield* Instructions.reconcile(
          InstructionEntry.instructions([{ ...style, value: "Answer in German." }, limits]),
          added.applied
        )) as Instructions.Updated
        assert.include(replaced.text, "Answer in German.")
        assert.notInclude(replaced.text, "French")
        assert.notInclude(replaced.text, "maxFiles")
        // remove
        const removed = (yield* Instructions.reconcile(
          InstructionEntry.instructions([limits]),
          replaced.applied
        )) as Instructions.Updated
        assert.strictEqual(removed.text, InstructionEntry.removed(style.name))
        assert.deepStrictEqual(
          removed.applied.sources.map((source) => source.key),
          [Instructions.key("api/limits")]
        )
      })
  )

  it.effect("InstructionEntry: entries render as mechanism-neutral <context> blocks", () =>
    Effect.gen(function* () {
      const baseline = (yield* Instructions.initialize(
        InstructionEntry.instructions([
          { name: name("limits"), value: { maxFiles: 3 } },
          { name: name("a"), value: "x" }
        ])
      )) as Instructions.Complete
      assert.strictEqual(
        baseline.text,
        ['<context name="a">\nx\n</context>', '<context name="limits">\n{\n  "maxFiles": 3\n}\n</context>'].join(
          Instructions.separator
        )
      )
      assert.notMatch(baseline.text, /api|entry|endpoint/i)
    })
  )

  it("entry names are slash-free and match ^[a-z0-9][a-z0-9._-]*$", () => {
    for (const good of ["a", "style", "x.y_z-1"]) assert.isTrue(Schema.is(InstructionEntry.Name)(good))
    for (const bad of ["", "a/b", "Style", "-a", "a b"]) assert.isFalse(Schema.is(InstructionEntry.Name)(bad))
  })
})
