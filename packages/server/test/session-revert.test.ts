import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ChatRequest, GitFixture, LLMScript } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { scriptedHost } from "./scripted-host.js"

const { reply, text, toolCall, finish } = LLMScript

const { read } = GitFixture
const { system: systemOf, conversation: conversationOf } = ChatRequest

const repository = GitFixture.repository({ "AGENTS.md": "Origin rule: use spaces.\n", "app.txt": "v1\n" })

const host = () => scriptedHost({ prefix: "revert", requests: "permission", setup: repository })

describe("revert and move over HTTP", () => {
  it.scopedLive(
    "stage with files restores the worktree, clear brings it back, and a new prompt on a staged session commits it first",
    () =>
      Effect.gen(function* () {
        const h = yield* host()
        yield* h.llm.enqueue(
          reply(
            toolCall("call_1", "bash", { command: "echo v2 > app.txt && echo new > new.txt" }),
            finish("tool-calls")
          ),
          reply(text("changed both"), finish("stop"))
        )
        expect((yield* h.prompt("change the app")).status).toBe(200)
        expect((yield* h.wait).status).toBe(204)
        expect(read(h.directory, "app.txt")).toBe("v2\n")

        const messages = (yield* h.call("GET", `${h.base}/message?order=asc`)).body.data as Array<any>
        const user = messages.find((message) => message.type === "user")
        const assistant = messages.find((message) => message.type === "assistant")
        expect(assistant.snapshot.start).toMatch(/^[0-9a-f]{40}$/)
        expect(assistant.snapshot.files).toEqual(["app.txt", "new.txt"])

        const staged = yield* h.call("POST", `${h.base}/revert/stage`, { messageID: user.id, files: true })
        expect(staged.status).toBe(200)
        expect(staged.body.data.messageID).toBe(user.id)
        expect(staged.body.data.files.map((file: any) => [file.path, file.status])).toEqual([
          ["app.txt", "modified"],
          ["new.txt", "deleted"]
        ])
        expect(read(h.directory, "app.txt")).toBe("v1\n")
        expect(read(h.directory, "new.txt")).toBeUndefined()
        expect((yield* h.call("GET", h.base)).body.data.revert).toEqual(staged.body.data)

        expect((yield* h.call("POST", `${h.base}/revert/clear`)).status).toBe(204)
        expect(read(h.directory, "app.txt")).toBe("v2\n")
        expect(read(h.directory, "new.txt")).toBe("new\n")
        expect((yield* h.call("GET", h.base)).body.data.revert).toBeUndefined()

        // Staged again; a refused prompt leaves it staged, an admitted one commits it before it runs.
        yield* h.call("POST", `${h.base}/revert/stage`, { messageID: user.id, files: true })
        const refused = yield* h.call("POST", `${h.base}/prompt`, {
          prompt: { text: "x", files: [{ uri: "file:///definitely/missing.txt" }] }
        })
        expect(refused.status).toBe(400)
        expect((yield* h.call("GET", h.base)).body.data.revert.messageID).toBe(user.id)
        yield* h.llm.enqueue(reply(text("fresh start"), finish("stop")))
        expect((yield* h.prompt("start over")).status).toBe(200)
        yield* h.wait
        const types = (yield* h.events).map((event) => event.type)
        const committed = types.indexOf("session.next.revert.committed")
        expect(committed).toBeGreaterThan(-1)
        expect(types.lastIndexOf("session.next.prompted")).toBeGreaterThan(committed)
        expect((yield* h.call("GET", h.base)).body.data.revert).toBeUndefined()
        const requests = yield* h.llm.requests
        const last = requests[requests.length - 1]!
        expect(conversationOf(last)).toContain("start over")
        expect(conversationOf(last)).not.toContain("change the app")
        expect(conversationOf(last)).not.toContain("changed both")
        expect(read(h.directory, "app.txt")).toBe("v1\n")
        const context = (yield* h.call("GET", `${h.base}/context`)).body.data as Array<any>
        expect(context.filter((message) => message.type === "user")).toHaveLength(1)
      })
  )

  it.scopedLive("commit over HTTP: 204, the reverted messages leave the context, and commit again is a 409", () =>
    Effect.gen(function* () {
      const h = yield* host()
      yield* h.llm.enqueue(reply(text("first"), finish("stop")))
      yield* h.prompt("one")
      yield* h.wait
      yield* h.llm.enqueue(reply(text("second"), finish("stop")))
      yield* h.prompt("two")
      yield* h.wait
      const messages = (yield* h.call("GET", `${h.base}/message?order=asc`)).body.data as Array<any>
      const second = messages.filter((message) => message.type === "user")[1]
      expect((yield* h.call("POST", `${h.base}/revert/stage`, { messageID: second.id })).status).toBe(200)
      expect((yield* h.call("POST", `${h.base}/revert/commit`)).status).toBe(204)
      const context = (yield* h.call("GET", `${h.base}/context`)).body.data as Array<any>
      expect(context.map((message) => message.type)).toEqual(["user", "assistant"])
      const again = yield* h.call("POST", `${h.base}/revert/commit`)
      expect(again.status).toBe(409)
      expect(again.body).toMatchObject({ _tag: "ConflictError", resource: "revert" })
      // The transcript keeps them.
      expect(((yield* h.call("GET", `${h.base}/message`)).body.data as Array<any>).length).toBe(messages.length)
    })
  )

  it.scopedLive("revert errors are tagged 4xx: unknown and foreign messages, nothing staged, running, bad bodies", () =>
    Effect.gen(function* () {
      const h = yield* host()
      const stage = (body: unknown, base = h.base) => h.call("POST", `${base}/revert/stage`, body)
      const unknown = yield* stage({ messageID: "msg_unknown" })
      expect([unknown.status, unknown.body._tag]).toEqual([404, "MessageNotFoundError"])
      const noSession = yield* stage({ messageID: "msg_unknown" }, "/api/session/ses_missing")
      expect([noSession.status, noSession.body._tag]).toEqual([404, "SessionNotFoundError"])
      for (const body of [
        {},
        { messageID: "nope" },
        { messageID: "msg_x", files: "yes" },
        { messageID: "msg_x", x: 1 }
      ]) {
        const bad = yield* stage(body)
        expect([bad.status, bad.body._tag]).toEqual([400, "InvalidRequestError"])
      }
      for (const route of ["clear", "commit"]) {
        const nothing = yield* h.call("POST", `${h.base}/revert/${route}`)
        expect([nothing.status, nothing.body._tag, nothing.body.resource]).toEqual([409, "ConflictError", "revert"])
        const missing = yield* h.call("POST", `/api/session/ses_missing/revert/${route}`)
        expect([missing.status, missing.body._tag]).toEqual([404, "SessionNotFoundError"])
      }

      // A message of another session.
      const other = (yield* h.call("POST", "/api/session", {})).body.data
      const admitted = yield* h.call("POST", `/api/session/${other.id}/prompt`, {
        prompt: { text: "elsewhere" },
        resume: false
      })
      const foreign = yield* stage({ messageID: admitted.body.data.id })
      expect([foreign.status, foreign.body._tag]).toEqual([404, "MessageNotFoundError"])

      // While a Step streams.
      const gate = LLMScript.gate()
      yield* h.llm.enqueue(reply(text("wor"), LLMScript.hold(gate), text("king"), finish("stop")))
      yield* h.prompt("work")
      yield* gate.reached
      const messages = (yield* h.call("GET", `${h.base}/message?order=asc`)).body.data as Array<any>
      const busy = yield* stage({ messageID: messages[0].id })
      expect([busy.status, busy.body._tag, busy.body.resource]).toEqual([409, "ConflictError", "session"])
      yield* gate.release
      yield* h.wait
    })
  )

  it.scopedLive(
    "move: the next request carries the destination's AGENTS.md; running, missing and bad moves are 4xx",
    () =>
      Effect.gen(function* () {
        const h = yield* host()
        const destination = path.join(h.root, "destination")
        fs.mkdirSync(destination)
        fs.writeFileSync(path.join(destination, "AGENTS.md"), "Destination rule: use tabs.\n")
        yield* h.llm.enqueue(reply(text("here"), finish("stop")))
        yield* h.prompt("first")
        yield* h.wait

        const moved = yield* h.call("POST", `${h.base}/move`, { location: { directory: destination } })
        expect(moved.status).toBe(200)
        expect(moved.body.data.location).toEqual({ directory: destination })
        expect((yield* h.call("GET", h.base)).body.data).toEqual(moved.body.data)
        const listed = yield* h.call("GET", `/api/session?directory=${encodeURIComponent(destination)}`)
        expect(listed.body.data.map((session: any) => session.id)).toEqual([h.session.id])

        yield* h.llm.enqueue(reply(text("there"), finish("stop")))
        yield* h.prompt("second")
        yield* h.wait
        const requests = yield* h.llm.requests
        expect(systemOf(requests[0]!)).toContain("Origin rule: use spaces.")
        expect(systemOf(requests[1]!)).toContain("Destination rule: use tabs.")
        expect(systemOf(requests[1]!)).not.toContain("Origin rule")
        expect((yield* h.events).map((event) => event.type)).toContain("session.next.moved")

        const missing = yield* h.call("POST", `${h.base}/move`, { location: { directory: path.join(h.root, "none") } })
        expect([missing.status, missing.body._tag]).toEqual([400, "InvalidRequestError"])
        for (const body of [{}, { location: {} }, { location: { directory: destination }, extra: 1 }]) {
          const bad = yield* h.call("POST", `${h.base}/move`, body)
          expect([bad.status, bad.body._tag]).toEqual([400, "InvalidRequestError"])
        }
        const unknown = yield* h.call("POST", "/api/session/ses_missing/move", { location: { directory: destination } })
        expect([unknown.status, unknown.body._tag]).toEqual([404, "SessionNotFoundError"])

        const gate = LLMScript.gate()
        yield* h.llm.enqueue(reply(text("wor"), LLMScript.hold(gate), text("king"), finish("stop")))
        yield* h.prompt("work")
        yield* gate.reached
        const busy = yield* h.call("POST", `${h.base}/move`, { location: { directory: h.directory } })
        expect([busy.status, busy.body._tag, busy.body.resource]).toEqual([409, "ConflictError", "session"])
        yield* gate.release
        yield* h.wait
      })
  )
})
