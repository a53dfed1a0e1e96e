import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import {
  InstructionCheckpoint,
  LiveBus,
  Locations,
  SessionHistory,
  SessionInput,
  SessionRevert,
  SessionRunner,
  Sessions,
  Snapshots
} from "@opencode-ai/core"
import { ChatRequest, GitFixture, LLMScript } from "@opencode-ai/core/testing"
import { Identifier } from "@opencode-ai/schema"
import { Effect, Exit, Option } from "effect"
import { world } from "../runner/world.js"

const { reply, text, toolCall, finish } = LLMScript

const { git, read, repository } = GitFixture
const { system: systemOf, conversation: conversationOf } = ChatRequest

type World = Effect.Effect.Success<ReturnType<typeof world>>

/** The session's user messages, oldest first. */
const userMessages = (w: World) =>
  w.run(
    Effect.gen(function* () {
      const page = yield* (yield* SessionHistory.Service).messages(w.session.id, { order: "asc", limit: 200 })
      return page.data.filter((message) => message.type === "user")
    })
  )

const revertService = (w: World) => w.run(SessionRevert.Service)

/** One Step running `command` with bash, then a Step that answers `done`. */
const bashTurn = (id: string, command: string) => [
  reply(toolCall(id, "bash", { command }), finish("tool-calls")),
  reply(text("done"), finish("stop"))
]

