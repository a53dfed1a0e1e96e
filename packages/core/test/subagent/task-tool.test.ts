import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { EventLog, PermissionRequests, SessionInput, SessionRunner, Sessions, SubagentPrompt } from "@opencode-ai/core"
import { ChatRequest, LLMScript } from "@opencode-ai/core/testing"
import type { Session } from "@opencode-ai/schema"
import { Effect, Fiber } from "effect"
import { world } from "../runner/world.js"

const { reply, text, toolCall, finish, hold, gate } = LLMScript

type World = Effect.Effect.Success<ReturnType<typeof world>>
const { system: systemOf, userText: userTextOf, toolNames, toolResult } = ChatRequest

/** The child sessions of the world's session (there is one per task call). */
const children = (w: World) =>
  w.run(
    Effect.map(
      Effect.flatMap(Sessions.Service, (sessions) => Effect.orDie(sessions.list())),
      (page): ReadonlyArray<Session.SessionV2Info> => page.data.filter((s) => s.parentID === w.session.id)
    )
  )

const eventsOf = (w: World, sessionID: string) => w.run(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID)))

const settledCall = (events: ReadonlyArray<{ type: string; data: unknown }>, callID: string) =>
  events.find(
    (e) =>
      (e.type === "session.next.tool.success" || e.type === "session.next.tool.failed") &&
      (e.data as { callID?: string }).callID === callID
  ) as { type: string; data: any } | undefined

/** The parent's reply that delegates: one `task` call (`call_task`) to `subagent`. */
const delegate = (subagent: string, description: string, prompt: string) =>
  reply(toolCall("call_task", "task", { description, prompt, subagent_type: subagent }), finish("tool-calls"))

const active = (w: World) => w.run(Effect.flatMap(SessionRunner.Service, (runner) => runner.active))

