import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as pty from "@lydell/node-pty"
import { LLMScript, ScriptedLLMServer, TestDatabase } from "@opencode-ai/core/testing"
import { Effect, Exit, Scope } from "effect"
import { type Browser, chromium } from "playwright-core"
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest"
import { configHome, tempDir } from "./harness.js"
import * as OtlpReceiver from "./observability/otlp-receiver.js"

/**
 * Issue 16's "done when", end to end on the real binary: a user runs `opencode serve`, opens its page
 * in a browser and watches a prompt from `opencode run --attach` (in a terminal) stream in; the page
 * answers the permission the run asked for, and the terminal withdraws its own question. Then the log
 * file tells the session's story in under 40 INFO lines, and the session's spans reached an OTLP
 * receiver as one tree. Skipped without `/usr/bin/chromium`, except in CI, where it fails instead.
 */

vi.setConfig({ testTimeout: 300_000 })

const bin = path.resolve(__dirname, "../dist/bin.js")
const chromiumPath = "/usr/bin/chromium"
const hasChromium = fs.existsSync(chromiumPath)
const inCI = process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false"
const { reply, text, toolCall, finish, usage } = LLMScript

const children: Array<ChildProcess> = []
const terminals: Array<pty.IPty> = []
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL")
  for (const terminal of terminals.splice(0)) {
    try {
      terminal.kill("SIGKILL")
    } catch {}
  }
})

/** `opencode serve --port 0` with `env`; resolves with its URL once it listens. */
const serve = (cwd: string, env: Record<string, string>) =>
  new Promise<{ url: string; child: ChildProcess }>((resolve, reject) => {
    const child = spawn(process.execPath, [bin, "serve", "--port", "0"], {
      cwd,
      env: { ...TestDatabase.serverEnv(env.XDG_DATA_HOME ?? cwd), ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    children.push(child)
    let out = ""
    let err = ""
    child.stdout!.on("data", (chunk) => {
      out += chunk
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (match) resolve({ url: match[1]!, child })
    })
    child.stderr!.on("data", (chunk) => (err += chunk))
    child.on("exit", (code) => reject(new Error(`serve exited with ${code}: ${out}\n${err}`)))
  })

/** The CLI in a pseudo-terminal, as a user types it; `waitFor` resolves once the output matches. */
const terminal = (cwd: string, env: Record<string, string>, args: ReadonlyArray<string>) => {
  const term = pty.spawn(process.execPath, [bin, ...args], { name: "xterm-256color", cols: 120, rows: 40, cwd, env })
  terminals.push(term)
  let output = ""
  const exited = new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)))
  term.onData((data) => {
    output += data
  })
  const waitFor = async (pattern: RegExp) => {
    while (!pattern.test(output)) {
      const done = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(() => r(false), 50))])
      if (done && !pattern.test(output)) throw new Error(`exited before ${pattern}: ${output}`)
    }
  }
  return { exited, waitFor, output: () => output }
}

