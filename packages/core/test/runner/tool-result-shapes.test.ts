import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { SessionHistory } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { ToolStructured } from "@opencode-ai/schema"
import { Ajv } from "ajv"
import { Effect, Schema } from "effect"
import { world } from "./world.js"

/**
 * Tool results as upstream clients read them: every built-in tool's `tool.success` validates against
 * the contract's `SessionNextToolSuccess` (the reference JSON Schema, through Ajv), always carries
 * `outputPaths`, and its `structured` is exactly the tool's upstream shape (ToolStructured, with no
 * key beyond it). An input error (undecodable arguments, arguments the tool's schema rejects, an
 * unknown tool) is a `tool.failed` that validates against `SessionNextToolFailed` and carries
 * `result`, the error value the model was given.
 */

const { reply, text, toolCall, finish } = LLMScript

const reference = JSON.parse(
  fs.readFileSync(path.resolve(__dirname, "../../../schema/test/fixtures/opencode-v2-openapi.json"), "utf8")
)
const ajv = new Ajv({ strict: false, allErrors: true })
ajv.addSchema({ $id: "reference", components: reference.components })
const validator = (component: string) => {
  const validate = ajv.getSchema(`reference#/components/schemas/${component}`)
  if (validate === undefined) throw new Error(`no reference component ${component}`)
  return (value: unknown) => {
    const valid = validate(value)
    return valid ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`)
  }
}
const toolSuccess = validator("SessionNextToolSuccess")
const toolFailed = validator("SessionNextToolFailed")
const completedState = validator("SessionMessageToolStateCompleted")

/** A loopback page for webfetch. */
const page = Effect.acquireRelease(
  Effect.async<http.Server & { url: string }>((resume) => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" })
      res.end("fetched text")
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address() as { port: number }
      resume(Effect.succeed(Object.assign(server, { url: `http://127.0.0.1:${address.port}/page.txt` })))
    })
  }),
  (server) => Effect.sync(() => server.close())
)

const strict = { onExcessProperty: "error" } as const

