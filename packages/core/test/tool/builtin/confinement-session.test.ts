import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { PermissionRequests, SessionSelection } from "@opencode-ai/core"
import { LLMScript } from "@opencode-ai/core/testing"
import { Effect, Fiber, Option } from "effect"
import { world } from "../../runner/world.js"

const { reply, text, toolCall, finish } = LLMScript

/**
 * Confinement by real path, end to end: the scripted model calls a tool through real symlinks in a
 * real temp project, and the test answers (or observes) the permission requests the call raises.
 * Each project has a sibling `outside/` directory holding `secret.txt`.
 */

type World = Effect.Effect.Success<ReturnType<typeof world>>

interface Asked {
  readonly action: string
  readonly resources: ReadonlyArray<string>
}

const secret = "TOP SECRET CONTENT"

const setup = (w: World) => {
  const root = path.dirname(w.directory)
  const outside = path.join(root, "outside")
  fs.mkdirSync(outside)
  fs.writeFileSync(path.join(outside, "secret.txt"), `${secret}\n`)
  fs.mkdirSync(path.join(w.directory, "src"))
  fs.writeFileSync(path.join(w.directory, "src", "real.txt"), "inside text\n")
  const link = (name: string, target: string) => fs.symlinkSync(target, path.join(w.directory, name))
  return { root, outside, link, file: (name: string) => path.join(w.directory, name) }
}

/**
 * Runs one scripted call of `tool` with `input`, answering every permission request it raises with
 * `answer`. Returns the requests, whether the call succeeded and the tool result the model read.
 */
let calls = 0

const drive = (w: World, tool: string, input: Record<string, unknown>, answer: "reject" | "once" = "reject") =>
  Effect.gen(function* () {
    const callID = `call_${++calls}`
    yield* w.server.enqueue(
      reply(toolCall(callID, tool, input), finish("tool-calls")),
      reply(text("done"), finish("stop"))
    )
    yield* w.prompt("go")
    const done = yield* Effect.fork(w.wait)
    const requests = yield* w.run(PermissionRequests.Service)
    const asked: Array<Asked> = []
    for (let i = 0; i < 1000; i++) {
      for (const request of yield* requests.list(w.session.id).pipe(Effect.orDie)) {
        asked.push({ action: request.action, resources: request.resources })
        yield* requests.reply(w.session.id, request.id, { reply: answer }).pipe(Effect.orDie)
      }
      if (Option.isSome(yield* Fiber.poll(done))) break
      yield* Effect.sleep("20 millis")
    }
    yield* Fiber.join(done)
    const events = yield* w.events
    const settled = events.find(
      (e) =>
        (e.type === "session.next.tool.success" || e.type === "session.next.tool.failed") &&
        (e.data as { callID?: string }).callID === callID
    )
    // What the model read back: the tool message of this call in the next request.
    const sent = yield* w.server.requests
    const output = sent
      .flatMap((request) => request.body.messages as Array<{ role: string; tool_call_id?: string; content: string }>)
      .find((m) => m.role === "tool" && m.tool_call_id === callID)!.content
    return { asked, ok: settled?.type === "session.next.tool.success", output }
  })

const external = (resource: string): Asked => ({ action: "external_directory", resources: [resource] })

