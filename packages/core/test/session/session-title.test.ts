import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import {
  Config,
  type ConfigInfo,
  type Core,
  EventLog,
  Locations,
  SessionInput,
  SessionRunner,
  Sessions,
  SessionTitle,
  TitlePrompt
} from "@opencode-ai/core"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import type { Identifier } from "@opencode-ai/schema"
import { Effect, Layer, type Scope } from "effect"
import { TestDatabase } from "../../src/testing/test-database.js"
import { fastRetry } from "../runner/world.js"

const { reply, text, usage, httpError } = LLMScript

/**
 * A Core over the database in `root` whose provider is the scripted server (model `m`, and `small`
 * when the config names it). Building it twice on one root is a restart: the same file, a new
 * process's services.
 */
const host = (
  root: string,
  server: ScriptedLLMServer.ScriptedLLMServer,
  edit: (config: any) => void = () => {}
): Effect.Effect<
  {
    readonly run: <A, E>(effect: Effect.Effect<A, E, Core.Services>) => Effect.Effect<A, E>
    readonly prompt: (sessionID: Identifier.SessionID, text: string) => Effect.Effect<void>
    readonly titled: (sessionID: Identifier.SessionID) => Effect.Effect<string>
    readonly types: (sessionID: Identifier.SessionID) => Effect.Effect<ReadonlyArray<string>>
  },
  never,
  Scope.Scope
> =>
  Effect.gen(function* () {
    const directory = path.join(root, "project")
    fs.mkdirSync(directory, { recursive: true })
    const document: any = ScriptedLLMServer.config(server.url)
    // Priced, so the title request's usage has a cost: $1 per million input, $2 per million output.
    document.provider.scripted.models.m.cost = { input: 1, output: 2 }
    edit(document)
    const context = yield* Layer.build(
      TestDatabase.coreLayer({
        databaseFile: path.join(root, "opencode.db"),
        directory,
        configDir: path.join(root, "config"),
        dataDir: path.join(root, "data"),
        env: {},
        config: Config.layerTest(document as ConfigInfo.Info),
        retry: fastRetry
      })
    ).pipe(Effect.orDie)
    const run = <A, E>(effect: Effect.Effect<A, E, Core.Services>) => Effect.provide(effect, context)
    const prompt = (sessionID: Identifier.SessionID, words: string) =>
      run(
        Effect.gen(function* () {
          yield* (yield* SessionInput.Service).admit(sessionID, { prompt: { text: words } })
          const runner = yield* SessionRunner.Service
          yield* runner.wake(sessionID)
          yield* runner.wait(sessionID)
          // The title is written off the Step's path: let what was started finish.
          yield* (yield* SessionTitle.Service).settled
        })
      ).pipe(Effect.orDie)
    const titled = (sessionID: Identifier.SessionID) =>
      run(Effect.flatMap(Sessions.Service, (sessions) => sessions.get(sessionID))).pipe(
        Effect.map((session) => session.title),
        Effect.orDie
      )
    const types = (sessionID: Identifier.SessionID) =>
      run(Effect.flatMap(EventLog.Service, (log) => log.read(sessionID))).pipe(
        Effect.map((events) => events.map((event) => event.type.replace("session.next.", "")))
      )
    return { run, prompt, titled, types }
  })

const freshRoot = () => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-title-")))

const newSession = (
  core: Effect.Effect.Success<ReturnType<typeof host>>,
  input: Omit<Sessions.CreateInput, "location"> = {}
) =>
  core.run(
    Effect.gen(function* () {
      const location = yield* (yield* Locations.Service).resolve({})
      return yield* (yield* Sessions.Service).create({ location, ...input })
    })
  )

const question = "why does npm ci fail on node 20?\nIt worked on 18 last week."

