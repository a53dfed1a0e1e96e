import * as fs from "node:fs"
import * as path from "node:path"
import { it } from "@effect/vitest"
import { Effect } from "effect"
import { describe, expect } from "vitest"
import { LLMRequest } from "../../src/llm/llm-request.js"
import type { Provider } from "../../src/llm/provider.js"
import { LLMScript as S } from "../../src/testing/llm-script.js"
import { baseRequest, collect, setup } from "./harness.js"

/**
 * Image and PDF attachments on the wire: each adapter's request body for the same provider-neutral
 * request (a user turn with a PNG and a PDF, then a `read` whose result returned the PNG) is what the
 * server received over loopback HTTP, compared with a recorded fixture of that protocol's shape
 * (test/fixtures/llm/*-image-request.json). `RECORD_FIXTURES=1` rewrites the fixtures.
 */

/** A real 1×1 PNG. */
export const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
/** A minimal PDF header, base64. */
const pdf = Buffer.from("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n").toString("base64")

const request = baseRequest({
  messages: [
    {
      role: "user",
      content: [
        LLMRequest.text("What is in this screenshot and the spec?"),
        LLMRequest.file("image/png", `data:image/png;base64,${png}`, "shot.png"),
        LLMRequest.file("application/pdf", `data:application/pdf;base64,${pdf}`, "spec.pdf")
      ]
    },
    LLMRequest.assistant(LLMRequest.toolCall("call_1", "read", { path: "/repo/logo.png" })),
    LLMRequest.tool(
      LLMRequest.toolResult("call_1", "read", "Read image file /repo/logo.png (image/png, 70 bytes); it is attached.", {
        files: [LLMRequest.file("image/png", `data:image/png;base64,${png}`, "logo.png")]
      })
    )
  ]
})

const fixturePath = (name: string) => path.join(__dirname, "../fixtures/llm", name)

const bodyFor = (protocol: Provider.Protocol) =>
  Effect.gen(function* () {
    const { server, client } = yield* setup(protocol)
    yield* server.enqueue(S.reply(S.text("A red dot.")))
    yield* collect(client.stream(request))
    return (yield* server.awaitRequest(1)).body
  })

const matchesFixture = (body: unknown, name: string) => {
  if (process.env.RECORD_FIXTURES === "1") fs.writeFileSync(fixturePath(name), `${JSON.stringify(body, null, 2)}\n`)
  expect(body).toEqual(JSON.parse(fs.readFileSync(fixturePath(name), "utf8")))
}

describe("file parts on the wire", () => {
  it.scoped("OpenAI-compatible: image_url and file parts; a tool's image follows its result in a user turn", () =>
    Effect.gen(function* () {
      const body = yield* bodyFor("openai-compatible")
      matchesFixture(body, "openai-image-request.json")
      const user = body.messages[1]
      expect(user.content[1]).toEqual({ type: "image_url", image_url: { url: `data:image/png;base64,${png}` } })
      expect(user.content[2]).toEqual({
        type: "file",
        file: { filename: "spec.pdf", file_data: `data:application/pdf;base64,${pdf}` }
      })
      expect(body.messages.map((message: { role: string }) => message.role)).toEqual([
        "system",
        "user",
        "assistant",
        "tool",
        "user"
      ])
    })
  )

  it.scoped("Anthropic: image and document blocks with base64 sources; the tool_result carries its image", () =>
    Effect.gen(function* () {
      const body = yield* bodyFor("anthropic")
      matchesFixture(body, "anthropic-image-request.json")
      const user = body.messages[0]
      expect(user.content[1]).toEqual({
        type: "image",
        source: { type: "base64", media_type: "image/png", data: png }
      })
      expect(user.content[2]).toEqual({
        type: "document",
        source: { type: "base64", media_type: "application/pdf", data: pdf }
      })
      const result = body.messages[2].content[0]
      expect(result.type).toBe("tool_result")
      expect(result.content[1]).toEqual({
        type: "image",
        source: { type: "base64", media_type: "image/png", data: png }
      })
    })
  )

  it.scoped("Gemini: inlineData parts; the tool's image follows the functionResponse in the same user turn", () =>
    Effect.gen(function* () {
      const body = yield* bodyFor("google")
      matchesFixture(body, "gemini-image-request.json")
      const user = body.contents[0]
      expect(user.parts[1]).toEqual({ inlineData: { mimeType: "image/png", data: png } })
      expect(user.parts[2]).toEqual({ inlineData: { mimeType: "application/pdf", data: pdf } })
      expect(body.contents[2]).toEqual({
        role: "user",
        parts: [
          {
            functionResponse: {
              name: "read",
              response: { output: "Read image file /repo/logo.png (image/png, 70 bytes); it is attached." }
            }
          },
          { text: "The files returned by the read call call_1 follow." },
          { inlineData: { mimeType: "image/png", data: png } }
        ]
      })
    })
  )

  it.scoped("an http(s) image is passed by URL: image_url, a url source, a Gemini fileData part", () =>
    Effect.gen(function* () {
      const linked = baseRequest({
        messages: [
          {
            role: "user",
            content: [LLMRequest.text("Look"), LLMRequest.file("image/jpeg", "https://example.test/a.jpg")]
          }
        ]
      })
      const openai = yield* setup("openai-compatible")
      yield* openai.server.enqueue(S.reply(S.text("ok")))
      yield* collect(openai.client.stream(linked))
      expect((yield* openai.server.awaitRequest(1)).body.messages[1].content[1]).toEqual({
        type: "image_url",
        image_url: { url: "https://example.test/a.jpg" }
      })
      const anthropic = yield* setup("anthropic")
      yield* anthropic.server.enqueue(S.reply(S.text("ok")))
      yield* collect(anthropic.client.stream(linked))
      const block = (yield* anthropic.server.awaitRequest(1)).body.messages[0].content[1]
      expect(block.type).toBe("image")
      expect(block.source).toEqual({ type: "url", url: "https://example.test/a.jpg" })
      const gemini = yield* setup("google")
      yield* gemini.server.enqueue(S.reply(S.text("ok")))
      yield* collect(gemini.client.stream(linked))
      expect((yield* gemini.server.awaitRequest(1)).body.contents[0].parts[1]).toEqual({
        fileData: { mimeType: "image/jpeg", fileUri: "https://example.test/a.jpg" }
      })
    })
  )
})
