import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { InstructionCheckpoint, SessionHistory, SessionMove, SessionRevert, Sessions } from "@opencode-ai/core"
import { ChatRequest, LLMScript } from "@opencode-ai/core/testing"
import { Identifier } from "@opencode-ai/schema"
import { Effect, Exit, Option } from "effect"
import { world } from "../runner/world.js"

const { reply, text, finish } = LLMScript

const { system: systemOf, conversation: conversationOf } = ChatRequest

const writeSkill = (directory: string, name: string, description: string) => {
  const file = path.join(directory, ".opencode", "skill", name, "SKILL.md")
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, `---\nname: ${name}\ndescription: ${description}\n---\nBody of ${name}.\n`)
}

/** A second project next to the world's one, with its own AGENTS.md and skill. */
const destination = (root: string) => {
  const directory = path.join(root, "destination")
  fs.mkdirSync(directory)
  fs.writeFileSync(path.join(directory, "AGENTS.md"), "Destination rule: use tabs.\n")
  writeSkill(directory, "deploy", "Deploying the destination")
  return directory
}

describe("SessionMove", () => {
  it.scopedLive(
    "Location-scoped instruction producers naturally re-resolve when a moved Session next runs in its destination Location",
    () =>
      Effect.gen(function* () {
        const w = yield* world({
          setup: (directory) => {
            fs.writeFileSync(path.join(directory, "AGENTS.md"), "Origin rule: use spaces.\n")
            writeSkill(directory, "lint", "Linting the origin")
          }
        })
        const target = destination(w.root)
        yield* w.server.enqueue(reply(text("in the origin"), finish("stop")))
        yield* w.prompt("first, here")
        yield* w.wait

        const moved = yield* w.run(
          Effect.flatMap(SessionMove.Service, (m) => m.move(w.session.id, { directory: target }))
        )
        expect(moved.location.directory).toBe(target)
        expect(moved.projectID).not.toBe(w.session.projectID)
        const stored = yield* w.run(Effect.flatMap(Sessions.Service, (s) => s.get(w.session.id)))
        expect(stored).toEqual(moved)
        const listed = yield* w.run(Effect.flatMap(Sessions.Service, (s) => s.list({ directory: target })))
        expect(listed.data.map((session) => session.id)).toEqual([w.session.id])

        yield* w.server.enqueue(reply(text("in the destination"), finish("stop")))
        yield* w.prompt("now, there")
        yield* w.wait
        const requests = yield* w.server.requests
        const [first, second] = [systemOf(requests[0]!), systemOf(requests[1]!)]
        expect(first).toContain("Origin rule: use spaces.")
        expect(first).toContain("<name>lint</name>")
        expect(second).toContain("Destination rule: use tabs.")
        expect(second).toContain("<name>deploy</name>")
        expect(second).toContain(target)
        expect(second).not.toContain("Origin rule")
        expect(second).not.toContain("<name>lint</name>")
        // The conversation itself moves along, without an Instruction Update about the new place.
        const conversation = conversationOf(requests[1]!)
        expect(conversation).toContain("first, here")
        expect(conversation).toContain("in the origin")
        expect(conversation).not.toContain("instruction-update")
        const types = yield* w.types
        expect(types).toContain("moved")
        expect(types).not.toContain("context.updated")
      })
  )

  it.scopedLive(
    "Moving a Session resets its InstructionCheckpoint, so the destination must initialize a complete baseline before another prompt can promote",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        const target = destination(w.root)
        yield* w.server.enqueue(reply(text("one"), finish("stop")))
        yield* w.prompt("one")
        yield* w.wait
        const checkpoints = yield* w.run(InstructionCheckpoint.Service)
        expect(Option.isSome(yield* checkpoints.get(w.session.id))).toBe(true)

        yield* w.run(Effect.flatMap(SessionMove.Service, (m) => m.move(w.session.id, { directory: target })))
        // The move and the reset are one transaction: no checkpoint survives it.
        expect(yield* checkpoints.get(w.session.id)).toEqual(Option.none())

        yield* w.server.enqueue(reply(text("two"), finish("stop")))
        yield* w.prompt("two")
        yield* w.wait
        const checkpoint = Option.getOrThrow(yield* checkpoints.get(w.session.id))
        expect(checkpoint.baseline).toContain("Destination rule: use tabs.")
        const events = yield* w.events
        const movedSeq = events.find((e) => e.type === "session.next.moved")!.durable.seq
        const promoted = events.filter((e) => e.type === "session.next.prompted").at(-1)!.durable.seq
        // The destination's baseline was established after the move and before the prompt promoted.
        expect(checkpoint.baselineSeq).toBeGreaterThanOrEqual(movedSeq)
        expect(checkpoint.baselineSeq).toBeLessThan(promoted)
        // Session History for the model keeps the conversation from before the move.
        const context = yield* w.run(Effect.flatMap(SessionHistory.Service, (h) => h.context(w.session.id)))
        expect(context.filter((message) => message.type === "user")).toHaveLength(2)
      })
  )

  it.scopedLive(
    "a move while running, or with a staged revert, is a ConflictError; a missing directory is invalid",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        const target = destination(w.root)
        const move = yield* w.run(SessionMove.Service)
        const missing = yield* Effect.exit(move.move(w.session.id, { directory: path.join(w.root, "nowhere") }))
        expect(missing).toEqual(Exit.fail(expect.objectContaining({ _tag: "InvalidRequestError" })))
        const unknown = yield* Effect.exit(move.move(Identifier.SessionID.make("ses_missing"), { directory: target }))
        expect(unknown).toEqual(Exit.fail(expect.objectContaining({ _tag: "SessionNotFoundError" })))

        const gate = LLMScript.gate()
        yield* w.server.enqueue(reply(text("wor"), LLMScript.hold(gate), text("king"), finish("stop")))
        yield* w.prompt("work")
        yield* gate.reached
        const busy = yield* Effect.exit(move.move(w.session.id, { directory: target }))
        expect(busy).toEqual(Exit.fail(expect.objectContaining({ _tag: "ConflictError", resource: "session" })))
        yield* gate.release
        yield* w.wait

        const events = yield* w.events
        const user = events.find((e) => e.type === "session.next.prompted")!.data as any
        yield* w.run(Effect.flatMap(SessionRevert.Service, (r) => r.stage(w.session.id, { messageID: user.messageID })))
        const staged = yield* Effect.exit(move.move(w.session.id, { directory: target }))
        expect(staged).toEqual(Exit.fail(expect.objectContaining({ _tag: "ConflictError", resource: "revert" })))
        const session = yield* w.run(Effect.flatMap(Sessions.Service, (s) => s.get(w.session.id)))
        expect(session.location.directory).toBe(w.directory)
      })
  )
})