describe("tool results carry upstream's shapes", () => {
  it.scopedLive("every built-in tool's success, and every input error's failure, as the contract says", () =>
    Effect.gen(function* () {
      const site = yield* page
      const w = yield* world()
      const file = (name: string, content: string) => {
        fs.mkdirSync(path.dirname(path.join(w.directory, name)), { recursive: true })
        fs.writeFileSync(path.join(w.directory, name), content)
      }
      file("src/app.ts", "export const greet = () => 'hi'\n")
      file("notes.txt", "one\ntwo\nthree\n")
      file("patch-me.txt", "alpha\n")
      file("edit-me.txt", "before\n")
      file(".opencode/skill/demo/SKILL.md", "---\nname: demo\ndescription: A demo skill\n---\nDo the demo.\n")
      const calls: ReadonlyArray<readonly [string, string, Readonly<Record<string, unknown>> | string]> = [
        ["call_read_file", "read", { path: "src/app.ts" }],
        ["call_read_page", "read", { path: "notes.txt", offset: 2, limit: 1 }],
        ["call_read_dir", "read", { path: "src" }],
        ["call_write", "write", { path: "new/file.txt", content: "fresh\n" }],
        ["call_edit", "edit", { path: "edit-me.txt", oldString: "before", newString: "after" }],
        [
          "call_patch",
          "apply_patch",
          {
            patchText: "*** Begin Patch\n*** Update File: patch-me.txt\n@@\n-alpha\n+beta\n*** End Patch"
          }
        ],
        ["call_bash", "bash", { command: "echo shaped" }],
        ["call_glob", "glob", { pattern: "src/**/*.ts" }],
        ["call_grep", "grep", { pattern: "greet" }],
        ["call_todo", "todowrite", { todos: [{ content: "Shape results", status: "in_progress", priority: "high" }] }],
        ["call_fetch", "webfetch", { url: site.url, format: "text" }],
        ["call_skill", "skill", { name: "demo" }],
        // Input errors: arguments that are not JSON, arguments the schema rejects, an unknown tool.
        ["call_not_json", "read", "{not json"],
        ["call_invalid", "read", { offset: 0 }],
        ["call_unknown", "no_such_tool", {}]
      ]
      yield* w.server.enqueue(
        reply(...calls.map(([id, name, input]) => toolCall(id, name, input)), finish("tool-calls")),
        reply(text("Done."), finish("stop"))
      )
      yield* w.prompt("use every tool")
      yield* w.wait

      const events = yield* w.events
      const settled = new Map(
        events
          .filter((e) => e.type === "session.next.tool.success" || e.type === "session.next.tool.failed")
          .map((e) => [(e.data as any).callID as string, e])
      )
      const byCall = new Map(calls.map(([id, name]) => [id, name]))
      for (const [id] of calls) expect(settled.has(id), `${id} settled`).toBe(true)

      for (const [id, event] of settled) {
        const name = byCall.get(id)!
        if (id === "call_not_json" || id === "call_invalid" || id === "call_unknown") {
          expect(event.type, id).toBe("session.next.tool.failed")
          expect(toolFailed(event), id).toEqual([])
          const data = event.data as any
          expect(data.result, id).toEqual({ type: "error", value: data.error.message })
          continue
        }
        expect(event.type, `${id}: ${JSON.stringify((event.data as any).error)}`).toBe("session.next.tool.success")
        expect(toolSuccess(event), id).toEqual([])
        const data = event.data as any
        expect(Array.isArray(data.outputPaths), `${id}: outputPaths is always present`).toBe(true)
        const shape = ToolStructured.byTool[name as keyof typeof ToolStructured.byTool]
        expect(
          () => Schema.decodeUnknownSync(shape as Schema.Schema<unknown>, strict)(data.structured),
          id
        ).not.toThrow()
      }
      const structured = (id: string) => (settled.get(id)!.data as any).structured
      const content = (id: string) => (settled.get(id)!.data as any).content

      // The shapes' particulars, as upstream gives them.
      expect(structured("call_read_file")).toMatchObject({
        name: "app.ts",
        content: "export const greet = () => 'hi'\n",
        encoding: "utf8"
      })
      expect(structured("call_read_page")).toEqual({
        type: "text-page",
        content: "two",
        mime: "text/plain",
        offset: 2,
        truncated: true,
        next: 3
      })
      expect(structured("call_read_dir")).toEqual({ entries: [{ path: "app.ts", type: "file" }], truncated: false })
      expect(structured("call_write")).toMatchObject({ operation: "write", resource: path.join("new", "file.txt") })
      expect(structured("call_edit")).toMatchObject({ replacements: 1, files: [{ file: "edit-me.txt" }] })
      expect(structured("call_patch").applied).toEqual([
        { type: "update", resource: "patch-me.txt", target: path.join(w.directory, "patch-me.txt") }
      ])
      expect(structured("call_bash")).toEqual({ exit: 0, truncated: false })
      expect(content("call_bash")).toEqual([
        { type: "text", text: "shaped" },
        { type: "text", text: "Exit code: 0" }
      ])
      expect(structured("call_glob")).toEqual({ value: [{ path: path.join("src", "app.ts"), type: "file" }] })
      expect(structured("call_grep").value[0]).toMatchObject({ entry: { path: path.join("src", "app.ts") }, line: 1 })
      expect(structured("call_todo")).toEqual({
        todos: [{ content: "Shape results", status: "in_progress", priority: "high" }]
      })
      expect(structured("call_fetch")).toEqual({
        url: site.url,
        contentType: "text/plain",
        format: "text",
        output: "fetched text"
      })
      expect(structured("call_skill")).toMatchObject({ name: "demo", output: content("call_skill")[0].text })

      // The projected completed states validate too, each with its outputPaths.
      const messages = yield* w.run(Effect.flatMap(SessionHistory.Service, (history) => history.context(w.session.id)))
      const tools = messages.flatMap((message) =>
        message.type === "assistant" ? message.content.filter((part) => part.type === "tool") : []
      )
      const completed = tools.filter((tool) => tool.state.status === "completed")
      expect(completed).toHaveLength(calls.length - 3)
      for (const tool of completed) {
        expect(completedState(tool.state), tool.id).toEqual([])
        expect(tool.state.status === "completed" && tool.state.outputPaths, tool.id).toBeDefined()
      }
      const failed = tools.filter((tool) => tool.state.status === "error")
      expect(failed.map((tool) => tool.id).sort()).toEqual(["call_invalid", "call_not_json", "call_unknown"])
      for (const tool of failed)
        expect((tool.state as any).result).toEqual({ type: "error", value: expect.any(String) })
    })
  )
})
