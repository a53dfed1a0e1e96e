import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ToolStructured } from "@opencode-ai/schema"
import { Duration, Effect, Fiber, Schema } from "effect"
import { savePatterns } from "../../../src/tool/builtin/bash-tool.js"
import {
  call,
  context,
  doomed,
  escapees,
  failure,
  freshTag,
  isAlive,
  pidsIn,
  project,
  reap,
  sleeps,
  spared,
  stubborn,
  taggedRunning,
  tagLeftovers,
  textOf
} from "./harness.js"

describe("bash", () => {
  it.live("runs the command: stdout and stderr interleaved, the exit code; asks bash with the command", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx, asks } = context(p.directory)
      const result = yield* call(
        "bash",
        { command: "echo hello; echo oops >&2; exit 3", description: "Say hello" },
        ctx
      )
      // Upstream's shape: the output and how the command ended as two text parts; `{exit, truncated}`.
      expect(result.content).toEqual([
        { type: "text", text: "hello\noops" },
        { type: "text", text: "Exit code: 3" }
      ])
      expect(textOf(result)).toBe("hello\noops\nExit code: 3")
      expect(result.structured).toEqual({ exit: 3, truncated: false })
      expect(Schema.decodeUnknownSync(ToolStructured.Bash)(result.structured)).toEqual({ exit: 3, truncated: false })
      expect(asks).toEqual([
        {
          action: "bash",
          resources: ["echo hello; echo oops >&2; exit 3"],
          metadata: { command: "echo hello; echo oops >&2; exit 3", workdir: p.directory, description: "Say hello" }
        }
      ])
      expect(textOf(yield* call("bash", { command: "true" }, ctx))).toBe("(no output)\nExit code: 0")
    })
  )

  it.live("the ask's save (what `always` saves): a simple command's program, else nothing beyond the command", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx, asks } = context(p.directory)
      yield* call("bash", { command: "echo hello world" }, ctx)
      expect(asks.find((ask) => ask.action === "bash")).toMatchObject({
        resources: ["echo hello world"],
        save: ["echo *"]
      })
      expect(savePatterns("git status --short")).toEqual({ save: ["git *"] })
      expect(savePatterns("  npm   test ")).toEqual({ save: ["npm *"] })
      // Shell syntax could hide another program behind the first: only the command itself is saved.
      for (const command of ["rm -rf x; ls", "cat a | sh", "echo $(whoami)", "FOO=1 ls", "ls > out", "ls *.md", ""]) {
        expect(savePatterns(command)).toEqual({})
      }
    })
  )

  it.live("runs in the Location directory, or in workdir (relative to it)", () =>
    Effect.gen(function* () {
      const p = project({ "sub/file.txt": "x" })
      const { ctx } = context(p.directory)
      expect(textOf(yield* call("bash", { command: "pwd" }, ctx))).toContain(p.directory)
      expect(textOf(yield* call("bash", { command: "pwd; ls", workdir: "sub" }, ctx))).toContain(
        `${p.file("sub")}\nfile.txt`
      )
      expect(yield* failure(call("bash", { command: "pwd", workdir: "nope" }, ctx))).toContain("is not a directory")
    })
  )

  it.live("a workdir outside the Location asks external_directory; a denied ask runs nothing", () =>
    Effect.gen(function* () {
      const p = project()
      const outside = context(p.directory, (request) => (request.action === "external_directory" ? "deny" : "allow"))
      expect(yield* failure(call("bash", { command: "touch made", workdir: p.outside }, outside.ctx))).toContain(
        "external_directory"
      )
      expect(outside.asks[0]!.resources).toEqual([path.join(p.outside, "*")])
      const denied = context(p.directory, () => "deny")
      // The write `touch` shows is authorized (edit) before the bash ask itself.
      expect(yield* failure(call("bash", { command: "touch made" }, denied.ctx))).toContain(
        "Permission denied: edit made"
      )
      expect(fs.existsSync(p.file("made"))).toBe(false)
      expect(fs.existsSync(path.join(p.outside, "made"))).toBe(false)
    })
  )

  it.live("output streams as throttled progress updates while the command runs", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx, progress } = context(p.directory)
      const result = yield* call("bash", { command: "for i in 1 2 3 4; do echo step$i; sleep 0.2; done" }, ctx, {
        bash: { progressInterval: "50 millis" }
      })
      expect(textOf(result)).toBe("step1\nstep2\nstep3\nstep4\nExit code: 0")
      expect(progress.length).toBeGreaterThanOrEqual(2)
      // Throttled: far fewer updates than 50 ms ticks over ~800 ms; only changes are published.
      expect(progress.length).toBeLessThanOrEqual(8)
      const texts = progress.map(textOf)
      expect(texts[0]).toContain("step1")
      expect(texts.some((text) => !text.includes("step4"))).toBe(true)
      expect(new Set(texts).size).toBe(texts.length)
      expect(progress[0]!.structured).toEqual({ truncated: false })
    })
  )

  it.live("a timeout kills the whole process group, grandchildren and SIGTERM-ignoring ones included", () =>
    Effect.gen(function* () {
      const p = project()
      const pids = p.file("pids")
      const { ctx } = context(p.directory)
      // The command's sleeps last 1000 s: that the call returned at all means the timeout ended it.
      const result = yield* call("bash", { command: `echo started; ${stubborn(pids)}`, timeout: 700 }, ctx, {
        bash: { killGrace: "200 millis" }
      })
      expect(textOf(result)).toContain("started")
      expect(textOf(result)).toContain("The command timed out after 700 ms")
      expect(result.structured).toEqual({ truncated: false, timeout: true })
      const recorded = yield* pidsIn(pids, 4)
      expect(recorded.filter((pid) => !doomed(pid))).toEqual([])
      expect(yield* reap(recorded)).toEqual([])
    })
  )

  it.live("interrupting the call kills the whole process group before the interruption completes", () =>
    Effect.gen(function* () {
      const p = project()
      const pids = p.file("pids")
      const { ctx } = context(p.directory)
      const fiber = yield* Effect.fork(
        call("bash", { command: stubborn(pids) }, ctx, { bash: { killGrace: "200 millis" } })
      )
      const recorded = yield* pidsIn(pids, 4)
      expect(recorded.every(isAlive)).toBe(true)
      yield* Fiber.interrupt(fiber)
      // SIGKILL was sent before the interruption completed: each process is gone or has it pending.
      expect(recorded.filter((pid) => !doomed(pid))).toEqual([])
      expect(yield* reap(recorded)).toEqual([])
    })
  )

  it.live("a command that exits normally is not held by a background job holding its output open", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx } = context(p.directory)
      const tag = freshTag()
      // The background sleep lasts about five minutes: waiting for it would outlast the test's timeout.
      const result = yield* call("bash", { command: `sleep ${sleeps(tag, 1)[0]} & echo done` }, ctx)
      expect(textOf(result)).toBe("done\nExit code: 0")
      expect(yield* tagLeftovers(tag)).toEqual([])
    })
  )
})

