import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ChatRequest, LLMScript } from "@opencode-ai/core/testing"
import { CommandGroup } from "@opencode-ai/protocol"
import { Effect, Schema } from "effect"
import { configHome, startServer } from "./harness.js"
import { scriptedHost } from "./scripted-host.js"

const { reply, text, finish, httpError } = LLMScript

const write = (file: string, content: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content)
}

const get = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { status: response.status, body: await response.json() }
  })

/** Decodes with excess properties rejected: the body has exactly the contract's shape. */
const exact = <A, I>(schema: Schema.Schema<A, I>, body: unknown) =>
  Schema.decodeUnknownSync(schema, { onExcessProperty: "error" })(body)

describe("GET /api/command over the real server", () => {
  it.scoped("lists the project's, the config's and the global folder's commands, nearest winning", () =>
    Effect.gen(function* () {
      const home = configHome({
        command: {
          deploy: { template: "Deploy $1", description: "Deploy a service", model: "openai/gpt-5", subtask: true },
          hello: { template: "config hello" }
        }
      })
      write(path.join(home, "opencode", "command", "hello.md"), "global hello")
      write(path.join(home, "opencode", "commands", "global-only.md"), "---\ndescription: Only global\n---\nG")
      const { url, directory } = yield* startServer({ XDG_CONFIG_HOME: home })
      const project = fs.realpathSync(directory)
      write(path.join(project, ".opencode", "command", "hello.md"), "---\nagent: plan\n---\nproject hello $ARGUMENTS")
      write(path.join(project, ".opencode", "commands", "broken.md"), "---\nsubtask: [1]\n---\nx")

      const listed = yield* get(`${url}/api/command?location[directory]=${encodeURIComponent(project)}`)
      expect(listed.status).toBe(200)
      const body = exact(CommandGroup.CommandsResponse, listed.body)
      expect(body.location.directory).toBe(project)
      expect(body.data).toEqual([
        {
          name: "deploy",
          template: "Deploy $1",
          description: "Deploy a service",
          model: { providerID: "openai", id: "gpt-5" },
          subtask: true
        },
        { name: "global-only", template: "G", description: "Only global" },
        { name: "hello", template: "project hello $ARGUMENTS", agent: "plan" }
      ])

      const missing = yield* get(
        `${url}/api/command?location[directory]=${encodeURIComponent(path.join(project, "nope"))}`
      )
      expect(missing.status).toBe(400)
      expect(missing.body._tag).toBe("InvalidRequestError")
    })
  )
})