describe("SessionRevert", () => {
  it.scopedLive(
    "a revert of a Step that ran bash to create, change and delete files restores all three, and clear brings them back",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ setup: repository({ "change.txt": "original\n", "delete.txt": "keep me\n" }) })
        const userObjects = git(w.directory, "count-objects", "-v")
        yield* w.server.enqueue(
          ...bashTurn("call_1", "echo created > created.txt && echo changed > change.txt && rm delete.txt")
        )
        yield* w.prompt("make the changes")
        yield* w.wait
        expect(read(w.directory, "created.txt")).toBe("created\n")
        expect(read(w.directory, "change.txt")).toBe("changed\n")
        expect(read(w.directory, "delete.txt")).toBeUndefined()

        // The Step recorded its snapshots and the files it changed.
        const ended = (yield* w.events).find(
          (e) => e.type === "session.next.step.ended" && (e.data as any).finish === "tool-calls"
        )!.data as any
        expect(ended.snapshot).toMatch(/^[0-9a-f]{40}$/)
        expect(ended.files).toEqual(["change.txt", "created.txt", "delete.txt"])

        const [user] = yield* userMessages(w)
        const revert = yield* revertService(w)
        const state = yield* revert.stage(w.session.id, { messageID: user!.id, files: true })
        expect(read(w.directory, "created.txt")).toBeUndefined()
        expect(read(w.directory, "change.txt")).toBe("original\n")
        expect(read(w.directory, "delete.txt")).toBe("keep me\n")
        expect(state.messageID).toBe(user!.id)
        expect(state.snapshot).toMatch(/^[0-9a-f]{40}$/)
        expect(state.files!.map((file) => [file.path, file.status])).toEqual([
          ["change.txt", "modified"],
          ["created.txt", "deleted"],
          ["delete.txt", "added"]
        ])
        expect(state.files!.find((file) => file.path === "change.txt")!.patch).toContain("-changed\n+original")
        // The session record carries the staged revert.
        const staged = yield* w.run(Effect.flatMap(Sessions.Service, (s) => s.get(w.session.id)))
        expect(staged.revert).toEqual(state)

        yield* revert.clear(w.session.id)
        expect(read(w.directory, "created.txt")).toBe("created\n")
        expect(read(w.directory, "change.txt")).toBe("changed\n")
        expect(read(w.directory, "delete.txt")).toBeUndefined()
        const cleared = yield* w.run(Effect.flatMap(Sessions.Service, (s) => s.get(w.session.id)))
        expect(cleared.revert).toBeUndefined()

        // The snapshots live in the data directory's shadow repository; the user's .git gained nothing.
        expect(git(w.directory, "count-objects", "-v")).toBe(userObjects)
        expect(git(w.directory, "rev-list", "--count", "HEAD").trim()).toBe("1")
        const store = fs.readdirSync(path.join(w.dataDir, "snapshot"))
        expect(store).toHaveLength(1)
        expect(fs.existsSync(path.join(w.dataDir, "snapshot", store[0]!, "HEAD"))).toBe(true)
        expect((yield* w.types).filter((type) => type.startsWith("revert."))).toEqual([
          "revert.staged",
          "revert.cleared"
        ])
      })
  )

  it.scopedLive(
    "a scripted session edits files and runs bash over three Steps: a revert to the first Step's message restores the worktree, clear undoes it, commit drops the messages",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ setup: repository({ "app.ts": "export const a = 1\n" }) })
        yield* w.server.enqueue(
          reply(toolCall("call_write", "write", { path: "notes.md", content: "first notes\n" }), finish("tool-calls")),
          reply(
            toolCall("call_edit", "edit", {
              path: "app.ts",
              oldString: "export const a = 1",
              newString: "export const a = 2"
            }),
            finish("tool-calls")
          ),
          reply(
            toolCall("call_bash", "bash", { command: "mkdir -p out && echo built > out/build.txt" }),
            finish("tool-calls")
          ),
          reply(text("all done"), finish("stop"))
        )
        yield* w.prompt("write notes, bump a and build")
        yield* w.wait
        const firstStep = (yield* w.events).find((e) => e.type === "session.next.step.started")!.data as any
        expect(read(w.directory, "notes.md")).toBe("first notes\n")
        expect(read(w.directory, "app.ts")).toBe("export const a = 2\n")
        expect(read(w.directory, "out/build.txt")).toBe("built\n")

        const revert = yield* revertService(w)
        // Back to the first Step's own message: everything the three Steps did is undone.
        const state = yield* revert.stage(w.session.id, { messageID: firstStep.assistantMessageID, files: true })
        expect(state.files!.map((file) => file.path)).toEqual(["app.ts", "notes.md", "out/build.txt"])
        expect(read(w.directory, "notes.md")).toBeUndefined()
        expect(read(w.directory, "app.ts")).toBe("export const a = 1\n")
        expect(read(w.directory, "out/build.txt")).toBeUndefined()

        yield* revert.clear(w.session.id)
        expect(read(w.directory, "notes.md")).toBe("first notes\n")
        expect(read(w.directory, "app.ts")).toBe("export const a = 2\n")
        expect(read(w.directory, "out/build.txt")).toBe("built\n")

        yield* revert.stage(w.session.id, { messageID: firstStep.assistantMessageID, files: true })
        yield* revert.commit(w.session.id)
        expect(read(w.directory, "app.ts")).toBe("export const a = 1\n")
        const context = yield* w.run(Effect.flatMap(SessionHistory.Service, (h) => h.context(w.session.id)))
        expect(context.map((message) => message.type)).toEqual(["user"])
        // The transcript and the durable log keep every message.
        const transcript = yield* w.run(
          Effect.flatMap(SessionHistory.Service, (h) => h.messages(w.session.id, { order: "asc" }))
        )
        expect(transcript.data.filter((message) => message.type === "assistant")).toHaveLength(4)
      })
  )

  it.scopedLive(
    "commit, then the next request carries a fresh baseline and none of the reverted messages (committed revert also resets the checkpoint)",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ setup: repository({ "AGENTS.md": "Rule A: be brief.\n" }) })
        yield* w.server.enqueue(reply(text("first answer"), finish("stop")))
        yield* w.prompt("the first task")
        yield* w.wait
        yield* w.server.enqueue(...bashTurn("call_1", "echo second > second.txt"))
        yield* w.prompt("the second task")
        yield* w.wait
        expect(read(w.directory, "second.txt")).toBe("second\n")
        const checkpoints = yield* w.run(InstructionCheckpoint.Service)
        const before = Option.getOrThrow(yield* checkpoints.get(w.session.id))

        const [, second] = yield* userMessages(w)
        const revert = yield* revertService(w)
        yield* revert.stage(w.session.id, { messageID: second!.id, files: true })
        expect(read(w.directory, "second.txt")).toBeUndefined()
        // Staging leaves the checkpoint alone; only the commit resets it.
        expect(Option.getOrThrow(yield* checkpoints.get(w.session.id))).toEqual(before)
        yield* revert.commit(w.session.id)
        expect(yield* checkpoints.get(w.session.id)).toEqual(Option.none())
        expect(read(w.directory, "second.txt")).toBeUndefined()

        // A changed AGENTS.md reaches the model only through a fresh baseline (never as an update).
        fs.writeFileSync(path.join(w.directory, "AGENTS.md"), "Rule B: be thorough.\n")
        yield* w.server.enqueue(reply(text("third answer"), finish("stop")))
        yield* w.prompt("the third task")
        yield* w.wait

        const requests = yield* w.server.requests
        const last = requests[requests.length - 1]!
        expect(systemOf(last)).toContain("Rule B: be thorough.")
        expect(systemOf(last)).not.toContain("Rule A")
        const conversation = conversationOf(last)
        expect(conversation).toContain("the first task")
        expect(conversation).toContain("first answer")
        expect(conversation).toContain("the third task")
        expect(conversation).not.toContain("the second task")
        expect(conversation).not.toContain("second.txt")
        expect(conversation).not.toContain("instruction-update")
        const after = Option.getOrThrow(yield* checkpoints.get(w.session.id))
        expect(after.baseline).toContain("Rule B")
        expect(after.baselineSeq).toBeGreaterThan(before.baselineSeq)
        // The durable log keeps the reverted prompt.
        const prompted = (yield* w.events).filter((e) => e.type === "session.next.prompted")
        expect(prompted.map((e) => (e.data as any).prompt.text)).toEqual([
          "the first task",
          "the second task",
          "the third task"
        ])
        // A reverted message can no longer be a revert point.
        const again = yield* Effect.exit(revert.stage(w.session.id, { messageID: second!.id }))
        expect(again).toEqual(Exit.fail(expect.objectContaining({ _tag: "MessageNotFoundError" })))
      })
  )

  it.scopedLive(
    "the Instruction Baseline is reused verbatim until Session movement or committed revert resets it: a staged and cleared revert keeps it",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ setup: repository({ "AGENTS.md": "Rule A: be brief.\n" }) })
        yield* w.server.enqueue(reply(text("first answer"), finish("stop")))
        yield* w.prompt("the first task")
        yield* w.wait
        const checkpoints = yield* w.run(InstructionCheckpoint.Service)
        const before = Option.getOrThrow(yield* checkpoints.get(w.session.id))

        const [user] = yield* userMessages(w)
        const revert = yield* revertService(w)
        yield* revert.stage(w.session.id, { messageID: user!.id })
        yield* revert.clear(w.session.id)
        fs.writeFileSync(path.join(w.directory, "AGENTS.md"), "Rule B: be thorough.\n")
        yield* w.server.enqueue(reply(text("second answer"), finish("stop")))
        yield* w.prompt("the second task")
        yield* w.wait

        // Same baseline byte for byte; the change arrives as an Instruction Update instead.
        const after = Option.getOrThrow(yield* checkpoints.get(w.session.id))
        expect(after.baseline).toBe(before.baseline)
        expect(after.baselineSeq).toBe(before.baselineSeq)
        const requests = yield* w.server.requests
        const last = requests[requests.length - 1]!
        expect(systemOf(last)).toContain("Rule A: be brief.")
        expect(conversationOf(last)).toContain("Rule B: be thorough.")
        expect(conversationOf(last)).toContain("the first task")
      })
  )

  it.scopedLive("a project without git: the Step is snapshotted all the same and the revert restores it", () =>
    Effect.gen(function* () {
      const w = yield* world({ setup: (directory) => fs.writeFileSync(path.join(directory, "plain.txt"), "plain\n") })
      yield* w.server.enqueue(...bashTurn("call_1", "echo touched > plain.txt && echo extra > extra.txt"))
      yield* w.prompt("touch the files")
      yield* w.wait
      const [user] = yield* userMessages(w)
      const revert = yield* revertService(w)
      const state = yield* revert.stage(w.session.id, { messageID: user!.id, files: true })
      expect(state.files!.map((file) => [file.path, file.status])).toEqual([
        ["extra.txt", "deleted"],
        ["plain.txt", "modified"]
      ])
      expect(read(w.directory, "plain.txt")).toBe("plain\n")
      expect(read(w.directory, "extra.txt")).toBeUndefined()
      // No repository was created in the project.
      expect(fs.existsSync(path.join(w.directory, ".git"))).toBe(false)
      yield* revert.clear(w.session.id)
      expect(read(w.directory, "plain.txt")).toBe("touched\n")
      expect(read(w.directory, "extra.txt")).toBe("extra\n")
    })
  )

  it.scopedLive(
    "a dirty worktree: the revert restores the uncommitted state, not the last commit, and leaves the user's index alone",
    () =>
      Effect.gen(function* () {
        const w = yield* world({
          setup: (directory) => {
            repository({ "tracked.txt": "committed\n" })(directory)
            fs.writeFileSync(path.join(directory, "tracked.txt"), "uncommitted edit\n")
            fs.writeFileSync(path.join(directory, "untracked.txt"), "scratch\n")
            git(directory, "add", "untracked.txt")
          }
        })
        const status = git(w.directory, "status", "--porcelain")
        yield* w.server.enqueue(...bashTurn("call_1", "echo agent > tracked.txt && rm untracked.txt"))
        yield* w.prompt("rewrite tracked")
        yield* w.wait
        const [user] = yield* userMessages(w)
        const revert = yield* revertService(w)
        yield* revert.stage(w.session.id, { messageID: user!.id, files: true })
        expect(read(w.directory, "tracked.txt")).toBe("uncommitted edit\n")
        expect(read(w.directory, "untracked.txt")).toBe("scratch\n")
        expect(git(w.directory, "status", "--porcelain")).toBe(status)
        expect(git(w.directory, "diff", "--cached", "--name-only").trim()).toBe("untracked.txt")
      })
  )

  it.scopedLive(
    "a file the user edited after the Step is reported in the diff with the user's edit, and a file only the user touched is left alone",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ setup: repository({ "shared.txt": "base\n", "mine.txt": "mine\n" }) })
        yield* w.server.enqueue(...bashTurn("call_1", "echo agent > shared.txt"))
        yield* w.prompt("edit shared")
        yield* w.wait
        // The user edits after the Step: the file the Step changed, and another one.
        fs.writeFileSync(path.join(w.directory, "shared.txt"), "agent\nuser line\n")
        fs.writeFileSync(path.join(w.directory, "mine.txt"), "mine, edited\n")

        const [user] = yield* userMessages(w)
        const revert = yield* revertService(w)
        // Without files, nothing is written: the diff says what a revert would do.
        const preview = yield* revert.stage(w.session.id, { messageID: user!.id })
        expect(preview.snapshot).toBeUndefined()
        expect(read(w.directory, "shared.txt")).toBe("agent\nuser line\n")
        expect(preview.files!.map((file) => file.path)).toEqual(["shared.txt"])
        const shown = preview.files![0]!
        expect(shown.patch).toContain("-user line")
        expect(shown.patch).toContain("+base")
        expect(shown.deletions).toBe(2)
        expect(shown.additions).toBe(1)
        expect(preview.diff).toBe(shown.patch)

        // Staged again with files: the shown change is made; the user's other file is untouched.
        const state = yield* revert.stage(w.session.id, { messageID: user!.id, files: true })
        expect(state.files).toEqual(preview.files)
        expect(read(w.directory, "shared.txt")).toBe("base\n")
        expect(read(w.directory, "mine.txt")).toBe("mine, edited\n")
        yield* revert.clear(w.session.id)
        expect(read(w.directory, "shared.txt")).toBe("agent\nuser line\n")
      })
  )

  it.scopedLive(
    "an unknown message, a message of another session, nothing staged and staging while running are tagged failures",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        const revert = yield* revertService(w)
        const unknown = yield* Effect.exit(
          revert.stage(w.session.id, { messageID: Identifier.MessageID.make("msg_unknown") })
        )
        expect(unknown).toEqual(Exit.fail(expect.objectContaining({ _tag: "MessageNotFoundError" })))
        const missing = yield* Effect.exit(
          revert.stage(Identifier.SessionID.make("ses_missing"), {
            messageID: Identifier.MessageID.make("msg_unknown")
          })
        )
        expect(missing).toEqual(Exit.fail(expect.objectContaining({ _tag: "SessionNotFoundError" })))
        for (const operation of [revert.clear, revert.commit]) {
          expect(yield* Effect.exit(operation(w.session.id))).toEqual(
            Exit.fail(expect.objectContaining({ _tag: "ConflictError", resource: "revert" }))
          )
        }

        // Another session's message.
        const other = yield* w.run(
          Effect.gen(function* () {
            const location = yield* (yield* Locations.Service).resolve({ directory: w.directory })
            const session = yield* (yield* Sessions.Service).create({ location })
            return yield* (yield* SessionInput.Service).admit(session.id, { prompt: { text: "elsewhere" } })
          })
        )
        yield* w.server.enqueue(reply(text("hello"), finish("stop")))
        yield* w.prompt("hi")
        yield* w.wait
        const foreign = yield* Effect.exit(revert.stage(w.session.id, { messageID: other.id }))
        expect(foreign).toEqual(Exit.fail(expect.objectContaining({ _tag: "MessageNotFoundError" })))

        // While a Step streams.
        const gate = LLMScript.gate()
        yield* w.server.enqueue(
          reply(text("wor"), LLMScript.hold(gate), text("king"), finish("stop")),
          reply(text("x"), finish("stop"))
        )
        yield* w.prompt("keep going")
        yield* gate.reached
        const [user] = yield* userMessages(w)
        const busy = yield* Effect.exit(revert.stage(w.session.id, { messageID: user!.id }))
        expect(busy).toEqual(Exit.fail(expect.objectContaining({ _tag: "ConflictError", resource: "session" })))
        yield* gate.release
        yield* w.wait
        // Input admitted but not yet run.
        yield* w.prompt("later", { resume: false })
        const waiting = yield* Effect.exit(revert.stage(w.session.id, { messageID: user!.id }))
        expect(waiting).toEqual(Exit.fail(expect.objectContaining({ _tag: "ConflictError", resource: "session" })))
        const runner = yield* w.run(SessionRunner.Service)
        expect(Object.keys(yield* runner.active)).toEqual([])
      })
  )
})

