import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { EnvironmentSource } from "../../src/instructions/environment-source.js"
import { Instructions } from "../../src/instructions/instructions.js"

describe("EnvironmentSource", () => {
  it.effect(
    "renders working directory, workspace root, git yes/no and platform; an update states only the new environment",
    () =>
      Effect.gen(function* () {
        let value: EnvironmentSource.Value = { directory: "/w/app", root: "/w", git: true, platform: "linux" }
        const source = EnvironmentSource.make(Effect.sync(() => value))
        assert.deepStrictEqual(source.keys, [EnvironmentSource.key])
        const baseline = yield* Instructions.initialize(source)
        assert.strictEqual(baseline._tag, "Complete")
        const text = (baseline as Instructions.Complete).text
        assert.match(text, /^.+\n<env>\n {2}.*\/w\/app\n {2}.*\/w\n {2}.*yes\n {2}.*linux\n<\/env>$/)

        value = { ...value, directory: "/elsewhere", git: false }
        const update = yield* Instructions.reconcile(source, (baseline as Instructions.Complete).applied)
        assert.strictEqual(update._tag, "Updated")
        const updateText = (update as Instructions.Updated).text
        assert.include(updateText, "/elsewhere")
        assert.include(updateText, ": no")
        assert.notInclude(updateText, "/w/app")
      })
  )
})
