import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { InstructionDiscovery } from "../../src/instructions/instruction-discovery.js"
import { Instructions } from "../../src/instructions/instructions.js"

const global = { path: "/home/u/.config/opencode/AGENTS.md", content: "Be brief.\n" }
const project = { path: "/w/AGENTS.md", content: "Use pnpm." }
const nested = { path: "/w/app/AGENTS.md", content: "Tabs, not spaces." }

const setup = (initial: InstructionDiscovery.Value) => {
  const state = { value: initial as Instructions.Observation<InstructionDiscovery.Value> }
  return { state, source: InstructionDiscovery.make(Effect.sync(() => state.value)) }
}

describe("InstructionDiscovery", () => {
  it.effect("InstructionDiscovery observes ambient instructions as one ordered aggregate Instruction Source.", () =>
    Effect.gen(function* () {
      const { source, state } = setup([global, project, nested])
      assert.deepStrictEqual(source.keys, [InstructionDiscovery.key])
      const baseline = (yield* Instructions.initialize(source)) as Instructions.Complete
      const text = baseline.text
      assert.isTrue(text.indexOf(global.path) < text.indexOf(project.path))
      assert.isTrue(text.indexOf(project.path) < text.indexOf(nested.path))
      for (const file of [global, project, nested]) assert.include(text, file.content.trimEnd())
      assert.strictEqual(baseline.applied.sources.length, 1)
      // The order is part of the value: a reordering is a change.
      state.value = [global, nested, project]
      assert.strictEqual((yield* Instructions.reconcile(source, baseline.applied))._tag, "Updated")
    })
  )

  it.effect(
    "When the aggregate discovered instruction set changes, its Instruction Update includes the complete current ordered set and supersedes the prior aggregate value; when no discovered instructions remain, the message states that previously loaded instructions no longer apply.",
    () =>
      Effect.gen(function* () {
        const { source, state } = setup([global, project])
        const baseline = (yield* Instructions.initialize(source)) as Instructions.Complete
        state.value = [global, { ...project, content: "Use pnpm 10." }]
        const update = (yield* Instructions.reconcile(source, baseline.applied)) as Instructions.Updated
        // the complete set, unchanged files included, in order, after a superseding statement
        assert.strictEqual(
          update.text,
          InstructionDiscovery.update([global, { ...project, content: "Use pnpm 10." }], [global, project])
        )
        assert.include(update.text, global.content.trimEnd())
        assert.isTrue(update.text.indexOf("replace") < update.text.indexOf(global.path))
        assert.isTrue(update.text.indexOf(global.path) < update.text.indexOf("Use pnpm 10."))

        state.value = []
        const none = (yield* Instructions.reconcile(source, update.applied)) as Instructions.Updated
        assert.strictEqual(none._tag, "Updated")
        assert.match(none.text, /no longer apply/)
        assert.notInclude(none.text, global.path)
        assert.deepStrictEqual(yield* Instructions.reconcile(source, none.applied), { _tag: "Unchanged" })

        // Files appearing after none were known are simply stated.
        state.value = [project]
        const again = (yield* Instructions.reconcile(source, none.applied)) as Instructions.Updated
        assert.strictEqual(again.text, InstructionDiscovery.baseline([project]))
      })
  )

  it.effect("an empty set says nothing in a baseline; discovery no longer composed retracts the files", () =>
    Effect.gen(function* () {
      const empty = setup([])
      const baseline = (yield* Instructions.initialize(empty.source)) as Instructions.Complete
      assert.strictEqual(baseline.text, "")
      const some = setup([global])
      const told = (yield* Instructions.initialize(some.source)) as Instructions.Complete
      const gone = (yield* Instructions.reconcile(Instructions.empty, told.applied)) as Instructions.Updated
      assert.match(gone.text, /no longer apply/)
    })
  )
})