describe("Step snapshots in a drain", () => {
  it.scopedLive(
    "a Step that continues a tool Step starts from its end snapshot; the next turn walks the worktree again",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ setup: repository({ "b.txt": "b\n" }) })
        // Another program writes a file just as the first Step ends (its `step.ended` is published).
        let wrote = false
        const bus = yield* w.run(LiveBus.Service)
        yield* bus.observe((event) => {
          if (wrote || event.type !== "session.next.step.ended") return
          wrote = true
          fs.writeFileSync(path.join(w.directory, "late.txt"), "between the Steps\n")
        })
        yield* w.server.enqueue(
          reply(toolCall("call_1", "bash", { command: "echo a > a.txt" }), finish("tool-calls")),
          reply(toolCall("call_2", "bash", { command: "echo changed > b.txt" }), finish("tool-calls")),
          reply(text("done"), finish("stop"))
        )
        yield* w.prompt("two changes")
        yield* w.wait
        const steps = (all: ReadonlyArray<{ readonly type: string; readonly data: unknown }>, type: string) =>
          all.filter((e) => e.type === `session.next.step.${type}`).map((e) => e.data as any)
        let all = yield* w.events
        const [first, second, third] = steps(all, "started")
        const ended = steps(all, "ended")
        // The second Step starts from the first one's end snapshot: the write between them is its.
        expect(ended.map((e) => e.files)).toEqual([["a.txt"], ["b.txt", "late.txt"], []])
        expect(second.snapshot).toBe(ended[0].snapshot)
        expect(third.snapshot).toBe(ended[1].snapshot)
        expect(first.snapshot).not.toBe(second.snapshot)

        // Between turns the user changes a file: the next turn's first Step sees it in its own snapshot.
        fs.writeFileSync(path.join(w.directory, "c.txt"), "by the user\n")
        yield* w.server.enqueue(reply(text("ok"), finish("stop")))
        yield* w.prompt("look")
        yield* w.wait
        all = yield* w.events
        const next = steps(all, "started")[3]
        const changed = yield* w.run(
          Effect.gen(function* () {
            const snapshots = yield* Snapshots.Service
            const project = Option.getOrThrow(yield* snapshots.project(w.directory))
            return yield* snapshots.changed(project, ended[2].snapshot, next.snapshot)
          })
        )
        expect(changed).toEqual(["c.txt"])
      })
  )
})
