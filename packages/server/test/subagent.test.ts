import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { LLMScript } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { scriptedHost } from "./scripted-host.js"

const { reply, text, toolCall, finish } = LLMScript

/**
 * A task turn over HTTP: the scripted model delegates to `general`, whose `read` of `.env` asks; the
 * ask is listed and answered through the permission routes with the child's sessionID, and the
 * child session is readable with its `parentID`.
 */
describe("subagents over HTTP", () => {
  it.scopedLive("a child's permission ask is answered through the same routes; the child records its parent", () =>
    Effect.gen(function* () {
      const t = yield* scriptedHost({
        prefix: "subagent",
        requests: "permission",
        setup: (directory) => fs.writeFileSync(path.join(directory, ".env"), "TOKEN=s3cret\n")
      })
      yield* t.llm.enqueue(
        reply(
          toolCall("call_task", "task", { description: "Read env", prompt: "Read .env.", subagent_type: "general" }),
          finish("tool-calls")
        ),
        reply(toolCall("call_env", "read", { path: ".env" }), finish("tool-calls")),
        reply(text("The token is s3cret."), finish("stop")),
        reply(text("done"), finish("stop"))
      )
      expect((yield* t.prompt("what is in .env?")).status).toBe(200)

      // The instance-wide listing shows the child's ask.
      let asked: any
      while (asked === undefined) {
        asked = (yield* t.call("GET", "/api/permission/request")).body.data[0]
        if (asked === undefined) yield* Effect.sleep("10 millis")
      }
      expect(asked.sessionID).not.toBe(t.session.id)
      expect((yield* t.call("GET", `${t.base}/permission`)).body.data).toEqual([])
      const child = (yield* t.call("GET", `/api/session/${asked.sessionID}`)).body.data
      expect(child.parentID).toBe(t.session.id)
      expect(child.agent).toBe("general")
      expect((yield* t.call("GET", `/api/session/${child.id}/permission`)).body.data.map((r: any) => r.id)).toEqual([
        asked.id
      ])
      // While the child runs, both are active: the parent for its own drain running the task call.
      expect(Object.keys((yield* t.call("GET", "/api/session/active")).body.data).sort()).toEqual(
        [t.session.id, child.id].sort()
      )
      expect(
        (yield* t.call("POST", `/api/session/${child.id}/permission/${asked.id}/reply`, { reply: "once" })).status
      ).toBe(204)
      expect((yield* t.wait).status).toBe(204)

      const settled = (yield* t.settled("call_task")) as any
      expect(settled.type).toBe("session.next.tool.success")
      expect(settled.data.content[0].text).toContain("The token is s3cret.")
      const listed = (yield* t.call("GET", "/api/session")).body.data as Array<any>
      expect(listed.find((s) => s.id === child.id).parentID).toBe(t.session.id)
      expect(listed.find((s) => s.id === t.session.id).parentID).toBeUndefined()
    })
  )
})