describe("confinement by real path (symlinks), through the scripted model", () => {
  it.scopedLive("read through a symlink to a file outside the Location asks external_directory", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const p = setup(w)
      p.link("link.txt", path.join(p.outside, "secret.txt"))
      const run = yield* drive(w, "read", { path: "link.txt" })
      expect(run.asked).toEqual([external(path.join(p.outside, "*"))])
      expect(run.ok).toBe(false)
      expect(run.output).not.toContain(secret)
    })
  )

  it.scopedLive("read through a symlink outside is denied outright when the rules deny external_directory", () =>
    Effect.gen(function* () {
      const w = yield* world({ agent: { build: { permission: { external_directory: "deny" } } } })
      const p = setup(w)
      p.link("link.txt", path.join(p.outside, "secret.txt"))
      const run = yield* drive(w, "read", { path: "link.txt" })
      expect(run.asked).toEqual([])
      expect(run.ok).toBe(false)
      expect(run.output).toContain("do not allow external_directory")
      expect(run.output).not.toContain(secret)
    })
  )

  it.scopedLive(
    "write through a symlink (and through a dangling one) to outside asks; rejected, nothing is written",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        const p = setup(w)
        p.link("link.txt", path.join(p.outside, "secret.txt"))
        const run = yield* drive(w, "write", { path: "link.txt", content: "overwritten" })
        expect(run.asked).toEqual([external(path.join(p.outside, "*"))])
        expect(run.ok).toBe(false)
        expect(fs.readFileSync(path.join(p.outside, "secret.txt"), "utf8")).toBe(`${secret}\n`)

        p.link("dangling.txt", path.join(p.outside, "created.txt"))
        const dangling = yield* drive(w, "write", { path: "dangling.txt", content: "new" })
        expect(dangling.asked).toEqual([external(path.join(p.outside, "*"))])
        expect(fs.existsSync(path.join(p.outside, "created.txt"))).toBe(false)
      })
  )

  it.scopedLive("edit through a symlinked directory leading outside asks; rejected, the file is unchanged", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const p = setup(w)
      p.link("dir", p.outside)
      const run = yield* drive(w, "edit", { path: "dir/secret.txt", oldString: "TOP", newString: "NO" })
      expect(run.asked).toEqual([external(path.join(p.outside, "*"))])
      expect(run.ok).toBe(false)
      expect(fs.readFileSync(path.join(p.outside, "secret.txt"), "utf8")).toBe(`${secret}\n`)
    })
  )

  it.scopedLive("apply_patch through symlinks leading outside asks; rejected, nothing changes", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const p = setup(w)
      p.link("dir", p.outside)
      p.link("link.txt", path.join(p.outside, "secret.txt"))
      const patchText = [
        "*** Begin Patch",
        "*** Add File: dir/added.txt",
        "+added",
        "*** Update File: link.txt",
        "@@",
        `-${secret}`,
        "+patched",
        "*** End Patch"
      ].join("\n")
      const run = yield* drive(w, "apply_patch", { patchText })
      expect(run.asked).toEqual([external(path.join(p.outside, "*"))])
      expect(run.ok).toBe(false)
      expect(fs.existsSync(path.join(p.outside, "added.txt"))).toBe(false)
      expect(fs.readFileSync(path.join(p.outside, "secret.txt"), "utf8")).toBe(`${secret}\n`)
    })
  )

  it.scopedLive(
    "grep over the Location asks before searching a symlinked file that leads outside; refused, it is skipped",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        const p = setup(w)
        p.link("link.txt", path.join(p.outside, "secret.txt"))
        const run = yield* drive(w, "grep", { pattern: "SECRET" })
        expect(run.asked).toEqual([external(path.join(p.outside, "*"))])
        expect(run.ok).toBe(true)
        expect(run.output).not.toContain(secret)
        expect(run.output).toContain("1 symlinked file leading outside the working directory was not searched")
      })
  )

  it.scopedLive("grep and glob given a symlinked directory leading outside ask external_directory for it", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const p = setup(w)
      p.link("dir", p.outside)
      const grep = yield* drive(w, "grep", { pattern: "SECRET", path: "dir" })
      expect(grep.asked).toEqual([external(path.join(p.outside, "*"))])
      expect(grep.output).not.toContain(secret)
      const glob = yield* drive(w, "glob", { pattern: "*.txt", path: "dir" })
      expect(glob.asked).toEqual([external(path.join(p.outside, "*"))])
      expect(glob.output).not.toContain("secret.txt")
    })
  )

  it.scopedLive("a symlink to a .env file asks read as the .env file itself does", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const p = setup(w)
      fs.writeFileSync(p.file(".env"), "API_KEY=hunter2\n")
      p.link("notes.txt", ".env")
      const run = yield* drive(w, "read", { path: "notes.txt" })
      expect(run.asked).toEqual([{ action: "read", resources: [p.file(".env")] }])
      expect(run.ok).toBe(false)
      expect(run.output).not.toContain("hunter2")
    })
  )

  it.scopedLive("symlinks that stay inside the Location work without an ask", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const p = setup(w)
      p.link("alias.txt", "src/real.txt")
      p.link("srclink", "src")
      const read = yield* drive(w, "read", { path: "alias.txt" })
      expect(read).toMatchObject({ asked: [], ok: true })
      expect(read.output).toContain("1: inside text")
      const edit = yield* drive(w, "edit", { path: "srclink/real.txt", oldString: "inside", newString: "edited" })
      expect(edit).toMatchObject({ asked: [], ok: true })
      expect(fs.readFileSync(p.file("src/real.txt"), "utf8")).toBe("edited text\n")
      const write = yield* drive(w, "write", { path: "srclink/new.txt", content: "new\n" })
      expect(write).toMatchObject({ asked: [], ok: true })
      expect(fs.readFileSync(p.file("src/new.txt"), "utf8")).toBe("new\n")
      const grep = yield* drive(w, "grep", { pattern: "edited" })
      expect(grep).toMatchObject({ asked: [], ok: true })
      expect(grep.output).toContain(`${p.file("src/real.txt")}:1: edited text`)
      const glob = yield* drive(w, "glob", { pattern: "*.txt", path: "srclink" })
      expect(glob).toMatchObject({ asked: [], ok: true })
      expect(glob.output).toContain(p.file("src/new.txt"))
    })
  )
})

