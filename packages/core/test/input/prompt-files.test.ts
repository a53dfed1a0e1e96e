import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { SessionInput, SessionRunner } from "@opencode-ai/core"
import { LLMScript, SampleFiles } from "@opencode-ai/core/testing"
import type { AdmittedPrompt } from "@opencode-ai/schema"
import { Effect } from "effect"
import { world } from "../runner/world.js"

/**
 * Attachments reach the model: prompts with files admitted into a real Core, run against the
 * scripted provider over loopback HTTP; the assertions read the request the provider received.
 */

const { reply, text, toolCall, finish } = LLMScript

const { png } = SampleFiles

const project = (directory: string) => {
  fs.mkdirSync(path.join(directory, "src"))
  fs.mkdirSync(path.join(directory, "docs"))
  fs.writeFileSync(
    path.join(directory, "src", "a.ts"),
    Array.from({ length: 30 }, (_, i) => `export const line${i + 1} = ${i + 1}`).join("\n")
  )
  fs.writeFileSync(path.join(directory, "docs", "guide.md"), "# Guide\n")
  fs.mkdirSync(path.join(directory, "docs", "images"))
  fs.writeFileSync(path.join(directory, "shot.png"), png)
}

type World = Effect.Effect.Success<ReturnType<typeof world>>

const send = (w: World, prompt: AdmittedPrompt.PromptInput) =>
  w.run(
    Effect.gen(function* () {
      const input = yield* SessionInput.Service
      const runner = yield* SessionRunner.Service
      yield* input.admit(w.session.id, { prompt })
      yield* runner.wake(w.session.id)
      yield* runner.wait(w.session.id)
    })
  )

/** The last user message of a recorded OpenAI-compatible request, as content parts. */
const userParts = (body: { messages: Array<{ role: string; content: unknown }> }) => {
  const users = body.messages.filter((message) => message.role === "user")
  const content = users[users.length - 1]?.content
  return typeof content === "string" ? [{ type: "text", text: content }] : (content as Array<Record<string, any>>)
}

describe("prompt attachments", () => {
  it.scopedLive(
    "a text file is a synthetic read of the mentioned line range, a directory is listed, a PNG goes natively to a vision model",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ input: ["text", "image"] })
        project(w.directory)
        yield* w.server.enqueue(reply(text("seen"), finish("stop")))
        yield* send(w, {
          text: "Look at @src/a.ts#L3-5, @docs and this screenshot",
          files: [
            { uri: "src/a.ts", source: { start: 8, end: 22, text: "@src/a.ts#L3-5" } },
            { uri: "docs" },
            { uri: `file://${path.join(w.directory, "shot.png")}`, name: "shot.png" },
            { uri: `data:text/plain;base64,${Buffer.from("remember the milk").toString("base64")}`, name: "note.txt" }
          ]
        })
        const parts = userParts((yield* w.server.awaitRequest(1)).body)
        expect(parts[0]).toEqual({ type: "text", text: "Look at @src/a.ts#L3-5, @docs and this screenshot" })
        const read = parts[1]!.text as string
        expect(read).toContain(`read {"path":"${path.join(w.directory, "src", "a.ts")}","offset":3,"limit":3}`)
        expect(read).toContain("3: export const line3 = 3")
        expect(read).toContain("5: export const line5 = 5")
        expect(read).not.toContain("6: export const line6")
        expect(read).not.toContain("2: export const line2")
        const listing = parts[2]!.text as string
        expect(listing).toContain(`The user attached the directory ${path.join(w.directory, "docs")}`)
        expect(listing).toContain("guide.md")
        expect(listing).toContain("images/")
        expect(parts[3]).toEqual({
          type: "image_url",
          image_url: { url: `data:image/png;base64,${png.toString("base64")}` }
        })
        expect(parts[4]!.text).toContain("note.txt")
        expect(parts[4]!.text).toContain("remember the milk")
      })
  )

  it.scopedLive("a file: URL's start/end query is the range of the synthetic read", () =>
    Effect.gen(function* () {
      const w = yield* world()
      project(w.directory)
      yield* w.server.enqueue(reply(text("ok"), finish("stop")))
      yield* send(w, {
        text: "here",
        files: [{ uri: `file://${path.join(w.directory, "src", "a.ts")}?start=10&end=11` }]
      })
      const read = userParts((yield* w.server.awaitRequest(1)).body)[1]!.text as string
      expect(read).toContain('"offset":10,"limit":2')
      expect(read).toContain("10: export const line10 = 10")
      expect(read).toContain("11: export const line11 = 11")
      expect(read).not.toContain("12: export const line12")
    })
  )

  it.scopedLive("a model without image input gets a note instead of the image, on Anthropic as well", () =>
    Effect.gen(function* () {
      const w = yield* world({ protocol: "anthropic" })
      project(w.directory)
      yield* w.server.enqueue(reply(text("ok"), finish("stop")))
      yield* send(w, { text: "what is this?", files: [{ uri: "shot.png" }] })
      const body = (yield* w.server.awaitRequest(1)).body
      const blocks = body.messages[0].content as Array<Record<string, any>>
      expect(blocks.some((block) => block.type === "image")).toBe(false)
      expect(blocks[1]!.type).toBe("text")
      expect(blocks[1]!.text).toContain(path.join(w.directory, "shot.png"))
      expect(blocks[1]!.text).toContain("does not accept image input")
    })
  )

  it.scopedLive("a model that takes PDFs but not images gets a document block for the PDF and a note for the PNG", () =>
    Effect.gen(function* () {
      const w = yield* world({ protocol: "anthropic", input: ["text", "pdf"] })
      project(w.directory)
      const pdf = Buffer.from("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n")
      fs.writeFileSync(path.join(w.directory, "spec.pdf"), pdf)
      yield* w.server.enqueue(reply(text("ok"), finish("stop")))
      yield* send(w, { text: "compare", files: [{ uri: "spec.pdf" }, { uri: "shot.png" }] })
      const blocks = (yield* w.server.awaitRequest(1)).body.messages[0].content as Array<Record<string, any>>
      expect(blocks[1]).toEqual({
        type: "document",
        source: { type: "base64", media_type: "application/pdf", data: pdf.toString("base64") }
      })
      expect(blocks[2]!.type).toBe("text")
      expect(blocks[2]!.text).toContain("does not accept image input")
    })
  )

  it.scopedLive("an image read by `read` reaches a vision model as an image, and a text-only model as a note", () =>
    Effect.gen(function* () {
      for (const input of [["text", "image"], ["text"]]) {
        const w = yield* world({ protocol: "anthropic", input })
        project(w.directory)
        yield* w.server.enqueue(
          reply(toolCall("call_1", "read", { path: "shot.png" }), finish("tool-calls")),
          reply(text("a dot"), finish("stop"))
        )
        yield* send(w, { text: "read the screenshot" })
        const body = (yield* w.server.awaitRequest(2)).body
        const result = (body.messages[2].content as Array<Record<string, any>>)[0]!
        expect(result.type).toBe("tool_result")
        if (input.includes("image")) {
          expect(result.content[1]).toEqual({
            type: "image",
            source: { type: "base64", media_type: "image/png", data: png.toString("base64") }
          })
        } else {
          expect(typeof result.content).toBe("string")
          expect(result.content).toContain("does not accept image input")
          expect(result.content).not.toContain("[file ")
        }
      }
    })
  )
})
