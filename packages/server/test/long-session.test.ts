import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { createOpencodeClient } from "@opencode-ai/client"
import { ContextLimitedModel, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { configHome, startServer } from "./harness.js"

/**
 * A session lives its whole life: 200 prompts, each answered after a tool call, against a model
 * with a 4,000-token context (set in `opencode.json`) that answers too-large requests with the
 * provider's overflow error, driven through the generated Promise client over HTTP. The session
 * compacts automatically whenever its history would not fit, and its durable event stream shows
 * every compaction.
 */
describe("a long session through the Promise client", () => {
  it.scopedLive(
    "200 prompts with tool calls on a 4,000-token model: automatic compactions, every prompt answered, each compaction on the event stream",
    () =>
      Effect.gen(function* () {
        const model = ContextLimitedModel.make({ context: 4000, tool: "read", input: () => ({ path: "notes.md" }) })
        const llm = yield* ScriptedLLMServer.make({ respond: model.respond, record: false })
        const document = ScriptedLLMServer.config(llm.url) as any
        document.provider.scripted.models.m.limit = { context: 4000, output: 400 }
        // Only `read` is offered: the definitions of every built-in tool alone would not fit in 4,000 tokens.
        document.agent = { build: { permission: { "*": "deny", read: "allow" } } }
        const server = yield* startServer({ XDG_CONFIG_HOME: configHome(document) })
        fs.writeFileSync(path.join(server.directory, "notes.md"), "- a note worth reading\n".repeat(40))

        const client = createOpencodeClient({ baseUrl: server.url })
        const session = yield* Effect.promise(() => client.sessions.create({}))
        const streamed: Array<any> = []
        const abort = new AbortController()
        const watching = Effect.runFork(
          Effect.promise(async () => {
            try {
              for await (const event of client.sessions.events(
                { sessionID: session.id, after: 0 },
                { signal: abort.signal }
              )) {
                streamed.push(event)
              }
            } catch {
              // Aborted at the end of the test.
            }
          })
        )
        yield* Effect.addFinalizer(() => Effect.sync(() => abort.abort()))

        for (let n = 1; n <= 200; n++) {
          yield* Effect.promise(() =>
            client.sessions.prompt({
              sessionID: session.id,
              prompt: { text: `Prompt ${n}: read the notes once more and tell me what you see there.` }
            })
          )
          yield* Effect.promise(() => client.sessions.wait({ sessionID: session.id }))
        }

        // The whole durable history, page by page.
        const history: Array<any> = []
        for (let after = 0; ; ) {
          const page = yield* Effect.promise(() =>
            client.sessions.history({ sessionID: session.id, after: String(after), limit: "1000" })
          )
          history.push(...page.data)
          if (!page.hasMore) break
          after = page.data.at(-1)!.durable!.seq
        }
        const count = (type: string) => history.filter((event) => event.type === `session.next.${type}`).length
        const stats = model.stats()
        expect(count("prompted")).toBe(200)
        expect(count("step.failed")).toBe(0)
        expect(stats.answers).toBe(200)
        expect(stats.toolCalls).toBeGreaterThanOrEqual(200)
        expect(count("tool.success")).toBe(stats.toolCalls)
        expect(stats.compactions).toBeGreaterThanOrEqual(5)
        expect(count("compaction.ended")).toBe(stats.compactions)
        expect(stats.largest).toBeLessThanOrEqual(4000)

        // The event stream delivered every compaction as it happened.
        const last = history.at(-1).durable.seq
        while (streamed.at(-1)?.durable?.seq !== last) yield* Effect.sleep("10 millis")
        abort.abort()
        yield* Effect.promise(() => Effect.runPromise(watching.await))
        const ofStream = streamed.filter((event) => event.type === "session.next.compaction.ended")
        expect(ofStream.map((event) => event.durable.seq)).toEqual(
          history.filter((event) => event.type === "session.next.compaction.ended").map((event) => event.durable.seq)
        )
        expect(ofStream.every((event) => event.data.reason === "auto")).toBe(true)
      }),
    300_000
  )
})
