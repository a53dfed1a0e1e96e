import * as fs from "node:fs"
import * as path from "node:path"
import { LLMScript, ScriptedLLMServer, TestDatabase } from "@opencode-ai/core/testing"
import { Effect, Exit, Scope } from "effect"
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest"
import * as Binary from "./binary.js"
import { configHome, tempDir } from "./harness.js"

/**
 * `opencode run` and `opencode session list|show|export` on the real binary (`dist/bin.js`), embedded
 * and attached to a real `opencode serve`, against a loopback scripted LLM. Interactive cases run the
 * CLI in a pseudo-terminal.
 */

// Each case starts several Node processes (the CLI, sometimes a server): on a busy machine that takes a while.
vi.setConfig({ testTimeout: 300_000 })

const { reply, text, toolCall, finish, usage, reasoning } = LLMScript

let scope: Scope.CloseableScope
let llm: ScriptedLLMServer.ScriptedLLMServer

beforeEach(async () => {
  scope = Effect.runSync(Scope.make())
  llm = await Effect.runPromise(ScriptedLLMServer.make().pipe(Scope.extend(scope)))
})
afterEach(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

const enqueue = (...turns: ReadonlyArray<LLMScript.Turn>) => Effect.runPromise(llm.enqueue(...turns))

/** A fresh world: data, config (the scripted provider; `bash` asks) and a project directory. */
const world = (config: Record<string, unknown> = {}) => {
  const project = tempDir("project")
  const data = tempDir("xdg")
  return {
    project,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: tempDir("home"),
      XDG_DATA_HOME: data,
      // Under OPENCODE_TEST_DATABASE=postgres: the world's database, for `serve` and the embedded `run` alike.
      ...TestDatabase.serverEnv(data),
      XDG_CONFIG_HOME: configHome({ ...ScriptedLLMServer.config(llm.url), permission: { bash: "ask" }, ...config }),
      XDG_CACHE_HOME: tempDir("cache"),
      OPENCODE_DISABLE_MODELS_FETCH: "1"
    } as Record<string, string>
  }
}
type World = ReturnType<typeof world>

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the CLI with pipes (no terminal) to its exit. */
const cli = (w: World, args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Result> =>
  Binary.run(args, { cwd: w.project, env: { ...w.env, ...env } })

/** Runs the CLI in a pseudo-terminal; `output` grows as it writes, `exited` resolves with its status. */
const terminal = (w: World, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Binary.terminal(args, { cwd: w.project, env: { ...w.env, ...env } })

/** Starts `opencode serve` on the world's data dir and resolves with its URL. */
const serve = (w: World, env: Record<string, string> = {}) =>
  Binary.listen(["serve", "--port", "0"], { cwd: w.project, env: { ...w.env, ...env } })

const stop = Binary.stop

const api = async (url: string, route: string, init: RequestInit = {}) => {
  const response = await fetch(`${url}${route}`, {
    ...init,
    headers: { "content-type": "application/json", ...(init.headers ?? {}) }
  })
  return response.status === 204 ? undefined : ((await response.json()) as any)
}

/** Every page of a session's messages, oldest first, and of its durable log, straight from the API. */
const apiMessages = async (url: string, sessionID: string) => {
  const all: Array<unknown> = []
  let page = await api(url, `/api/session/${sessionID}/message?order=asc&limit=200`)
  all.push(...page.data)
  while (page.cursor.next !== undefined) {
    page = await api(url, `/api/session/${sessionID}/message?cursor=${encodeURIComponent(page.cursor.next)}`)
    all.push(...page.data)
  }
  return all
}
const apiHistory = async (url: string, sessionID: string) => {
  const all: Array<any> = []
  let after = 0
  while (true) {
    const page = await api(url, `/api/session/${sessionID}/history?after=${after}&limit=1000`)
    all.push(...page.data)
    if (!page.hasMore) return all
    after = page.data[page.data.length - 1].durable.seq
  }
}

const sessionOf = (stdout: string) => /(ses_[A-Za-z0-9]+) · cost/.exec(stdout)?.[1]

const bashTurns = (command: string, answer: string) => [
  reply(toolCall("call_1", "bash", { command, description: "print a word" }), finish("tool-calls")),
  reply(text(...LLMScript.split(answer, 3)), usage({ input: 30, output: 7 }), finish("stop"))
]

describe("opencode run", () => {
  it("embedded: streams the text, folds reasoning, prints cost and tokens, and pipes no ESC byte", async () => {
    const w = world()
    await enqueue(
      reply(
        reasoning("Let me think about it.\nSecond thought."),
        text("Hello ", "from the ", "scripted model."),
        usage({ input: 12, output: 5 }),
        finish("stop")
      )
    )
    const result = await cli(w, ["run", "say", "hello"])
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("Hello from the scripted model.\n")
    expect(result.stdout).toContain("thinking: Let me think about it. (+1 line)")
    expect(result.stdout).toMatch(/ses_\w+ · cost \$0\.0000 · tokens 12 in, 5 out/)
    expect(result.stdout).not.toContain("\u001b")
    // The prompt reached the model as the user's text.
    const [request] = await Effect.runPromise(llm.requests)
    expect(JSON.stringify(request!.body.messages)).toContain("say hello")
  })

  it("--format json prints one event per line, each a session event of the run", async () => {
    const w = world()
    await enqueue(reply(text("one ", "two"), finish("stop")))
    const result = await cli(w, ["run", "--format", "json", "count"])
    expect(result.code).toBe(0)
    const events = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
    const types = events.map((event) => event.type)
    expect(types).toContain("session.next.prompt.admitted")
    expect(types).toContain("session.next.text.delta")
    expect(types).toContain("session.next.step.ended")
    expect(
      events
        .filter((e) => e.type === "session.next.text.delta")
        .map((e) => e.data.delta)
        .join("")
    ).toBe("one two")
    expect(new Set(events.map((event) => event.data.sessionID)).size).toBe(1)
  })

  it("a provider failure exits 1 with the error on one line", async () => {
    const w = world()
    await enqueue(LLMScript.httpError(400, { message: "model refuses this request" }))
    const result = await cli(w, ["run", "fail please"])
    expect(result.code).toBe(1)
    expect(result.stdout).toContain("model refuses this request")
    expect(result.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^opencode: the turn failed: .*model refuses this request/)
    ])
  })

  it("--yes allows a permission ask; the tool's bounded output and the answer are shown", async () => {
    const w = world()
    await enqueue(...bashTurns("echo first-word; seq 1 20", "The command printed a word."))
    const result = await cli(w, ["run", "--yes", "run echo"])
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("permission bash echo first-word; seq 1 20: allowed once (--yes)")
    expect(result.stdout).toContain("✓ bash echo first-word; seq 1 20")
    expect(result.stdout).toContain("  │ first-word")
    expect(result.stdout).toMatch(/… \d+ more lines/)
    expect(result.stdout).toContain("The command printed a word.")
  })

  it("--deny refuses the ask: the call fails, the model goes on, and the run exits 3", async () => {
    const w = world()
    await enqueue(...bashTurns("echo never-run", "I was not allowed."))
    const result = await cli(w, ["run", "--deny", "run echo"])
    expect(result.code).toBe(6)
    expect(result.stdout).toContain("permission bash echo never-run: refused (--deny)")
    expect(result.stdout).toContain("✗ bash echo never-run")
    expect(result.stdout).not.toContain("  │ never-run")
    expect(result.stdout).toContain("I was not allowed.")
    expect(result.stderr).toBe("opencode: 1 permission request was refused\n")
  })

  it("with no terminal and neither flag, an ask is refused with a clear message", async () => {
    const w = world()
    await enqueue(...bashTurns("echo nobody", "Refused."))
    const result = await cli(w, ["run", "run echo"])
    expect(result.code).toBe(6)
    expect(result.stdout).toContain("refused, no terminal to ask (pass --yes to allow, --deny to refuse)")
  })

  it("--yes and --deny together, and a malformed --model, are usage errors (exit 2)", async () => {
    const w = world()
    const both = await cli(w, ["run", "--yes", "--deny", "x"])
    expect(both.code).toBe(2)
    expect(both.stderr).toBe("opencode: --yes and --deny cannot be used together\n")
    const model = await cli(w, ["run", "--model", "nomodel", "x"])
    expect(model.code).toBe(2)
    expect(model.stderr).toContain("expected provider/model")
    const unknown = await cli(w, ["run", "--session", "ses_doesnotexist", "x"])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr.trim().split("\n")).toHaveLength(1)
  })

  it("an unreachable server is one line on stderr and exit 4, and so are refused credentials", async () => {
    const w = world()
    const gone = await cli(w, ["run", "--attach", "http://127.0.0.1:9", "hello"])
    expect(gone.code).toBe(4)
    expect(gone.stderr).toMatch(/^opencode: cannot reach the server at http:\/\/127\.0\.0\.1:9: .+\n$/)
    expect(gone.stdout).toBe("")

    const server = await serve(w, { OPENCODE_SERVER_PASSWORD: "s3cret" })
    const refused = await cli(w, ["run", "--attach", server.url, "hello"])
    expect(refused.code).toBe(4)
    expect(refused.stderr).toBe(
      `opencode: the server at ${server.url} refused the credentials: set OPENCODE_SERVER_PASSWORD or pass --password\n`
    )
    await enqueue(reply(text("authorized"), finish("stop")))
    const allowed = await cli(w, ["run", "--attach", server.url, "--password", "s3cret", "hello"])
    expect(allowed.code).toBe(0)
    expect(allowed.stdout).toContain("authorized")
    await stop(server.child)
  })

  it("--attach: runs against a real server; --session continues the session there", async () => {
    const w = world()
    const server = await serve(w)
    await enqueue(...bashTurns("echo attached", "Done over HTTP."))
    const first = await cli(w, ["run", "--attach", server.url, "--yes", "first"])
    expect(first.code).toBe(0)
    expect(first.stdout).toContain("  │ attached")
    expect(first.stdout).toContain("Done over HTTP.")
    const sessionID = sessionOf(first.stdout)!
    expect(sessionID).toBeDefined()

    await enqueue(reply(text("Second answer."), finish("stop")))
    const second = await cli(w, ["run", "--attach", server.url, "--session", sessionID, "second"])
    expect(second.code).toBe(0)
    expect(second.stdout).toContain("Second answer.")
    expect(sessionOf(second.stdout)).toBe(sessionID)
    const users = (await apiMessages(server.url, sessionID)).filter((m: any) => m.type === "user")
    expect(users.map((m: any) => m.text)).toEqual(["first", "second"])
    await stop(server.child)
  })

  it("on a terminal: asks, and `y` allows the call once", async () => {
    const w = world()
    await enqueue(...bashTurns("echo typed-yes", "Allowed by the user."))
    const run = terminal(w, ["run", "run echo"])
    await run.waitFor(/Allow bash echo typed-yes\? \[y\] once {2}\[a\] always {2}\[n\] no/)
    run.term.write("y")
    expect(await run.exited).toBe(0)
    expect(run.output()).toContain("permission bash echo typed-yes: allowed once")
    expect(run.output()).toContain("typed-yes")
    expect(run.output()).toContain("Allowed by the user.")
    // On a terminal there is colour.
    expect(run.output()).toContain("\u001b[")
  })

  it("on a terminal with NO_COLOR: no ANSI at all, and `n` refuses (exit 6)", async () => {
    const w = world()
    await enqueue(...bashTurns("echo typed-no", "Not allowed."))
    const run = terminal(w, ["run", "run echo"], { NO_COLOR: "1" })
    await run.waitFor(/Allow bash echo typed-no\?/)
    run.term.write("n")
    expect(await run.exited).toBe(6)
    expect(run.output()).toContain("permission bash echo typed-no: refused")
    expect(run.output()).not.toContain("\u001b")
  })

  it("a permission answered by another client over HTTP withdraws the local question", async () => {
    const w = world()
    const server = await serve(w)
    await enqueue(...bashTurns("echo from-elsewhere", "Someone else allowed it."))
    const run = terminal(w, ["run", "--attach", server.url, "run echo"])
    await run.waitFor(/Allow bash echo from-elsewhere\?/)
    const pending = await api(server.url, "/api/permission/request")
    expect(pending.data ?? pending).toHaveLength(1)
    const request = (pending.data ?? pending)[0]
    await api(server.url, `/api/session/${request.sessionID}/permission/${request.id}/reply`, {
      method: "POST",
      body: JSON.stringify({ reply: "once" })
    })
    expect(await run.exited).toBe(0)
    expect(run.output()).toContain("permission bash echo from-elsewhere: answered elsewhere (allowed once)")
    expect(run.output()).toContain("Someone else allowed it.")
    await stop(server.child)
  })

  it("Ctrl-C interrupts the session's running Step and exits 130", async () => {
    const w = world()
    const server = await serve(w)
    const gate = LLMScript.gate()
    await enqueue(reply(text("partial "), LLMScript.hold(gate), text("never"), finish("stop")))
    const run = terminal(w, ["run", "--attach", server.url, "wait for me"])
    await Effect.runPromise(gate.reached)
    await run.waitFor(/partial/)
    run.term.write("\u0003")
    expect(await run.exited).toBe(130)
    expect(run.output()).toMatch(/interrupted; session ses_\w+ stopped/)
    expect(await api(server.url, "/api/session/active")).toEqual({ data: {} })
    await Effect.runPromise(gate.aborted)
    await stop(server.child)
  })
})

