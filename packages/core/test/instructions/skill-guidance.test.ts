import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Instructions } from "../../src/instructions/instructions.js"
import { McpGuidance } from "../../src/instructions/mcp-guidance.js"
import { SkillGuidance } from "../../src/instructions/skill-guidance.js"

describe("SkillGuidance", () => {
  it.effect(
    "Selected-agent available-skill guidance is an Instruction Source composed explicitly by the runner. It lists only names and descriptions permitted for that agent; skill bodies and locations are exposed only through the permission-checked skill tool.",
    () =>
      Effect.gen(function* () {
        // The producer may hand over richer skill records; only names and descriptions reach the model.
        const skills = [
          { name: "pdf", description: "Work with PDF files", location: "/skills/pdf/SKILL.md", body: "SECRET BODY" },
          { name: "csv", description: "Work with CSV files", location: "/skills/csv/SKILL.md", body: "SECRET BODY" }
        ]
        const source = SkillGuidance.make(Effect.succeed(skills))
        const baseline = (yield* Instructions.initialize(source)) as Instructions.Complete
        assert.include(baseline.text, "<name>csv</name>")
        assert.include(baseline.text, "<description>Work with PDF files</description>")
        assert.isTrue(baseline.text.indexOf("csv") < baseline.text.indexOf("pdf"), "stable name order")
        assert.notInclude(baseline.text, "SKILL.md")
        assert.notInclude(baseline.text, "SECRET")
        assert.notInclude(JSON.stringify(baseline.applied), "SECRET")
        assert.notInclude(JSON.stringify(baseline.applied), "SKILL.md")
      })
  )

  it.effect(
    "An agent switch that changes selected-agent guidance produces an Instruction Update while preserving the current baseline.",
    () =>
      Effect.gen(function* () {
        const agents: Record<string, ReadonlyArray<SkillGuidance.Skill>> = {
          build: [{ name: "pdf", description: "Work with PDF files" }],
          plan: []
        }
        let agent = "build"
        const instructions = Instructions.combine(
          SkillGuidance.make(Effect.sync(() => agents[agent]!)),
          McpGuidance.make(Effect.succeed([{ name: "docs", instructions: "Search docs first." }]))
        )
        const baseline = (yield* Instructions.initialize(instructions)) as Instructions.Complete
        const baselineText = baseline.text
        agent = "plan"
        const update = (yield* Instructions.reconcile(instructions, baseline.applied)) as Instructions.Updated
        assert.strictEqual(update._tag, "Updated")
        assert.strictEqual(update.text, SkillGuidance.update([], agents.build!))
        assert.notInclude(update.text, "docs")
        assert.strictEqual(baseline.text, baselineText)
        // Reordering alone is never a change.
        agents.plan = [
          { name: "b", description: "B" },
          { name: "a", description: "A" }
        ]
        const listed = (yield* Instructions.reconcile(instructions, update.applied)) as Instructions.Updated
        agents.plan = [...agents.plan].reverse()
        assert.deepStrictEqual(yield* Instructions.reconcile(instructions, listed.applied), { _tag: "Unchanged" })
      })
  )

  it.effect(
    "skill guidance is omitted when the skill tool is disabled (absent) and retracted if it had been said",
    () =>
      Effect.gen(function* () {
        let enabled = true
        const source = SkillGuidance.make(
          Effect.sync(() => (enabled ? [{ name: "pdf", description: "PDFs" }] : Instructions.absent))
        )
        const baseline = (yield* Instructions.initialize(source)) as Instructions.Complete
        enabled = false
        const update = (yield* Instructions.reconcile(source, baseline.applied)) as Instructions.Updated
        assert.strictEqual(update.text, SkillGuidance.removed([{ name: "pdf", description: "PDFs" }]))
        assert.deepStrictEqual(yield* Instructions.initialize(source), {
          _tag: "Complete",
          text: "",
          applied: Instructions.emptyApplied
        })
      })
  )
})
