import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { LLMScript, SampleFiles, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { call, configHome, startServer, tempDir } from "./harness.js"

/**
 * Attachments over real HTTP: `opencode serve`'s listener with a vision model on a scripted provider
 * (loopback). A PNG attached to a prompt is in the provider's request; every attachment limit is a
 * tagged 400 (`InvalidRequestError`, kind `prompt`) that admits nothing.
 */

const { png } = SampleFiles

const setup = Effect.gen(function* () {
  const llm = yield* ScriptedLLMServer.make()
  const server = yield* startServer({
    XDG_CONFIG_HOME: configHome(ScriptedLLMServer.config(llm.url, { input: ["text", "image"] }))
  })
  const session = (yield* call(`${server.url}/api/session`, "POST", {})).body.data
  return { ...server, llm, base: `${server.url}/api/session/${session.id}` }
})

describe("prompt attachments over HTTP", () => {
  it.scopedLive("a PNG attached to a prompt reaches the provider's request as an image part", () =>
    Effect.gen(function* () {
      const { base, directory, llm } = yield* setup
      fs.writeFileSync(path.join(directory, "shot.png"), png)
      yield* llm.enqueue(LLMScript.reply(LLMScript.text("a red dot"), LLMScript.finish("stop")))
      const admitted = yield* call(`${base}/prompt`, "POST", {
        prompt: {
          text: "what is in @shot.png?",
          files: [{ uri: "shot.png", source: { start: 11, end: 20, text: "@shot.png" } }]
        }
      })
      expect(admitted.status).toBe(200)
      expect(admitted.body.data.prompt.files[0].mime).toBe("image/png")
      expect((yield* call(`${base}/wait`, "POST")).status).toBeLessThan(300)
      const request = yield* llm.awaitRequest(1)
      const user = request.body.messages.find((message: { role: string }) => message.role === "user")
      expect(user.content).toEqual([
        { type: "text", text: "what is in @shot.png?" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${png.toString("base64")}` } }
      ])
    })
  )

  it.scoped("attachment limits are tagged 400s naming the field, and admit nothing", () =>
    Effect.gen(function* () {
      const { base, directory, dataHome } = yield* setup
      fs.writeFileSync(path.join(directory, "a.txt"), "a\n")
      const outside = tempDir("outside")
      fs.writeFileSync(path.join(outside, "secret.txt"), "secret\n")
      fs.symlinkSync(path.join(outside, "secret.txt"), path.join(directory, "link.txt"))
      fs.writeFileSync(path.join(directory, "big.bin"), Buffer.alloc(5 * 1024 * 1024 + 1))
      for (let i = 0; i < 5; i++)
        fs.writeFileSync(path.join(directory, `part${i}.txt`), Buffer.alloc(4.5 * 1024 * 1024))

      const rejected = async (files: ReadonlyArray<{ uri: string }>) => {
        const response = await fetch(`${base}/prompt`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ prompt: { text: "x", files }, resume: false })
        })
        return { status: response.status, body: await response.json() }
      }
      const cases: ReadonlyArray<readonly [string, ReadonlyArray<{ uri: string }>, string, RegExp]> = [
        ["unknown scheme", [{ uri: "ftp://example.test/a.txt" }], "prompt.files.0.uri", /Unsupported URI scheme/],
        ["outside the Location", [{ uri: path.join(outside, "secret.txt") }], "prompt.files.0.uri", /outside/],
        ["a symlink leading outside", [{ uri: "a.txt" }, { uri: "link.txt" }], "prompt.files.1.uri", /outside/],
        ["over the size limit", [{ uri: "big.bin" }], "prompt.files.0.uri", /attachment limit/],
        ["too many", Array.from({ length: 21 }, () => ({ uri: "a.txt" })), "prompt.files", /at most 20/],
        ["over the total", Array.from({ length: 5 }, (_, i) => ({ uri: `part${i}.txt` })), "prompt.files", /together/]
      ]
      for (const [name, files, field, message] of cases) {
        const response = yield* Effect.promise(() => rejected(files))
        expect(response.status, name).toBe(400)
        expect(response.body, name).toMatchObject({ _tag: "InvalidRequestError", kind: "prompt", field })
        expect(response.body.message, name).toMatch(message)
      }
      // Nothing was admitted by any of them.
      expect((yield* call(`${base}/history`, "GET")).body.data).toEqual([])

      // The Managed Tool Output directory is outside the Location, but the agents may read it.
      const managed = path.join(dataHome, "opencode", "tool-output")
      fs.mkdirSync(managed, { recursive: true })
      fs.writeFileSync(path.join(managed, "tool_output.txt"), "full output\n")
      const allowed = yield* call(`${base}/prompt`, "POST", {
        prompt: { text: "see", files: [{ uri: path.join(managed, "tool_output.txt") }] },
        resume: false
      })
      expect(allowed.status).toBe(200)
    })
  )
})
