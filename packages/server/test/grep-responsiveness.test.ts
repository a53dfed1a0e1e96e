import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { LLMScript, ScriptedLLMServer, TestDatabase } from "@opencode-ai/core/testing"
import { Effect, Fiber } from "effect"
import { configHome, tempDir } from "./harness.js"

const { reply, text, toolCall, finish } = LLMScript

const bin = path.resolve(__dirname, "../dist/bin.js")

/** `opencode serve --port 0` from the built bundle, run in `directory`; its URL once it listens. Killed with the scope. */
const serve = (directory: string, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.promise(
      () =>
        new Promise<{ child: ChildProcess; url: string }>((resolve, reject) => {
          const child = spawn(process.execPath, [bin, "serve", "--port", "0"], {
            cwd: directory,
            env: {
              PATH: process.env.PATH ?? "",
              HOME: tempDir("home"),
              OPENCODE_DISABLE_MODELS_FETCH: "1",
              ...TestDatabase.serverEnv(env.XDG_DATA_HOME ?? tempDir("pg")),
              ...env
            },
            stdio: ["ignore", "pipe", "pipe"]
          })
          let out = ""
          let err = ""
          child.stdout?.on("data", (chunk) => {
            out += chunk
            const match = /listening on (http:\/\/\S+)/.exec(out)
            if (match?.[1] !== undefined) resolve({ child, url: match[1] })
          })
          child.stderr?.on("data", (chunk) => {
            err += chunk
          })
          child.on("exit", (code) => reject(new Error(`serve exited with ${code}: ${out}\n${err}`)))
        })
    ),
    ({ child }) => Effect.sync(() => child.kill("SIGKILL"))
  )

const post = (url: string, body?: unknown) =>
  Effect.promise(() =>
    fetch(url, {
      method: "POST",
      ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
    })
      .then((response) => response.text())
      .then((raw) => (raw === "" ? undefined : JSON.parse(raw)) as { data: { id: string } } | undefined)
  )

describe("grep in the built server", () => {
  it.scopedLive(
    "a catastrophic pattern from the model fails at the default time limit while /api/health keeps answering",
    () =>
      Effect.gen(function* () {
        const llm = yield* ScriptedLLMServer.make()
        const directory = fs.realpathSync(tempDir("project"))
        fs.writeFileSync(path.join(directory, "evil.txt"), `${"a".repeat(40)}b\n`)
        const { url } = yield* serve(directory, {
          XDG_DATA_HOME: tempDir("data"),
          XDG_CONFIG_HOME: configHome(ScriptedLLMServer.config(llm.url))
        })
        yield* llm.enqueue(
          reply(toolCall("call_grep", "grep", { pattern: "^(a+)+$" }), finish("tool-calls")),
          reply(text("That pattern is too slow."), finish("stop"))
        )
        const session = (yield* post(`${url}/api/session`, {}))?.data
        if (session === undefined) return yield* Effect.dieMessage("no session created")

        // Health probes, one after another, from before the prompt until the session is idle again;
        // `answered` counts those sent and answered while the grep ran: after the model's first request
        // (which returns the grep call) and before its second (which carries the grep's result).
        const grepping = Effect.map(llm.requests, (requests) => requests.length === 1)
        const statuses: Array<number> = []
        let answered = 0
        const probing = yield* Effect.fork(
          Effect.forever(
            Effect.gen(function* () {
              const sentDuringGrep = yield* grepping
              const status = yield* Effect.promise(() =>
                fetch(`${url}/api/health`).then((response) => response.text().then(() => response.status))
              )
              statuses.push(status)
              if (sentDuringGrep && (yield* grepping)) answered++
              yield* Effect.sleep("20 millis")
            })
          )
        )
        while (statuses.length === 0) yield* Effect.sleep("20 millis")
        yield* post(`${url}/api/session/${session.id}/prompt`, { prompt: { text: "find the a-lines" } })
        // The match never ends by itself (40 `a`s): the turn ending at all means the limit stopped it.
        yield* post(`${url}/api/session/${session.id}/wait`)
        yield* Fiber.interrupt(probing)

        // The bundled worker ran the pattern until the 15 s default limit, then the call failed readably.
        const requests = yield* llm.requests
        expect(requests).toHaveLength(2)
        const messages = (requests[1]?.body.messages ?? []) as Array<{ role: string; content: string }>
        const toolMessage = messages.find((message) => message.role === "tool")
        expect(toolMessage?.content).toContain(
          'The pattern "^(a+)+$" took longer than 15s to match, so the search was stopped. Simplify it'
        )
        // Every probe was answered. Before the fix the first probe after the prompt waited for the whole
        // match, so at most one could both start and finish during the grep; with the match in a
        // worker, probes sent and answered during those 15 s number in the hundreds on an idle machine,
        // and far more than 20 however loaded it is.
        expect(statuses.every((status) => status === 200)).toBe(true)
        expect(answered).toBeGreaterThan(20)
      }),
    40_000
  )
})