describe("the task tool runs a subagent in a child session", () => {
  it.scopedLive(
    "a task turn: the explore child greps and reads a file, and its final reply is the parent's tool result",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        fs.writeFileSync(path.join(w.directory, "notes.txt"), "the answer is 42\n")
        yield* w.server.enqueue(
          // The parent delegates.
          delegate("explore", "Find the answer", "Read notes.txt and tell me the answer it records."),
          // The child greps and reads, then replies.
          reply(
            toolCall("call_grep", "grep", { pattern: "answer is" }),
            toolCall("call_read", "read", { path: "notes.txt" }),
            finish("tool-calls")
          ),
          reply(text("notes.txt says the answer is 42."), finish("stop")),
          // The parent answers from the result.
          reply(text("The answer is 42."), finish("stop"))
        )
        yield* w.prompt("What answer do the notes record?")
        yield* w.wait

        const [child, ...others] = yield* children(w)
        expect(others).toEqual([])
        expect(child!.parentID).toBe(w.session.id)
        expect(child!.agent).toBe("explore")
        expect(child!.title).toBe("Find the answer (@explore subagent)")

        const [parentFirst, childFirst, childSecond, parentSecond] = yield* w.server.requests
        // The parent is offered the task tool, whose description lists the subagents.
        expect(toolNames(parentFirst!)).toContain("task")
        const task = (parentFirst!.body.tools as Array<{ function: { name: string; description: string } }>).find(
          (t) => t.function.name === "task"
        )!
        expect(task.function.description).toContain(
          "- explore: A fast, read-only subagent for finding your way around a codebase"
        )
        expect(task.function.description).toContain("- general: A general-purpose subagent")
        expect(task.function.description).not.toContain("- build:")
        // The child runs as explore: its prompt, the delegated instructions, only the tools explore may use.
        expect(userTextOf(childFirst!)).toContain("Read notes.txt and tell me the answer it records.")
        expect(userTextOf(childFirst!)).not.toContain("What answer do the notes record?")
        expect(systemOf(childFirst!)).toContain("read-only OpenCode subagent")
        expect(toolNames(childFirst!)).toContain("read")
        expect(toolNames(childFirst!)).not.toContain("bash")
        expect(toolNames(childFirst!)).not.toContain("task")
        expect(toolResult(childSecond!, "call_grep")).toContain("notes.txt")
        expect(toolResult(childSecond!, "call_read")).toContain("the answer is 42")

        // The child's final text is the parent's tool result, in its events and in the next request.
        const parentEvents = yield* w.events
        const settled = settledCall(parentEvents, "call_task")!
        expect(settled.type).toBe("session.next.tool.success")
        expect(settled.data.content[0].text).toContain("notes.txt says the answer is 42.")
        expect(settled.data.structured).toEqual({ sessionID: child!.id, agent: "explore" })
        expect(toolResult(parentSecond!, "call_task")).toContain("notes.txt says the answer is 42.")
        expect(toolResult(parentSecond!, "call_task")).toContain(child!.id)
        // The child's ID was reported while it ran.
        const progress = parentEvents.find((e) => e.type === "session.next.tool.progress")!.data as any
        expect(progress.structured).toEqual({ sessionID: child!.id, agent: "explore" })

        // The child's own history holds its read; the parent's does not.
        const childTypes = (yield* eventsOf(w, child!.id)).map((e) => e.type)
        expect(childTypes).toContain("session.next.tool.success")
        expect(parentEvents.filter((e) => (e.data as { callID?: string }).callID === "call_read")).toEqual([])
      })
  )

  it.scopedLive("a child runs in `active` under its own ID and does not make its parent appear there", () =>
    Effect.gen(function* () {
      const w = yield* world()
      yield* w.server.enqueue(
        delegate("general", "Look", "Say hi."),
        reply(text("hi"), finish("stop")),
        reply(text("done"), finish("stop"))
      )
      yield* w.prompt("delegate")
      yield* w.wait
      const [child] = yield* children(w)

      // The child prompted on its own (a follow-up after its task): only the child runs.
      const held = gate()
      yield* w.server.enqueue(reply(text("again"), hold(held), finish("stop")))
      yield* w.run(
        Effect.gen(function* () {
          yield* (yield* SessionInput.Service).admit(child!.id, { prompt: { text: "once more" } })
          yield* (yield* SessionRunner.Service).wake(child!.id)
        })
      )
      yield* held.reached
      expect(Object.keys(yield* active(w))).toEqual([child!.id])
      yield* held.release
      yield* w.run(Effect.flatMap(SessionRunner.Service, (runner) => runner.wait(child!.id)))
      expect(yield* active(w)).toEqual({})
    })
  )

  it.scopedLive("interrupting the parent interrupts the child: its request is aborted and both settle", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const held = gate()
      yield* w.server.enqueue(
        delegate("general", "Long job", "Work for a while."),
        reply(text("still work"), hold(held), text("ing"), finish("stop"))
      )
      yield* w.prompt("delegate a long job")
      yield* held.reached
      const [child] = yield* children(w)
      // While the child runs, the parent runs too: its own drain is running the task call.
      expect(Object.keys(yield* active(w)).sort()).toEqual([w.session.id, child!.id].sort())

      yield* w.interrupt
      yield* held.aborted
      expect(yield* active(w)).toEqual({})

      const childTypes = (yield* eventsOf(w, child!.id)).map((e) => e.type)
      expect(childTypes).toContain("session.next.step.failed")
      expect(childTypes).not.toContain("session.next.step.ended")
      const settled = settledCall(yield* w.events, "call_task")!
      expect(settled.type).toBe("session.next.tool.failed")
      // Nothing else was asked of the model: the parent did not continue after the interrupt.
      expect((yield* w.server.requests).length).toBe(2)
    })
  )

  it.scopedLive(
    "a permission ask inside the child carries the child's sessionID and, once allowed, the child continues",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        fs.writeFileSync(path.join(w.directory, ".env"), "TOKEN=s3cret\n")
        yield* w.server.enqueue(
          delegate("general", "Read env", "Read .env."),
          // Reading a .env file asks, by the default rules.
          reply(toolCall("call_env", "read", { path: ".env" }), finish("tool-calls")),
          reply(text("The token is s3cret."), finish("stop")),
          reply(text("done"), finish("stop"))
        )
        yield* w.prompt("what is in .env?")
        const done = yield* Effect.fork(w.wait)
        const permissions = yield* w.run(PermissionRequests.Service)
        // The ask is found where every pending request is: by Location, and by the child's sessionID.
        let asked: PermissionRequests.Request | undefined
        while (asked === undefined) {
          asked = (yield* permissions.listIn({ directory: w.directory }))[0]
          if (asked === undefined) yield* Effect.sleep("20 millis")
        }
        const [child] = yield* children(w)
        expect(asked.sessionID).toBe(child!.id)
        expect(asked.action).toBe("read")
        expect(yield* Effect.orDie(permissions.list(w.session.id))).toEqual([])
        expect((yield* Effect.orDie(permissions.list(child!.id))).map((r) => r.id)).toEqual([asked.id])
        yield* Effect.orDie(permissions.reply(child!.id, asked.id, { reply: "once" }))
        yield* Fiber.join(done)

        const settled = settledCall(yield* w.events, "call_task")!
        expect(settled.type).toBe("session.next.tool.success")
        expect(settled.data.content[0].text).toContain("The token is s3cret.")
      })
  )

  it.scopedLive("interrupting the parent while the child waits on a permission ask rejects the child's request", () =>
    Effect.gen(function* () {
      const w = yield* world()
      fs.writeFileSync(path.join(w.directory, ".env"), "TOKEN=s3cret\n")
      yield* w.server.enqueue(
        delegate("general", "Read env", "Read .env."),
        reply(toolCall("call_env", "read", { path: ".env" }), finish("tool-calls"))
      )
      yield* w.prompt("what is in .env?")
      const permissions = yield* w.run(PermissionRequests.Service)
      let asked: PermissionRequests.Request | undefined
      while (asked === undefined) {
        asked = (yield* permissions.listIn({ directory: w.directory }))[0]
        if (asked === undefined) yield* Effect.sleep("20 millis")
      }
      const [child] = yield* children(w)
      yield* w.interrupt
      expect(yield* permissions.listIn({ directory: w.directory })).toEqual([])
      const childEvents = yield* eventsOf(w, child!.id)
      expect(settledCall(childEvents, "call_env")!.type).toBe("session.next.tool.failed")
      expect(settledCall(yield* w.events, "call_task")!.type).toBe("session.next.tool.failed")
      expect(yield* active(w)).toEqual({})
    })
  )

  it.scopedLive("the child's reply is bounded like every tool output", () =>
    Effect.gen(function* () {
      const w = yield* world()
      const long = Array.from({ length: 5000 }, (_, i) => `line ${i} of the subagent's very long report`).join("\n")
      yield* w.server.enqueue(
        delegate("general", "Report", "Write a long report."),
        reply(text(long), finish("stop")),
        reply(text("done"), finish("stop"))
      )
      yield* w.prompt("report")
      yield* w.wait
      const settled = settledCall(yield* w.events, "call_task")!
      expect(settled.type).toBe("session.next.tool.success")
      const shown: string = settled.data.content[0].text
      expect(shown).toContain("line 0 of the subagent's very long report")
      expect(shown).not.toContain("line 2500 of the subagent's very long report")
      expect(settled.data.outputPaths).toHaveLength(1)
      expect(fs.readFileSync(settled.data.outputPaths[0], "utf8")).toContain(
        "line 4999 of the subagent's very long report"
      )
    })
  )

  it.scopedLive("an unknown or primary agent is refused with the subagents that exist; no child is created", () =>
    Effect.gen(function* () {
      const w = yield* world({ agent: { reviewer: { mode: "subagent", description: "Reviews diffs" } } })
      yield* w.server.enqueue(
        reply(
          toolCall("call_unknown", "task", { description: "x", prompt: "x", subagent_type: "nobody" }),
          toolCall("call_primary", "task", { description: "x", prompt: "x", subagent_type: "build" }),
          finish("tool-calls")
        ),
        reply(text("done"), finish("stop"))
      )
      yield* w.prompt("delegate")
      yield* w.wait
      const events = yield* w.events
      for (const callID of ["call_unknown", "call_primary"]) {
        const settled = settledCall(events, callID)!
        expect(settled.type).toBe("session.next.tool.failed")
        expect(settled.data.error.message).toContain("general, explore, reviewer")
      }
      expect(yield* children(w)).toEqual([])
      const [first] = yield* w.server.requests
      const task = (first!.body.tools as Array<{ function: { name: string; description: string } }>).find(
        (t) => t.function.name === "task"
      )!
      expect(task.function.description).toContain("- reviewer: Reviews diffs")
    })
  )

  it.scopedLive("the task permission is asked on the subagent's name under the caller's rules", () =>
    Effect.gen(function* () {
      const w = yield* world({ agent: { build: { permission: { task: { explore: "deny" } } } } })
      yield* w.server.enqueue(delegate("explore", "x", "x"), reply(text("done"), finish("stop")))
      yield* w.prompt("delegate")
      yield* w.wait
      const settled = settledCall(yield* w.events, "call_task")!
      expect(settled.type).toBe("session.next.tool.failed")
      expect(settled.data.error.message).toContain("explore")
      expect(yield* children(w)).toEqual([])
    })
  )
})