describe("SessionTitle", () => {
  it.scopedLive(
    "after the first Step the title agent names the session: one request, no tools, the title prompt and the first prompt",
    () =>
      Effect.gen(function* () {
        const server = yield* ScriptedLLMServer.make()
        const core = yield* host(freshRoot(), server)
        const session = yield* newSession(core)
        yield* server.enqueue(reply(text("Node 20 changed the lockfile format.")))
        // Reasoning in tags, a quoted title and a second line: the title is the cleaned first line.
        yield* server.enqueueTitle(
          reply(
            text('<think>short and specific</think>\n"npm ci failure on Node 20"\nSecond line'),
            usage({ input: 300, output: 12 })
          )
        )
        yield* core.prompt(session.id, question)

        expect(yield* core.titled(session.id)).toBe("npm ci failure on Node 20")
        const [request, ...more] = yield* server.titleRequests
        expect(more).toEqual([])
        expect(request!.body.tools).toBeUndefined()
        expect(request!.body.model).toBe("m")
        const system = request!.body.messages.filter((m: any) => m.role === "system")
        expect(system.map((m: any) => m.content)).toEqual([TitlePrompt.system])
        const user = request!.body.messages.filter((m: any) => m.role === "user")
        expect(JSON.stringify(user)).toContain(JSON.stringify(question).slice(1, -1))
        // The Step's request is not the title's: the Steps' lane saw exactly one.
        expect((yield* server.requests).length).toBe(1)
        // Usage then title, in one transaction, after the Step.
        const types = yield* core.types(session.id)
        expect(types.slice(-2)).toEqual(["usage.recorded", "title.updated"])
        // The title request's own cost counts: 300 × $1/M + 12 × $2/M = $0.000324.
        const info = yield* core.run(Effect.flatMap(Sessions.Service, (sessions) => sessions.get(session.id)))
        expect(info.cost).toBe(0.000324)
        expect(info.tokens).toEqual({ input: 300, output: 12, reasoning: 0, cache: { read: 0, write: 0 } })
      })
  )

  it.scopedLive("a failed title request leaves the first prompt's line as the title, and writes nothing", () =>
    Effect.gen(function* () {
      const server = yield* ScriptedLLMServer.make()
      const core = yield* host(freshRoot(), server)
      const session = yield* newSession(core)
      yield* server.enqueue(reply(text("Looking.")))
      // Every attempt fails (the retry policy gives up after its attempts).
      yield* server.enqueueTitle(httpError(500), httpError(500), httpError(500), httpError(500))
      yield* core.prompt(session.id, question)

      expect((yield* server.titleRequests).length).toBeGreaterThan(0)
      expect(yield* core.titled(session.id)).toBe("why does npm ci fail on node 20?")
      const types = yield* core.types(session.id)
      expect(types).not.toContain("title.updated")
      expect(types.at(-1)).toBe("step.ended")
    })
  )

  it.scopedLive("an answer with no title in it (only reasoning) leaves the first prompt's line", () =>
    Effect.gen(function* () {
      const server = yield* ScriptedLLMServer.make()
      const core = yield* host(freshRoot(), server)
      const session = yield* newSession(core)
      yield* server.enqueue(reply(text("Looking.")))
      yield* server.enqueueTitle(reply(text("<think>no idea yet"), usage({ input: 100, output: 50 })))
      yield* core.prompt(session.id, question)

      expect(yield* core.titled(session.id)).toBe("why does npm ci fail on node 20?")
      const types = yield* core.types(session.id)
      expect(types).not.toContain("title.updated")
      // The tokens were spent all the same: the usage is recorded alone.
      expect(types.at(-1)).toBe("usage.recorded")
    })
  )

  it.scopedLive("the title is written once: a later Step does not ask again, nor does a restarted host", () =>
    Effect.gen(function* () {
      const server = yield* ScriptedLLMServer.make()
      const root = freshRoot()
      const sessionID = yield* Effect.scoped(
        Effect.gen(function* () {
          const core = yield* host(root, server)
          const session = yield* newSession(core)
          yield* server.enqueue(reply(text("First.")), reply(text("Second.")))
          yield* server.enqueueTitle(reply(text("npm ci on Node 20")), reply(text("A second title")))
          yield* core.prompt(session.id, question)
          expect(yield* core.titled(session.id)).toBe("npm ci on Node 20")
          yield* core.prompt(session.id, "and on node 22?")
          expect((yield* server.titleRequests).length).toBe(1)
          return session.id
        })
      )
      // A new process over the same file: its first Step of the session finds the title chosen.
      const core = yield* host(root, server)
      yield* server.enqueue(reply(text("Third.")))
      yield* core.prompt(sessionID, "and on node 24?")
      expect((yield* server.requests).length).toBe(3)
      expect((yield* server.titleRequests).length).toBe(1)
      expect(yield* core.titled(sessionID)).toBe("npm ci on Node 20")
      expect((yield* core.types(sessionID)).filter((type) => type === "title.updated")).toHaveLength(1)
    })
  )

  it.scopedLive("small_model serves the title request when it is set", () =>
    Effect.gen(function* () {
      const server = yield* ScriptedLLMServer.make()
      const core = yield* host(freshRoot(), server, (config) => {
        config.provider.scripted.models.small = { name: "Small", id: "small-v1", cost: { input: 10, output: 10 } }
        config.small_model = "scripted/small"
      })
      const session = yield* newSession(core)
      yield* server.enqueue(reply(text("Looking.")))
      yield* server.enqueueTitle(reply(text("Small model title"), usage({ input: 1000, output: 10 })))
      yield* core.prompt(session.id, question)

      expect((yield* server.requests).map((request) => request.body.model)).toEqual(["m"])
      expect((yield* server.titleRequests).map((request) => request.body.model)).toEqual(["small-v1"])
      expect(yield* core.titled(session.id)).toBe("Small model title")
      // Priced by the small model: 1,010 tokens at $10 per million.
      const info = yield* core.run(Effect.flatMap(Sessions.Service, (sessions) => sessions.get(session.id)))
      expect(info.cost).toBe(0.0101)
    })
  )

  it.scopedLive("a child session and a session created with a title are not renamed", () =>
    Effect.gen(function* () {
      const server = yield* ScriptedLLMServer.make()
      const core = yield* host(freshRoot(), server)
      const parent = yield* newSession(core)
      const child = yield* newSession(core, { parentID: parent.id, title: "Look around (@explore subagent)" })
      const named = yield* newSession(core, { title: "Release checklist" })
      yield* server.enqueue(reply(text("Found it.")), reply(text("Sure.")))
      yield* server.enqueueTitle(reply(text("Wrong title")), reply(text("Wrong title")))
      yield* core.prompt(child.id, "find the config loader")
      yield* core.prompt(named.id, "what is left to do?")

      expect(yield* server.titleRequests).toEqual([])
      expect(yield* core.titled(child.id)).toBe("Look around (@explore subagent)")
      expect(yield* core.titled(named.id)).toBe("Release checklist")
    })
  )

  it.scopedLive("with the title agent disabled no title request is made", () =>
    Effect.gen(function* () {
      const server = yield* ScriptedLLMServer.make()
      const core = yield* host(freshRoot(), server, (config) => {
        config.agent = { title: { disable: true } }
      })
      const session = yield* newSession(core)
      yield* server.enqueue(reply(text("Looking.")))
      yield* server.enqueueTitle(reply(text("Wrong title")))
      yield* core.prompt(session.id, question)
      expect(yield* server.titleRequests).toEqual([])
      expect(yield* core.titled(session.id)).toBe("why does npm ci fail on node 20?")
    })
  )
})

describe("TitlePrompt.clean", () => {
  it("takes the first non-empty line without reasoning, quotes or a label, and cuts it to 100 characters", () => {
    expect(TitlePrompt.clean("\n\n  Fixing   flaky tests \nmore")).toBe("Fixing flaky tests")
    expect(TitlePrompt.clean("<think>\nlet me think\n</think>\n'Rate limiting'")).toBe("Rate limiting")
    expect(TitlePrompt.clean("Title: “Parser bug fix”")).toBe("Parser bug fix")
    expect(TitlePrompt.clean("<thinking>unfinished")).toBeUndefined()
    expect(TitlePrompt.clean('  ""  ')).toBeUndefined()
    const long = TitlePrompt.clean("x".repeat(150))!
    expect(long).toHaveLength(100)
    expect(long.endsWith("…")).toBe(true)
  })
})
