import * as fs from "node:fs"
import * as path from "node:path"
import { it } from "@effect/vitest"
import { Errors, Identifier } from "@opencode-ai/schema"
import { Deferred, Effect, Exit } from "effect"
import { describe, expect } from "vitest"
import { DateSource } from "../../src/instructions/date-source.js"
import { EnvironmentSource } from "../../src/instructions/environment-source.js"
import { InstructionCheckpoint } from "../../src/instructions/instruction-checkpoint.js"
import { InstructionDiscovery } from "../../src/instructions/instruction-discovery.js"
import { InstructionEntries } from "../../src/instructions/instruction-entries.js"
import { InstructionEntry } from "../../src/instructions/instruction-entry.js"
import { Instructions } from "../../src/instructions/instructions.js"
import { McpGuidance } from "../../src/instructions/mcp-guidance.js"
import { NestedInstructions } from "../../src/instructions/nested-instructions.js"
import { ReferenceGuidance } from "../../src/instructions/reference-guidance.js"
import { SessionInstructions } from "../../src/instructions/session-instructions.js"
import { SkillGuidance } from "../../src/instructions/skill-guidance.js"
import { Sessions } from "../../src/session/sessions.js"
import { world, write } from "./world.js"

describe("SessionInstructions", () => {
  it.scoped(
    "The runner explicitly loads and combines instruction built-ins, InstructionDiscovery, selected-agent skill guidance, reference guidance, MCP guidance, and InstructionEntry values. There is no instruction registry.",
    () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* write(path.join(w.app, "AGENTS.md"), "App rule.")
        fs.mkdirSync(path.join(w.root, ".git"))
        yield* Effect.gen(function* () {
          const session = yield* (yield* Sessions.Service).create({ location: w.location })
          const entries = yield* InstructionEntries.Service
          yield* entries.put(session.id, "zeta", "last by name")
          yield* entries.put(session.id, "alpha", "first by name")

          const instructions = yield* SessionInstructions.forSession(session.id, w.location, {
            agentSkills: Effect.succeed([{ name: "pdf", description: "Work with PDFs" }]),
            references: Effect.succeed([{ name: "lib", path: "/lib", description: "The library" }]),
            mcp: Effect.succeed([{ name: "docs", instructions: "Search first." }])
          })
          expect(instructions.keys).toEqual([
            EnvironmentSource.key,
            DateSource.key,
            InstructionDiscovery.key,
            NestedInstructions.key,
            ReferenceGuidance.key,
            McpGuidance.key,
            SkillGuidance.key,
            InstructionEntry.sourceKey("alpha" as InstructionEntry.Name),
            InstructionEntry.sourceKey("zeta" as InstructionEntry.Name)
          ])
          const baseline = (yield* Instructions.initialize(instructions)) as Instructions.Complete
          expect(baseline.text).toContain(`Current directory: ${w.app}`)
          expect(baseline.text).toContain(`Workspace root: ${w.root}`)
          expect(baseline.text).toContain("Git repository: yes")
          const markers = [
            "<env>",
            "Current date",
            "App rule.",
            "<available_references>",
            "<mcp_instructions>",
            "<available_skills>",
            `name="alpha"`,
            `name="zeta"`
          ]
          const positions = markers.map((marker) => baseline.text.indexOf(marker))
          expect(
            positions.every((position, index) => position >= 0 && (index === 0 || position > positions[index - 1]!))
          ).toBe(true)

          // Omitted producers are simply not composed.
          const bare = yield* SessionInstructions.forSession(session.id, w.location)
          expect(bare.keys).not.toContain(SkillGuidance.key)
          expect(bare.keys).not.toContain(McpGuidance.key)
          expect(bare.keys).not.toContain(ReferenceGuidance.key)
        }).pipe(Effect.provide(w.core()))
      })
  )

  it.scoped(
    "Instructions.combine(...) preserves caller order and rejects duplicate stable namespaced source keys. The runner loads its producers concurrently, then combines them in its fixed declared order.",
    () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* Effect.gen(function* () {
          const session = yield* (yield* Sessions.Service).create({ location: w.location })
          // Each producer completes only once all three have started: a sequential load would never finish.
          const started = yield* Effect.all([Deferred.make<void>(), Deferred.make<void>(), Deferred.make<void>()])
          const allStarted = Effect.forEach(started, Deferred.await, { discard: true })
          const producer = <A>(index: number, value: A) =>
            Effect.zipRight(Deferred.succeed(started[index]!, undefined), Effect.as(allStarted, value))
          const instructions = yield* SessionInstructions.forSession(session.id, w.location, {
            agentSkills: producer(0, [{ name: "pdf", description: "PDFs" }]),
            references: producer(1, [{ name: "lib", path: "/lib", description: "Library" }]),
            mcp: producer(2, [{ name: "docs", instructions: "Search first." }])
          })
          const prepared = yield* (yield* InstructionCheckpoint.Service).prepare(session.id, instructions)
          expect(prepared._tag).toBe("Prepared")
          const text = prepared._tag === "Prepared" ? prepared.baseline : ""
          expect(text.indexOf("<available_references>")).toBeLessThan(text.indexOf("<mcp_instructions>"))
          expect(text.indexOf("<mcp_instructions>")).toBeLessThan(text.indexOf("<available_skills>"))
        }).pipe(Effect.provide(w.core()))
      })
  )

  it.scoped("environment says git no outside a repository; an unknown session is SessionNotFoundError", () =>
    Effect.gen(function* () {
      const w = yield* world
      yield* Effect.gen(function* () {
        const session = yield* (yield* Sessions.Service).create({ location: w.location })
        const baseline = (yield* Instructions.initialize(
          yield* SessionInstructions.forSession(session.id, w.location)
        )) as Instructions.Complete
        expect(baseline.text).toContain("Git repository: no")
        expect(
          yield* Effect.exit(SessionInstructions.forSession(Identifier.SessionID.make("ses_missing"), w.location))
        ).toEqual(Exit.fail(Errors.SessionNotFoundError.of("ses_missing")))
      }).pipe(Effect.provide(w.core()))
    })
  )
})
