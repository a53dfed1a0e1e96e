import * as fs from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { LLMScript } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { world } from "./world.js"

const { reply, text, toolCall, finish } = LLMScript

describe("a large command output", () => {
  it.scopedLive(
    "a 10 MB bash output reaches the model as a bounded preview whose managed path the read tool opens",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        // 100,000 lines of 100 bytes: 10 MB.
        const command =
          "yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx | head -n 100000"
        yield* w.server.enqueue(
          reply(toolCall("call_bash", "bash", { command }), finish("tool-calls")),
          reply(text("ok"), finish("stop"))
        )
        yield* w.prompt("produce a lot of output")
        yield* w.wait
        const success = (yield* w.events).find(
          (e) => e.type === "session.next.tool.success" && (e.data as any).callID === "call_bash"
        )
        expect(
          success,
          JSON.stringify((yield* w.events).filter((e) => e.type.includes("failed")).map((e) => e.data))
        ).toBeDefined()
        const settled = success!.data as any
        expect(settled.outputPaths).toHaveLength(1)
        const managed: string = settled.outputPaths[0]
        const preview: string = settled.content.map((c: any) => c.text).join("")
        expect(Buffer.byteLength(preview)).toBeLessThanOrEqual(50 * 1024)
        expect(preview).toContain(managed)
        expect(fs.statSync(managed).size).toBeGreaterThanOrEqual(10_000_000)
        // The model saw the bounded preview, never the raw 10 MB.
        const afterBash = (yield* w.server.requests)[1]!
        expect(afterBash.text.length).toBeLessThan(200_000)
        expect(afterBash.text).toContain(managed)
        // Later the model reads the complete output from its managed path (outside the Location, no ask).
        yield* w.server.enqueue(
          reply(toolCall("call_read", "read", { path: managed, offset: 50_000, limit: 3 }), finish("tool-calls")),
          reply(text("done"), finish("stop"))
        )
        yield* w.prompt("show me line 50,000")
        yield* w.wait
        const read = (yield* w.events).find(
          (e) => e.type === "session.next.tool.success" && (e.data as any).callID === "call_read"
        )
        expect(
          read,
          JSON.stringify((yield* w.events).filter((e) => e.type === "session.next.tool.failed").map((e) => e.data))
        ).toBeDefined()
        const readText = ((read!.data as any).content as Array<any>).map((c) => c.text).join("")
        expect(readText).toContain("50000: xxxx")
      })
  )
})