describe("@agent mentions", () => {
  it.scopedLive("a prompt's agents attachment adds the guidance to call the task tool with that subagent", () =>
    Effect.gen(function* () {
      const w = yield* world()
      yield* w.server.enqueue(reply(text("ok"), finish("stop")))
      const prompt = "@explore where is the config loaded?"
      yield* w.run(
        Effect.gen(function* () {
          yield* (yield* SessionInput.Service).admit(w.session.id, {
            prompt: { text: prompt, agents: [{ name: "explore", source: { text: "@explore", start: 0, end: 8 } }] }
          })
          yield* (yield* SessionRunner.Service).wake(w.session.id)
        })
      )
      yield* w.wait
      const [request] = yield* w.server.requests
      const user = userTextOf(request!)
      expect(user).toContain(prompt)
      expect(user).toContain(SubagentPrompt.mention("explore"))
      expect(user).toContain('call the task tool with subagent_type "explore"')
      expect(user.indexOf(prompt)).toBeLessThan(user.indexOf(SubagentPrompt.mention("explore")))
    })
  )

  it.scopedLive(
    "a mentioned subagent the caller's rules deny: the guidance says the user asked for it, and the task runs without the check",
    () =>
      Effect.gen(function* () {
        const w = yield* world({ agent: { build: { permission: { task: { explore: "deny" } } } } })
        yield* w.server.enqueue(
          delegate("explore", "Look", "Find it."),
          reply(text("found it"), finish("stop")),
          reply(text("done"), finish("stop"))
        )
        yield* w.run(
          Effect.gen(function* () {
            yield* (yield* SessionInput.Service).admit(w.session.id, {
              prompt: { text: "@explore find it", agents: [{ name: "explore" }] }
            })
            yield* (yield* SessionRunner.Service).wake(w.session.id)
          })
        )
        yield* w.wait
        const [first] = yield* w.server.requests
        expect(userTextOf(first!)).toContain(SubagentPrompt.mention("explore", { invokedByUser: true }))
        expect(userTextOf(first!)).toContain("The user asked for this subagent themselves")
        const settled = settledCall(yield* w.events, "call_task")!
        expect(settled.type).toBe("session.next.tool.success")
        expect(settled.data.content[0].text).toContain("found it")
        expect((yield* children(w)).map((child) => child.agent)).toEqual(["explore"])
      })
  )

  it.scopedLive("a prompt without mentions gets no task guidance", () =>
    Effect.gen(function* () {
      const w = yield* world()
      yield* w.server.enqueue(reply(text("ok"), finish("stop")))
      yield* w.prompt("where is the config loaded?")
      yield* w.wait
      const [request] = yield* w.server.requests
      expect(userTextOf(request!)).not.toContain("call the task tool")
    })
  )
})