/** One logfmt line as its fields (quoted values unescaped). */
const logfmt = (line: string): Record<string, string> => {
  const fields: Record<string, string> = {}
  for (const m of line.matchAll(/([^\s=]+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    fields[m[1]!] = m[2]!.startsWith('"') ? JSON.parse(m[2]!) : m[2]!
  }
  return fields
}

describe.skipIf(!hasChromium && !inCI)("a new user's first session", () => {
  let browser: Browser | undefined
  beforeAll(async () => {
    if (!hasChromium) throw new Error(`${chromiumPath} is missing: CI must install Chromium (scripts/system-deps.sh)`)
    browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] })
  })
  afterAll(async () => {
    await browser?.close()
  })

  it("watches `opencode run` on the page, answers its permission there, and the log and traces tell the story", async () => {
    const scope = Effect.runSync(Scope.make())
    const collector = await OtlpReceiver.start()
    try {
      const llm = await Effect.runPromise(ScriptedLLMServer.make().pipe(Scope.extend(scope)))
      await Effect.runPromise(
        llm.enqueue(
          reply(
            text("Let me look."),
            toolCall("call_1", "bash", { command: "echo from-the-page", description: "Print a word" }),
            usage({ input: 40, output: 9 }),
            finish("tool-calls")
          ),
          reply(text("The page ", "allowed it ", "and it printed."), usage({ input: 60, output: 6 }), finish("stop"))
        )
      )
      await Effect.runPromise(llm.enqueueTitle(reply(text("Printing a word"), finish("stop"))))

      const project = tempDir("project")
      const data = tempDir("xdg")
      const env = {
        PATH: process.env.PATH ?? "",
        HOME: tempDir("home"),
        XDG_DATA_HOME: data,
        XDG_CONFIG_HOME: configHome({ ...ScriptedLLMServer.config(llm.url), permission: { bash: "ask" } }),
        XDG_CACHE_HOME: tempDir("cache"),
        OPENCODE_DISABLE_MODELS_FETCH: "1",
        TERM: "xterm-256color"
      }
      const server = await serve(project, { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url })

      // The user opens the printed URL.
      const page = await browser!.newPage()
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      await page.goto(`${server.url}/`)
      await page.getByRole("status").getByText("Live").waitFor()

      // …and prompts from a terminal; the page shows the session and its permission ask.
      const run = terminal(project, env, ["run", "--attach", server.url, "print a word"])
      await run.waitFor(/Allow bash echo from-the-page\?/)
      await page.getByText("Let me look.").waitFor()
      const group = page.getByRole("group", { name: "Reply to the bash permission" })
      await group.getByRole("button", { name: "Allow once" }).click()

      // The terminal withdraws its question, streams the answer and ends well.
      expect(await run.exited).toBe(0)
      expect(run.output()).toContain("permission bash echo from-the-page: answered elsewhere (allowed once)")
      expect(run.output()).toContain("The page allowed it and it printed.")
      const sessionID = /(ses_[A-Za-z0-9]+) · cost/.exec(run.output())?.[1]
      expect(sessionID).toBeDefined()
      await page.getByText("The page allowed it and it printed.").waitFor()
      expect(errors).toEqual([])
      await page.close()

      // SIGTERM: a clean stop, which also sends the last spans.
      server.child.kill("SIGTERM")
      expect(await new Promise((resolve) => server.child.on("exit", resolve))).toBe(0)

      // The log file at INFO: the whole story in under 40 lines.
      const lines = fs
        .readFileSync(path.join(data, "opencode", "log", "opencode.log"), "utf8")
        .split("\n")
        .filter((line) => line !== "")
      expect(lines.length).toBeLessThan(40)
      const entries = lines.map(logfmt)
      expect(entries.every((e) => e.level !== "DEBUG")).toBe(true)
      const story = entries.map((e) => e.msg)
      for (const msg of [
        "opencode server listening",
        "request",
        "provider call",
        "permission asked",
        "permission replied",
        "tool ran",
        "opencode server shutting down",
        "opencode server stopped"
      ]) {
        expect(story, msg).toContain(msg)
      }
      expect(story.indexOf("permission asked")).toBeLessThan(story.indexOf("permission replied"))
      expect(story.indexOf("permission replied")).toBeLessThan(story.indexOf("tool ran"))
      const replied = entries.find((e) => e.msg === "permission replied")!
      expect(replied).toMatchObject({ sessionID, reply: "once" })
      // The page's reply is one of the request lines.
      expect(entries.some((e) => e.msg === "request" && e.method === "POST" && e.route?.includes("/permission/"))).toBe(
        true
      )

      // The traces: one tree, session → Step → provider call → tool call, at the receiver.
      const spans = OtlpReceiver.spans(collector.received)
      const ofSession = spans.filter((span) => OtlpReceiver.attributes(span.attributes).sessionID === sessionID)
      const named = (name: string) => ofSession.filter((span) => span.name === name)
      const [execution] = named("SessionExecution.run")
      expect(execution).toBeDefined()
      const steps = named("StepRunner.run")
      expect(steps.length).toBe(2)
      const byId = new Map(spans.map((span) => [span.spanId, span]))
      const ancestors = (span: any): Array<string> => {
        const parent = byId.get(span.parentSpanId)
        return parent === undefined ? [] : [parent.name, ...ancestors(parent)]
      }
      const [tool] = named("ToolSettlement.settle")
      expect(OtlpReceiver.attributes(tool.attributes)).toMatchObject({ tool: "bash" })
      const chain = ancestors(tool)
      expect(chain.indexOf("StepRunner.attempt")).toBeGreaterThanOrEqual(0)
      expect(chain.indexOf("StepRunner.attempt")).toBeLessThan(chain.indexOf("StepRunner.run"))
      expect(chain.indexOf("StepRunner.run")).toBeLessThan(chain.indexOf("SessionExecution.run"))
      for (const step of steps) expect(step.traceId).toBe(execution.traceId)
    } finally {
      collector.close()
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })
})
