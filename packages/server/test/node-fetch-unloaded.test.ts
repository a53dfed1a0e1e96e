import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import * as Binary from "./binary.js"
import { call, configHome, tempDir } from "./harness.js"

/**
 * Node ships a copy of undici for its own `fetch`, `Request` and `Headers`, loaded on first use of any
 * of them: about 12 MiB and 30 ms. The server has its own (vendored) undici for provider requests and
 * no use for Node's, so a server that takes requests with bodies and calls a provider must not load
 * it. Three things used to: the body limit rebuilt every request with a body as a web `Request`, the
 * vendored undici's cookie helpers read the global `Headers` when loaded, and (over PostgreSQL, which
 * the second test pass runs this with) the `pg` driver constructed a `Response` when loaded, to tell
 * whether it runs in a Cloudflare Worker.
 */
describe("Node's own fetch implementation", () => {
  it.scopedLive("is not loaded by a served prompt: request bodies, a provider call and its stream", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      yield* llm.enqueue(LLMScript.reply(LLMScript.text("hello ", "there"), LLMScript.finish("stop")))
      const scratch = tempDir("fetch-unloaded")
      // Preloaded into the server: at exit, the undici modules Node itself loaded.
      const report = path.join(scratch, "loaded.json")
      const preload = path.join(scratch, "report.cjs")
      fs.writeFileSync(
        preload,
        `process.on("exit", () => require("node:fs").writeFileSync(${JSON.stringify(report)}, JSON.stringify(process.moduleLoadList.filter((m) => m.includes("undici")))))\n`
      )
      const server = yield* Effect.promise(() =>
        Binary.listen(["serve", "--port", "0"], {
          cwd: tempDir("project"),
          env: {
            XDG_CONFIG_HOME: configHome(ScriptedLLMServer.config(llm.url)),
            XDG_DATA_HOME: tempDir("data"),
            NODE_OPTIONS: `--require ${preload}`
          }
        })
      )
      const created = yield* call(`${server.url}/api/session`, "POST", {})
      expect(created.status, JSON.stringify(created.body)).toBe(200)
      const session = created.body.data
      const base = `${server.url}/api/session/${session.id}`
      expect((yield* call(`${base}/prompt`, "POST", { prompt: { text: "hi" } })).status).toBe(200)
      expect((yield* call(`${base}/wait`, "POST")).status).toBeLessThan(300)
      expect((yield* llm.awaitRequest(1)).body.messages.at(-1).content).toBeDefined()
      const history = (yield* call(`${base}/history`, "GET")).body.data
      expect(JSON.stringify(history)).toContain("hello there")

      server.child.kill("SIGTERM")
      expect(yield* Effect.promise(() => new Promise((resolve) => server.child.on("exit", resolve)))).toBe(0)
      // The module list is real: Node loads other internal modules this way.
      expect(JSON.parse(fs.readFileSync(report, "utf8"))).toEqual([])
    })
  )
})
