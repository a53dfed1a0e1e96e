import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Instructions } from "../../src/instructions/instructions.js"
import { ReferenceGuidance } from "../../src/instructions/reference-guidance.js"

describe("ReferenceGuidance", () => {
  it.effect("reference guidance lists described references sorted by name, only when there are any", () =>
    Effect.gen(function* () {
      const none = (yield* Instructions.initialize(ReferenceGuidance.make(Effect.succeed([])))) as Instructions.Complete
      assert.strictEqual(none.text, "")
      const some = (yield* Instructions.initialize(
        ReferenceGuidance.make(
          Effect.succeed([
            { name: "zeta", path: "/refs/zeta", description: "Z docs" },
            { name: "alpha", path: "/refs/alpha", description: "A docs" }
          ])
        )
      )) as Instructions.Complete
      assert.match(
        some.text,
        /<available_references>\n {2}<reference>\n {4}<name>alpha<\/name>\n {4}<path>\/refs\/alpha<\/path>\n {4}<description>A docs<\/description>\n {2}<\/reference>\n {2}<reference>\n {4}<name>zeta<\/name>/
      )
    })
  )
})