describe("bash: no process outlives its call", () => {
  const killGrace = 500
  const options = { bash: { killGrace: Duration.millis(killGrace) } }

  it.live("background, nohup, setsid and double-forked setsid jobs are killed when the command exits normally", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx } = context(p.directory)
      const tag = freshTag()
      const result = yield* call("bash", { command: escapees(tag, "sleep 0.5; echo done") }, ctx, options)
      expect(textOf(result)).toBe("done\nExit code: 0")
      expect(result.structured).toEqual({ exit: 0, truncated: false })
      expect(spared(tag)).toEqual([])
      expect(yield* tagLeftovers(tag)).toEqual([])
    })
  )

  it.live("a command that ignores SIGTERM is killed at its timeout, SIGKILL following SIGTERM after the grace", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx } = context(p.directory)
      const tag = freshTag()
      const timeout = 1500
      // Its sleeps ignore SIGTERM and last about five minutes: the call returns only if SIGKILL follows.
      const result = yield* call(
        "bash",
        { command: escapees(tag, `trap '' TERM; sleep ${sleeps(tag, 6)[5]}`), timeout },
        ctx,
        options
      )
      expect(textOf(result)).toContain(`The command timed out after ${timeout} ms`)
      expect(spared(tag)).toEqual([])
      expect(yield* tagLeftovers(tag)).toEqual([])
    })
  )

  it.live("interrupting a command that ignores SIGTERM kills it before the interruption returns, leaving nothing", () =>
    Effect.gen(function* () {
      const p = project()
      const { ctx } = context(p.directory)
      const tag = freshTag()
      const fiber = yield* Effect.fork(
        call("bash", { command: escapees(tag, `trap '' TERM; sleep ${sleeps(tag, 6)[5]}`) }, ctx, options)
      )
      yield* taggedRunning(tag, 6)
      // Returning at all means SIGKILL followed (the sleeps ignore SIGTERM and last about five minutes);
      // every process it started is dead or has SIGKILL pending by the time the interruption returns.
      yield* Fiber.interrupt(fiber)
      expect(spared(tag)).toEqual([])
      expect(yield* tagLeftovers(tag)).toEqual([])
    })
  )
})
