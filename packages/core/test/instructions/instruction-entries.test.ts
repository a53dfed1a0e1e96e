import { it } from "@effect/vitest"
import { Errors, Identifier } from "@opencode-ai/schema"
import { Effect, Exit } from "effect"
import { describe, expect } from "vitest"
import { InstructionCheckpoint } from "../../src/instructions/instruction-checkpoint.js"
import { InstructionEntries } from "../../src/instructions/instruction-entries.js"
import { InstructionEntry } from "../../src/instructions/instruction-entry.js"
import { Instructions } from "../../src/instructions/instructions.js"
import { SessionInstructions } from "../../src/instructions/session-instructions.js"
import { Sessions } from "../../src/session/sessions.js"
import { world } from "./world.js"

const invalid = (field: "key" | "value") => (exit: Exit.Exit<unknown, unknown>) => {
  expect(Exit.isFailure(exit)).toBe(true)
  const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
  expect(error).toBeInstanceOf(Errors.InvalidRequestError)
  expect((error as Errors.InvalidRequestError).field).toBe(field)
}

describe("InstructionEntries", () => {
  it.scoped("list, put (create and replace) and remove (idempotent), in key order, durable across reopening", () =>
    Effect.gen(function* () {
      const w = yield* world
      const sessionID = yield* Effect.gen(function* () {
        const entries = yield* InstructionEntries.Service
        const session = yield* (yield* Sessions.Service).create({ location: w.location })
        expect(yield* entries.list(session.id)).toEqual([])

        expect(yield* entries.put(session.id, "style", "Be terse.")).toEqual({ name: "style", value: "Be terse." })
        yield* entries.put(session.id, "a.ticket-1_x", { id: 42, tags: ["x", null], ok: true })
        yield* entries.put(session.id, "style", "Be very terse.")
        expect(yield* entries.list(session.id)).toEqual([
          { name: "a.ticket-1_x", value: { id: 42, tags: ["x", null], ok: true } },
          { name: "style", value: "Be very terse." }
        ])

        yield* entries.remove(session.id, "a.ticket-1_x")
        yield* entries.remove(session.id, "a.ticket-1_x")
        yield* entries.remove(session.id, "never-there")
        return session.id
      }).pipe(Effect.provide(w.core()))

      yield* Effect.gen(function* () {
        expect(yield* (yield* InstructionEntries.Service).list(sessionID)).toEqual([
          { name: "style", value: "Be very terse." }
        ])
      }).pipe(Effect.provide(w.core()))
    })
  )

  it.scoped(
    "a key must match ^[a-z0-9][a-z0-9._-]*$ and a value must be JSON: InvalidRequestError naming the field",
    () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* Effect.gen(function* () {
          const entries = yield* InstructionEntries.Service
          const session = yield* (yield* Sessions.Service).create({ location: w.location })
          for (const key of ["", "Style", "-x", ".x", "a/b", "a b", "é"]) {
            invalid("key")(yield* Effect.exit(entries.put(session.id, key, "v")))
            invalid("key")(yield* Effect.exit(entries.remove(session.id, key)))
          }
          const notJson: ReadonlyArray<unknown> = [
            undefined,
            Number.NaN,
            Infinity,
            new Date(0),
            { nested: [1, undefined] },
            () => 1,
            1n
          ]
          for (const value of notJson) {
            invalid("value")(yield* Effect.exit(entries.put(session.id, "k", value as Instructions.Json)))
          }
          expect(yield* entries.list(session.id)).toEqual([])
        }).pipe(Effect.provide(w.core()))
      })
  )

  it.scoped("an unknown session is SessionNotFoundError for list, put and remove", () =>
    Effect.gen(function* () {
      const w = yield* world
      yield* Effect.gen(function* () {
        const entries = yield* InstructionEntries.Service
        const expected = Exit.fail(Errors.SessionNotFoundError.of("ses_missing"))
        expect(yield* Effect.exit(entries.list(Identifier.SessionID.make("ses_missing")))).toEqual(expected)
        expect(yield* Effect.exit(entries.put(Identifier.SessionID.make("ses_missing"), "k", 1))).toEqual(expected)
        expect(yield* Effect.exit(entries.remove(Identifier.SessionID.make("ses_missing"), "k"))).toEqual(expected)
      }).pipe(Effect.provide(w.core()))
    })
  )

  describe("InstructionEntry stores API-managed per-Session JSON values. Each entry contributes one api/<key> Instruction Source, so adding, replacing, or removing an entry is reconciled at the next Safe Step Boundary.", () => {
    it.scoped("put, replace and remove each reach the model at the next prepare, as api/<key>", () =>
      Effect.gen(function* () {
        const w = yield* world
        yield* Effect.gen(function* () {
          const entries = yield* InstructionEntries.Service
          const checkpoint = yield* InstructionCheckpoint.Service
          const session = yield* (yield* Sessions.Service).create({ location: w.location })
          yield* entries.put(session.id, "style", "Be terse.")
          const step = Effect.flatMap(SessionInstructions.forSession(session.id, w.location), (instructions) =>
            checkpoint.prepare(session.id, instructions)
          )
          const textOf = (preparation: InstructionCheckpoint.Preparation) =>
            preparation._tag === "Prepared" ? preparation.update?.text : undefined
          const style = Instructions.key("api/style")

          const first = yield* step
          expect(first._tag === "Prepared" && first.baseline).toContain(`<context name="style">\nBe terse.\n</context>`)
          const stored = yield* checkpoint.get(session.id)
          expect(stored._tag === "Some" && stored.value.applied.sources.map((source) => source.key)).toContain(style)

          yield* entries.put(session.id, "ticket", { id: 42 })
          expect(textOf(yield* step)).toBe(InstructionEntry.baseline("ticket" as InstructionEntry.Name)({ id: 42 }))

          yield* entries.put(session.id, "style", "Be very terse.")
          expect(textOf(yield* step)).toBe(InstructionEntry.update("style" as InstructionEntry.Name)("Be very terse."))
          // Putting the same value again is no change at all.
          yield* entries.put(session.id, "style", "Be very terse.")
          expect(textOf(yield* step)).toBeUndefined()

          yield* entries.remove(session.id, "style")
          expect(textOf(yield* step)).toBe(InstructionEntry.removed("style" as InstructionEntry.Name))
          expect(textOf(yield* step)).toBeUndefined()
        }).pipe(Effect.provide(w.core()))
      })
    )
  })
})
