import * as fs from "node:fs"
import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { LLMScript } from "@opencode-ai/core/testing"
import { Effect, Exit, Scope } from "effect"
import { GrepTool } from "../../../src/tool/builtin/grep-tool.js"
import { RegexSearch } from "../../../src/tool/builtin/regex-search.js"
import { world } from "../../runner/world.js"
import {
  doomed,
  escapees,
  freshTag,
  isAlive,
  loopTurnsDuring,
  pidsIn,
  reap,
  sleeps,
  spared,
  stubborn,
  taggedRunning,
  tagLeftovers
} from "./harness.js"

const { reply, text, toolCall, finish } = LLMScript

describe("built-in tools in a session", () => {
  it.scopedLive("with the scripted LLM, the model reads, greps, edits a file and runs bash in a temp project", () =>
    Effect.gen(function* () {
      const w = yield* world()
      fs.mkdirSync(path.join(w.directory, "src"))
      fs.writeFileSync(path.join(w.directory, "src", "app.ts"), "export function greet() {\n  // TODO: say hello\n}\n")
      fs.writeFileSync(path.join(w.directory, "README.md"), "A tiny project.\n")
      yield* w.server.enqueue(
        reply(toolCall("call_read", "read", { path: "src/app.ts" }), finish("tool-calls")),
        reply(toolCall("call_grep", "grep", { pattern: "TODO", include: "*.ts" }), finish("tool-calls")),
        reply(
          toolCall("call_edit", "edit", {
            path: "src/app.ts",
            oldString: "  // TODO: say hello",
            newString: '  return "hello"'
          }),
          finish("tool-calls")
        ),
        reply(
          toolCall("call_bash", "bash", { command: "grep -c hello src/app.ts && echo ran-in-$(basename $PWD)" }),
          finish("tool-calls")
        ),
        reply(text("Done: greet now says hello."), finish("stop"))
      )
      yield* w.prompt("make greet say hello")
      yield* w.wait

      // Every call settled successfully, each in its own step.
      const events = yield* w.events
      const settled = events
        .filter((e) => e.type === "session.next.tool.success" || e.type === "session.next.tool.failed")
        .map((e) => [(e.data as any).callID, e.type.replace("session.next.tool.", "")])
      expect(settled).toEqual([
        ["call_read", "success"],
        ["call_grep", "success"],
        ["call_edit", "success"],
        ["call_bash", "success"]
      ])
      const ends = events.filter((e) => e.type === "session.next.step.ended").map((e) => (e.data as any).finish)
      expect(ends).toEqual(["tool-calls", "tool-calls", "tool-calls", "tool-calls", "stop"])

      // The built-ins are offered to the model with their JSON Schemas.
      const requests = yield* w.server.requests
      const offered = (requests[0]!.body.tools as Array<any>).map((t) => t.function?.name ?? t.name)
      for (const name of ["read", "write", "edit", "apply_patch", "bash", "glob", "grep", "todowrite", "webfetch"]) {
        expect(offered).toContain(name)
      }
      const read = (requests[0]!.body.tools as Array<any>).find((t) => (t.function?.name ?? t.name) === "read")
      expect(read.function.parameters.required).toEqual(["path"])

      // What the model read back, as role:tool messages.
      const toolResult = (request: number, callID: string): string =>
        (requests[request]!.body.messages as Array<any>).find((m) => m.role === "tool" && m.tool_call_id === callID)!
          .content
      const file = path.join(w.directory, "src", "app.ts")
      expect(toolResult(1, "call_read")).toContain("2:   // TODO: say hello")
      expect(toolResult(1, "call_read")).toContain(`<path>${file}</path>`)
      expect(toolResult(2, "call_grep")).toContain(`${file}:2:   // TODO: say hello`)
      expect(toolResult(3, "call_edit")).toContain("replaced 1 occurrence")
      expect(toolResult(4, "call_bash")).toBe(`1\nran-in-project\nExit code: 0`)

      // The edit reached the disk; the edit's success carries its diff for session consumers.
      expect(fs.readFileSync(file, "utf8")).toBe('export function greet() {\n  return "hello"\n}\n')
      const edited = events.find(
        (e) => e.type === "session.next.tool.success" && (e.data as any).callID === "call_edit"
      )!
      expect((edited.data as any).structured.files[0].patch).toContain('+  return "hello"')
    })
  )

  it.scopedLive(
    "interrupting the session during bash kills the command's whole process group; the call fails as interrupted",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        const pids = path.join(w.directory, "pids")
        yield* w.server.enqueue(
          reply(toolCall("call_bash", "bash", { command: stubborn(pids) }), finish("tool-calls")),
          reply(text("unused"), finish("stop"))
        )
        yield* w.prompt("run something long")
        const recorded = yield* pidsIn(pids, 4)
        expect(recorded.every(isAlive)).toBe(true)
        yield* w.interrupt
        yield* w.wait
        // Killed before the session settled: each process is gone or has SIGKILL pending.
        expect(recorded.filter((pid) => !doomed(pid))).toEqual([])
        expect(yield* reap(recorded)).toEqual([])
        const failed = (yield* w.events).find((e) => e.type === "session.next.tool.failed")!
        expect(failed.data).toMatchObject({ callID: "call_bash", error: { message: "Tool execution interrupted" } })
      })
  )

  it.scopedLive(
    "a catastrophic grep pattern from the model fails readably within the time limit; the event loop stays free",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        // The real grep with a 1 s limit replaces the built-in (default 15 s) for this instance. While it
        // runs, the event loop is watched for as long as a worker is matching.
        const grep = yield* GrepTool.make({ timeLimit: "1 second" }).pipe(Effect.provide(NodeContext.layer))
        const matching = () => RegexSearch.workers().live > RegexSearch.workers().idle
        const watched: Array<{ readonly ticks: number }> = []
        yield* w.register({
          ...grep,
          execute: (input, context) =>
            loopTurnsDuring(() => grep.execute(input, context), matching).pipe(
              Effect.tap((watch) => watched.push(watch)),
              Effect.flatMap(({ exit }) => exit)
            )
        })
        // 40 `a`s: the match never ends by itself, so the turn ending at all means the limit stopped it.
        fs.writeFileSync(path.join(w.directory, "evil.txt"), `${"a".repeat(40)}b\n`)
        yield* w.server.enqueue(
          reply(toolCall("call_grep", "grep", { pattern: "^(a+)+$" }), finish("tool-calls")),
          reply(text("That pattern is too slow."), finish("stop"))
        )
        yield* w.prompt("find the a-lines")
        yield* w.wait
        // About 1 s of matching, watched by a 10 ms timer: a main thread the match held would let no
        // tick fire; a free one ticks far more than 10 times, however loaded the machine.
        expect(watched).toHaveLength(1)
        expect(watched[0]!.ticks).toBeGreaterThan(10)

        const message =
          'The pattern "^(a+)+$" took longer than 1s to match, so the search was stopped. Simplify it (nested quantifiers such as (a+)+ can backtrack without end) or narrow path and include.'
        const failed = (yield* w.events).find((e) => e.type === "session.next.tool.failed")!
        expect(failed.data).toMatchObject({ callID: "call_grep", error: { message } })
        const requests = yield* w.server.requests
        const toolMessage = (requests[1]!.body.messages as Array<any>).find((m) => m.role === "tool")
        expect(toolMessage.content).toContain(message)
        expect(yield* w.types).toContain("step.ended")
      })
  )
  /**
   * Has the model run a bash command that starts every kind of escapee and then ignores SIGTERM in
   * the foreground; returns once all six of its processes run, with the tag that finds them.
   */
  const runStubborn = (w: Effect.Effect.Success<ReturnType<typeof world>>) =>
    Effect.gen(function* () {
      const tag = freshTag()
      const command = escapees(tag, `trap '' TERM; sleep ${sleeps(tag, 6)[5]}`)
      yield* w.server.enqueue(
        reply(toolCall("call_bash", "bash", { command }), finish("tool-calls")),
        reply(text("unused"), finish("stop"))
      )
      yield* w.prompt("run something stubborn")
      yield* taggedRunning(tag, 6)
      return tag
    })

  it.scopedLive(
    "interrupting the session while bash runs a command that ignores SIGTERM kills every process of it before the interruption returns",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        const tag = yield* runStubborn(w)
        // Returning at all means SIGKILL followed the grace (the command ignores SIGTERM and sleeps for
        // about five minutes); every process it started is dead or has SIGKILL pending by then.
        yield* w.interrupt
        expect(spared(tag)).toEqual([])
        expect(yield* tagLeftovers(tag)).toEqual([])
        yield* w.wait
        const failed = (yield* w.events).find((e) => e.type === "session.next.tool.failed")!
        expect(failed.data).toMatchObject({ callID: "call_bash", error: { message: "Tool execution interrupted" } })
      })
  )

  it.scopedLive("closing the Core while bash runs kills every process the command started", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const w = yield* world().pipe(Scope.extend(scope))
      const tag = yield* runStubborn(w)
      // As above: closing returns only once SIGKILL has followed SIGTERM, and nothing is spared.
      yield* Scope.close(scope, Exit.void)
      expect(spared(tag)).toEqual([])
      expect(yield* tagLeftovers(tag)).toEqual([])
    })
  )
})
