import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { InstructionCheckpoint, NestedInstructions } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { Effect, Option } from "effect"
import { world } from "./world.js"

const { reply, text, toolCall, finish } = LLMScript

const write = (file: string, content: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content)
}

/** Every `session.next.*` type (prefix dropped) with, for context updates, their text. */
const updates = (events: ReadonlyArray<{ readonly type: string; readonly data: unknown }>) =>
  events.filter((e) => e.type === "session.next.context.updated").map((e) => (e.data as { text: string }).text)

const messagesOf = (request: { readonly body: Record<string, unknown> }) => JSON.stringify(request.body.messages)

describe("nested AGENTS.md", () => {
  it("candidates: the directories strictly below the Location down to the target, outermost first; never the target", () => {
    const loc = path.resolve("/work/loc")
    expect(NestedInstructions.candidates(loc, path.join(loc, "a", "b", "f.ts"), "file")).toEqual([
      path.join(loc, "a", "AGENTS.md"),
      path.join(loc, "a", "b", "AGENTS.md")
    ])
    expect(NestedInstructions.candidates(loc, path.join(loc, "a"), "directory")).toEqual([
      path.join(loc, "a", "AGENTS.md")
    ])
    expect(NestedInstructions.candidates(loc, path.join(loc, "a", "AGENTS.md"), "file")).toEqual([])
    expect(NestedInstructions.candidates(loc, path.join(loc, "f.ts"), "file")).toEqual([])
    expect(NestedInstructions.candidates(loc, loc, "directory")).toEqual([])
    expect(NestedInstructions.candidates(loc, path.resolve("/work/other/a/f.ts"), "file")).toEqual([])
  })

  it.scopedLive(
    "a nested read injects that directory's AGENTS.md once at the next boundary; a second read there injects nothing",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        write(path.join(w.directory, "AGENTS.md"), "Root rule.")
        write(path.join(w.directory, "pkg", "AGENTS.md"), "Package rule.")
        write(path.join(w.directory, "pkg", "src", "AGENTS.md"), "Source rule.")
        write(path.join(w.directory, "pkg", "src", "a.ts"), "export const a = 1\n")
        write(path.join(w.directory, "pkg", "src", "b.ts"), "export const b = 2\n")
        yield* w.server.enqueue(
          reply(toolCall("call_1", "read", { path: "pkg/src/a.ts" }), finish("tool-calls")),
          reply(
            toolCall("call_2", "read", { path: path.join(w.directory, "pkg", "src", "b.ts") }),
            finish("tool-calls")
          ),
          reply(toolCall("call_3", "read", { path: "pkg/src" }), finish("tool-calls")),
          reply(text("done"), finish("stop"))
        )
        yield* w.prompt("look at the sources")
        yield* w.wait

        const types = yield* w.types
        const all = yield* w.events
        const texts = updates(all)
        // Exactly one update, holding both nested files (outermost first) and not the Location's own.
        expect(texts).toHaveLength(1)
        const update = texts[0]!
        expect(update).toContain(
          `Instructions loaded from ${path.join(w.directory, "pkg", "AGENTS.md")}:\nPackage rule.`
        )
        expect(update).toContain(
          `Instructions loaded from ${path.join(w.directory, "pkg", "src", "AGENTS.md")}:\nSource rule.`
        )
        expect(update.indexOf("Package rule.")).toBeLessThan(update.indexOf("Source rule."))
        expect(update).not.toContain("Root rule.")
        // At the boundary after the first read's step settled, before the second step started.
        const firstEnd = types.indexOf("step.ended")
        expect(types.slice(firstEnd, firstEnd + 3)).toEqual(["step.ended", "context.updated", "step.started"])

        const requests = yield* w.server.requests
        expect(requests).toHaveLength(4)
        // The first request had not heard of them; the next one carries the update (once), and the
        // baseline (the provider-cache prefix) is unchanged.
        expect(messagesOf(requests[0]!)).not.toContain("Package rule.")
        for (const request of requests.slice(1)) {
          expect(messagesOf(request).split("Source rule.")).toHaveLength(2)
          expect((request.body.messages as Array<any>)[0].content).toBe(
            (requests[0]!.body.messages as Array<any>)[0].content
          )
        }
      })
  )

  it.scopedLive("reads outside the Location, of the Location itself, or of a top-level file inject nothing", () =>
    Effect.gen(function* () {
      const w = yield* world({ agent: { build: { permission: { external_directory: "allow" } } } })
      const outside = path.join(path.dirname(w.directory), "outside")
      write(path.join(outside, "AGENTS.md"), "Outside rule.")
      write(path.join(outside, "x.txt"), "x\n")
      write(path.join(w.directory, "top.txt"), "top\n")
      yield* w.server.enqueue(
        reply(
          toolCall("call_1", "read", { path: path.join(outside, "x.txt") }),
          toolCall("call_2", "read", { path: outside }),
          toolCall("call_3", "read", { path: "." }),
          toolCall("call_4", "read", { path: "top.txt" }),
          finish("tool-calls")
        ),
        reply(text("done"), finish("stop"))
      )
      yield* w.prompt("look around")
      yield* w.wait
      const all = yield* w.events
      expect(all.filter((e) => e.type === "session.next.tool.success")).toHaveLength(4)
      expect(updates(all)).toEqual([])
      expect(messagesOf((yield* w.server.requests)[1]!)).not.toContain("Outside rule.")
    })
  )

  it.scopedLive(
    "a failed read notes nothing; an edited nested file is re-announced; a later baseline (after compaction) folds it in",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        write(path.join(w.directory, "lib", "AGENTS.md"), "Lib rule v1.")
        write(path.join(w.directory, "lib", "x.ts"), "x\n")
        write(path.join(w.directory, "gone", "AGENTS.md"), "Never told.")
        yield* w.server.enqueue(
          reply(toolCall("call_0", "read", { path: "gone/missing.ts" }), finish("tool-calls")),
          reply(toolCall("call_1", "read", { path: "lib/x.ts" }), finish("tool-calls")),
          reply(text("one"), finish("stop")),
          reply(text("two"), finish("stop")),
          reply(text("three"), finish("stop"))
        )
        yield* w.prompt("first")
        yield* w.wait
        expect(updates(yield* w.events)).toHaveLength(1)
        expect(updates(yield* w.events)[0]).toContain("Lib rule v1.")
        expect(JSON.stringify(yield* w.events)).not.toContain("Never told.")

        // An edit is re-announced once at the next boundary.
        write(path.join(w.directory, "lib", "AGENTS.md"), "Lib rule v2.")
        yield* w.prompt("second")
        yield* w.wait
        const texts = updates(yield* w.events)
        expect(texts).toHaveLength(2)
        expect(texts[1]).toContain("Lib rule v2.")
        expect(texts[1]).not.toContain("Lib rule v1.")

        // A completed compaction: the next prepare rebaselines, and the new baseline holds the file.
        const checkpoint = yield* w.run(InstructionCheckpoint.Service)
        const last = (yield* w.events).at(-1)!
        yield* w.run(checkpoint.recordCompaction(w.session.id, last.durable.seq))
        yield* w.prompt("third")
        yield* w.wait
        expect(updates(yield* w.events)).toHaveLength(2)
        const stored = yield* w.run(checkpoint.get(w.session.id))
        expect(Option.isSome(stored) && stored.value.baseline).toContain("Lib rule v2.")
        const requests = yield* w.server.requests
        const system = (requests.at(-1)!.body.messages as Array<any>)[0].content as string
        expect(system).toContain(
          `Instructions loaded from ${path.join(w.directory, "lib", "AGENTS.md")}:\nLib rule v2.`
        )
        expect(system).not.toContain("Never told.")
      })
  )
})