describe("opencode session", () => {
  it("list, show and export agree with the API (embedded, and with --attach)", async () => {
    const w = world()
    await enqueue(...bashTurns("echo listed", "Listed and shown."))
    const ran = await cli(w, ["run", "--yes", "make", "a", "session"])
    expect(ran.code).toBe(0)
    const sessionID = sessionOf(ran.stdout)!

    const listed = await cli(w, ["session", "list", "--json"])
    expect(listed.code).toBe(0)
    const table = await cli(w, ["session", "list"])
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+TITLE\s+UPDATED\s+STATUS\s+COST\s+TOKENS IN\s+TOKENS OUT$/)
    expect(table.stdout).toMatch(new RegExp(`${sessionID}\\s+.*\\s+idle\\s+\\$0\\.0000\\s+30\\s+7`))
    const shown = await cli(w, ["session", "show", sessionID])
    expect(shown.code).toBe(0)
    const exportFile = path.join(tempDir("export"), "session.json")
    const exported = await cli(w, ["session", "export", sessionID, "--output", exportFile])
    expect(exported.code).toBe(0)
    expect(exported.stderr).toContain(`exported ${sessionID}`)

    // The same data dir served over HTTP: the API's view.
    const server = await serve(w)
    const sessions = (await api(server.url, "/api/session?limit=200")).data
    expect(JSON.parse(listed.stdout)).toEqual(sessions.map((s: any) => ({ ...s, status: "idle" })))

    const messages = await apiMessages(server.url, sessionID)
    const history = await apiHistory(server.url, sessionID)
    const document = JSON.parse(fs.readFileSync(exportFile, "utf8"))
    expect(document.session).toEqual((await api(server.url, `/api/session/${sessionID}`)).data)
    expect(document.messages).toEqual(messages)
    expect(document.events).toEqual(history)
    expect(history.map((e: any) => e.type)).toContain("session.next.tool.success")

    // show: every user text, assistant text and tool call of the API's messages, in order.
    expect(shown.stdout.split("\n")[0]).toContain(`(${sessionID})`)
    let at = shown.stdout.indexOf("── user")
    for (const part of ["make a session", "✓ bash echo listed", "  │ listed", "Listed and shown."]) {
      const index = shown.stdout.indexOf(part, at)
      expect(index, part).toBeGreaterThan(at)
      at = index + part.length
    }
    expect(shown.stdout).not.toContain("\u001b")

    // With --attach, to the server: the same answers.
    const attachedList = await cli(w, ["session", "list", "--json", "--attach", server.url])
    expect(JSON.parse(attachedList.stdout)).toEqual(JSON.parse(listed.stdout))
    const attachedExport = await cli(w, ["session", "export", sessionID, "--attach", server.url])
    expect(JSON.parse(attachedExport.stdout)).toEqual(document)
    const attachedShow = await cli(w, ["session", "show", sessionID, "--attach", server.url])
    expect(attachedShow.stdout).toBe(shown.stdout)
    await stop(server.child)
  })

  it("delete removes the session embedded and with --attach; a second delete is exit 2", async () => {
    const w = world()
    await enqueue(reply(text("first"), finish("stop")), reply(text("second"), finish("stop")))
    const first = sessionOf((await cli(w, ["run", "one"])).stdout)!
    const second = sessionOf((await cli(w, ["run", "two"])).stdout)!

    const deleted = await cli(w, ["session", "delete", first])
    expect(deleted.code).toBe(0)
    expect(deleted.stderr).toBe(`deleted ${first}\n`)
    const listed = JSON.parse((await cli(w, ["session", "list", "--json"])).stdout)
    expect(listed.map((s: any) => s.id)).toEqual([second])

    const server = await serve(w)
    const attached = await cli(w, ["session", "delete", second, "--attach", server.url])
    expect(attached.code).toBe(0)
    expect((await api(server.url, "/api/session?limit=200")).data).toEqual([])
    const again = await cli(w, ["session", "delete", second, "--attach", server.url])
    expect(again.code).toBe(2)
    expect(again.stderr.trim().split("\n")).toHaveLength(1)
    await stop(server.child)
  })

  it("an unknown session is exit 2 with one line", async () => {
    const w = world()
    for (const sub of ["show", "export", "delete"]) {
      const result = await cli(w, ["session", sub, "ses_unknown0000000000000000"])
      expect(result.code).toBe(2)
      expect(result.stderr.trim().split("\n")).toHaveLength(1)
      expect(result.stderr).toMatch(/^opencode: /)
    }
  })
})