describe("bash confinement by parsed paths, through the scripted model", () => {
  it.scopedLive("reading an absolute path outside the Location asks external_directory; rejected, nothing runs", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const p = setup(w)
      const run = yield* drive(w, "bash", { command: `cat ${path.join(p.outside, "secret.txt")}` })
      expect(run.asked).toEqual([external(path.join(p.outside, "*"))])
      expect(run.ok).toBe(false)
      expect(run.output).not.toContain(secret)
    })
  )

  it.scopedLive("a redirection to ../outside.txt asks; rejected, the file is not created", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const p = setup(w)
      const run = yield* drive(w, "bash", { command: "echo x > ../outside.txt" })
      expect(run.asked).toEqual([external(path.join(p.root, "*"))])
      expect(run.ok).toBe(false)
      expect(fs.existsSync(path.join(p.root, "outside.txt"))).toBe(false)
    })
  )

  it.scopedLive("a redirection through a symlinked directory leading outside asks", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const p = setup(w)
      p.link("dir", p.outside)
      const run = yield* drive(w, "bash", { command: "echo x > dir/through.txt" })
      expect(run.asked).toEqual([external(path.join(p.outside, "*"))])
      expect(fs.existsSync(path.join(p.outside, "through.txt"))).toBe(false)
    })
  )

  it.scopedLive("`cd .. && ls` asks external_directory for the parent directory", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const p = setup(w)
      const run = yield* drive(w, "bash", { command: "cd .. && ls" })
      expect(run.asked).toEqual([external(path.join(p.root, "*"))])
      expect(run.ok).toBe(false)
      expect(run.output).not.toContain("outside")
    })
  )

  it.scopedLive("paths inside the Location (relative, after cd, redirected) need no ask", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const p = setup(w)
      const command = "mkdir -p out && cd src && cat real.txt > ../out/copy.txt 2>/dev/null && ls ../out"
      const run = yield* drive(w, "bash", { command })
      expect(run).toMatchObject({ asked: [], ok: true })
      expect(run.output).toContain("copy.txt")
      expect(fs.readFileSync(p.file("out/copy.txt"), "utf8")).toBe("inside text\n")
    })
  )

  it.scopedLive("under the plan agent a bash write is denied and writes nothing; `ls` still runs", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const p = setup(w)
      yield* w.run(Effect.flatMap(SessionSelection.Service, (s) => s.switchAgent(w.session.id, "plan")))
      const write = yield* drive(w, "bash", { command: "echo x > f" })
      expect(write.asked).toEqual([])
      expect(write.ok).toBe(false)
      expect(write.output).toContain('the rules of agent "plan" do not allow edit on f')
      expect(fs.existsSync(p.file("f"))).toBe(false)
      const touch = yield* drive(w, "bash", { command: "touch g; rm -f src/real.txt" })
      expect(touch.ok).toBe(false)
      expect(fs.existsSync(p.file("g"))).toBe(false)
      expect(fs.existsSync(p.file("src/real.txt"))).toBe(true)
      const ls = yield* drive(w, "bash", { command: "ls" })
      expect(ls).toMatchObject({ asked: [], ok: true })
      expect(ls.output).toContain("src")
    })
  )
})