describe("prompts that run commands, over HTTP with a scripted model", () => {
  it.scopedLive(
    "`/name args` is expanded ($1, $2, !`shell`, @file), selects the command's agent, and runs once per id",
    () =>
      Effect.gen(function* () {
        const t = yield* scriptedHost({
          prefix: "command",
          requests: "permission",
          setup: (directory) => {
            fs.writeFileSync(path.join(directory, "notes.txt"), "alpha line\nbeta line\n")
            write(
              path.join(directory, ".opencode", "command", "explain.md"),
              [
                "---",
                "description: Explain something",
                "agent: plan",
                "---",
                "Explain $1 as $2.",
                "Counted: !`echo ran >> runs.txt; wc -l < runs.txt | tr -d ' '`",
                "Read @notes.txt first."
              ].join("\n")
            )
          }
        })
        yield* t.llm.enqueue(reply(text("Explained."), finish("stop")))
        const id = "msg_command_once"
        const body = { id, prompt: { text: `/explain "the cache" a short story` } }
        const first = yield* t.call("POST", `${t.base}/prompt`, body)
        expect(first.status).toBe(200)
        const expanded = "Explain the cache as a short story.\nCounted: 1\n\nRead @notes.txt first."
        expect(first.body.data.prompt.text).toBe(expanded)
        expect(first.body.data.prompt.files).toEqual([
          expect.objectContaining({ name: "notes.txt", uri: `file://${path.join(t.directory, "notes.txt")}` })
        ])
        // A retry of the id replays the admission: nothing is expanded or run again.
        const retry = yield* t.call("POST", `${t.base}/prompt`, body)
        expect(retry.status).toBe(200)
        // (It may have been promoted meanwhile: the session was woken by the first request.)
        const { promotedSeq: _promoted, ...replayed } = retry.body.data
        expect(replayed).toEqual(first.body.data)
        expect(fs.readFileSync(path.join(t.directory, "runs.txt"), "utf8")).toBe("ran\n")

        const request = yield* t.llm.awaitRequest(1)
        expect((yield* t.wait).status).toBe(204)
        const user = ChatRequest.userText(request)
        expect(user).toContain(expanded)
        // The @file became an attachment the model reads.
        expect(user).toContain("alpha line")
        expect(user).toContain("beta line")
        expect(user).not.toContain("/explain")
        // The command's agent was selected for the session.
        expect((yield* t.call("GET", t.base)).body.data.agent).toBe("plan")
      })
  )

  it.scopedLive("text naming no command is an ordinary prompt; a command that cannot run is a 400", () =>
    Effect.gen(function* () {
      const t = yield* scriptedHost({
        prefix: "command-plain",
        requests: "permission",
        setup: (directory) => {
          write(path.join(directory, ".opencode", "command", "ghost.md"), "---\nagent: nobody\n---\nBoo")
          write(path.join(directory, ".opencode", "command", "far.md"), "---\nmodel: scripted/absent\n---\nFar")
        }
      })
      const plain = yield* t.call("POST", `${t.base}/prompt`, {
        prompt: { text: "/not-a-command please" },
        resume: false
      })
      expect(plain.status).toBe(200)
      expect(plain.body.data.prompt.text).toBe("/not-a-command please")

      const ghost = yield* t.call("POST", `${t.base}/prompt`, { prompt: { text: "/ghost" }, resume: false })
      expect(ghost.status).toBe(400)
      expect(ghost.body).toMatchObject({ _tag: "InvalidRequestError", kind: "command", field: "agent" })
      expect(ghost.body.message).toContain('"nobody"')

      const far = yield* t.call("POST", `${t.base}/prompt`, { prompt: { text: "/far" }, resume: false })
      expect(far.status).toBe(400)
      expect(far.body).toMatchObject({ _tag: "InvalidRequestError", kind: "command", field: "model" })
      expect(far.body.message).toContain('"scripted/absent"')
      // Neither failed command admitted anything.
      const admitted = (yield* t.events).filter((e) => e.type === "session.next.prompt.admitted")
      expect(admitted.map((e) => (e.data as any).prompt.text)).toEqual(["/not-a-command please"])
    })
  )

  it.scopedLive(
    "`subtask: true` runs the expansion in a child session, then the session continues with its result",
    () =>
      Effect.gen(function* () {
        const t = yield* scriptedHost({
          prefix: "command-subtask",
          requests: "permission",
          setup: (directory) =>
            write(
              path.join(directory, ".opencode", "command", "research.md"),
              "---\ndescription: Research a topic\nagent: general\nsubtask: true\n---\nResearch $ARGUMENTS and report."
            )
        })
        yield* t.llm.enqueue(
          reply(text("The cache is an LRU of 512 entries."), finish("stop")),
          reply(text("Summary: it is an LRU."), finish("stop"))
        )
        const prompted = yield* t.prompt("/research the cache layer")
        expect(prompted.status).toBe(200)
        // The session keeps what the user typed; the expansion goes to the child.
        expect(prompted.body.data.prompt.text).toBe("/research the cache layer")

        const childRequest = yield* t.llm.awaitRequest(1)
        expect(ChatRequest.userText(childRequest)).toContain("Research the cache layer and report.")
        const parentRequest = yield* t.llm.awaitRequest(2)
        expect((yield* t.wait).status).toBe(204)
        const turns = ChatRequest.userText(parentRequest)
        expect(turns).toContain("/research the cache layer")
        expect(turns).toContain("The cache is an LRU of 512 entries.")
        expect(turns).toContain("summarize what it found, then carry on with your task")
        expect(turns.indexOf("/research the cache layer")).toBeLessThan(turns.indexOf("The cache is an LRU"))

        const sessions = (yield* t.call("GET", "/api/session")).body.data as Array<any>
        const child = sessions.find((s) => s.parentID === t.session.id)
        expect(child).toMatchObject({ agent: "general", title: "Research a topic (@general subagent)" })
        expect(turns).toContain(child.id)
        // The parent's history: the typed prompt, the result with the continuation, then the answer.
        const messages = (yield* t.call("GET", `${t.base}/message?order=asc`)).body.data as Array<any>
        const last = messages.filter((m) => m.type === "assistant").at(-1)
        expect(last.content.map((p: any) => p.text).join("")).toBe("Summary: it is an LRU.")
      })
  )
  it.scopedLive(
    "an agent whose mode is subagent makes a subtask; a failed child hands its failure to the session",
    () =>
      Effect.gen(function* () {
        const t = yield* scriptedHost({
          prefix: "command-subtask-failed",
          requests: "permission",
          setup: (directory) =>
            write(path.join(directory, ".opencode", "command", "probe.md"), "---\nagent: explore\n---\nProbe $1")
        })
        yield* t.llm.enqueue(
          httpError(400, { message: "the probe request was refused" }),
          reply(text("The probe failed; I will look myself."), finish("stop"))
        )
        expect((yield* t.prompt("/probe sockets")).body.data.prompt.text).toBe("/probe sockets")
        const childRequest = yield* t.llm.awaitRequest(1)
        expect(ChatRequest.userText(childRequest)).toContain("Probe sockets")
        const parentRequest = yield* t.llm.awaitRequest(2)
        expect((yield* t.wait).status).toBe(204)
        const turns = ChatRequest.userText(parentRequest)
        expect(turns).toMatch(/The explore subagent \(session ses_\w+\) failed: /)
        expect(turns).toContain("summarize what it found, then carry on with your task")
      })
  )
})
