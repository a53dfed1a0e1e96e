import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import {
  Config,
  type Core,
  EventLog,
  Locations,
  SessionInput,
  SessionRunner,
  Sessions,
  StepRunner,
  ToolRegistry
} from "@opencode-ai/core"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect, Layer } from "effect"
import { TestDatabase } from "../../src/testing/test-database.js"
import { fastRetry } from "./world.js"

const { reply, text, toolCall, finish } = LLMScript

const temps: Array<string> = []
afterAll(() => temps.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })))

/**
 * A Core over a fresh database and a fresh data directory (so managed tool output lands in
 * `<root>/data/tool-output`), with a scripted LLM server as its one provider.
 */
const world = (options: { readonly dataDir?: (root: string) => string } = {}) =>
  Effect.gen(function* () {
    const server = yield* ScriptedLLMServer.make()
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-bounding-runner-")))
    temps.push(root)
    const directory = path.join(root, "project")
    fs.mkdirSync(directory)
    const dataDir = options.dataDir?.(root) ?? path.join(root, "data")
    const config = Config.layerTest(ScriptedLLMServer.config(server.url), { dataDir })
    const context = yield* Layer.build(
      TestDatabase.coreLayer({
        databaseFile: path.join(root, "opencode.db"),
        directory,
        configDir: path.join(root, "config"),
        env: {},
        dataDir,
        config,
        retry: fastRetry
      })
    ).pipe(Effect.orDie)
    const run = <A, E>(effect: Effect.Effect<A, E, Core.Services>) => Effect.provide(effect, context)
    const session = yield* run(
      Effect.flatMap(Locations.Service, (locations) => locations.resolve({ directory })).pipe(
        Effect.flatMap((location) => Effect.flatMap(Sessions.Service, (sessions) => sessions.create({ location })))
      )
    ).pipe(Effect.orDie)
    const prompt = (value: string) =>
      run(
        Effect.gen(function* () {
          yield* (yield* SessionInput.Service).admit(session.id, { prompt: { text: value } })
          yield* (yield* SessionRunner.Service).wake(session.id)
        })
      )
    const runner = run(SessionRunner.Service)
    const events = run(Effect.flatMap(EventLog.Service, (log) => log.read(session.id)))
    const types = Effect.map(events, (all) => all.map((e) => e.type.replace("session.next.", "")))
    // Registered for the test's scope.
    const register = (tool: ToolRegistry.Tool) =>
      Effect.provide(
        Effect.flatMap(ToolRegistry.Service, (r) => r.register(tool)),
        context
      )
    return {
      server,
      prompt,
      events,
      types,
      register,
      toolOutputDir: path.join(dataDir, "tool-output"),
      wait: Effect.flatMap(runner, (r) => r.wait(session.id)),
      interrupt: Effect.flatMap(runner, (r) => r.interrupt(session.id))
    }
  })

/** A tool returning `output` (and a structured value) once `before` has run. */
const big = (output: () => string, before: Effect.Effect<void> = Effect.void): ToolRegistry.Tool => ({
  name: "big",
  description: "Prints a lot",
  inputSchema: { type: "object", properties: {} },
  execute: () =>
    Effect.zipRight(
      before,
      Effect.sync(() => ({ content: [{ type: "text" as const, text: output() }], structured: { exitCode: 0 } }))
    )
})

const data = (all: ReadonlyArray<{ readonly type: string; readonly data: unknown }>, type: string): any =>
  all.find((e) => e.type === `session.next.${type}`)?.data

describe("Model Tool Output bounding through the Step runner", () => {
  it.scopedLive(
    "a 10 MB tool output reaches history and the model as a bounded preview whose managed path holds the complete text",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        const raw = Array.from(
          { length: 100_000 },
          (_, i) => `${String(i + 1).padStart(8, "0")} ${"output ".repeat(13)}`
        ).join("\n")
        expect(Buffer.byteLength(raw)).toBeGreaterThan(10_000_000)
        yield* w.register(big(() => raw))
        yield* w.server.enqueue(
          reply(toolCall("call_1", "big", {}), finish("tool-calls")),
          reply(text("done"), finish("stop"))
        )
        yield* w.prompt("print a lot")
        yield* w.wait
        const all = yield* w.events
        const success = data(all, "tool.success")
        const preview: string = success.content[0].text
        expect(Buffer.byteLength(preview)).toBeLessThanOrEqual(50 * 1024)
        expect(preview.startsWith("00000001 output")).toBe(true)
        expect(preview.endsWith(raw.slice(-200))).toBe(true)
        expect(success.structured).toEqual({ exitCode: 0 })
        // The typed path and the preview name the same managed file, which holds the complete text.
        expect(success.outputPaths).toHaveLength(1)
        const managed: string = success.outputPaths[0]
        expect(path.dirname(managed)).toBe(w.toolOutputDir)
        expect(preview).toContain(managed)
        expect(fs.readFileSync(managed, "utf8")).toBe(raw)
        // Raw oversized output is never published: the whole durable log is small.
        expect(JSON.stringify(all).length).toBeLessThan(200_000)
        // The model replays the preview.
        const [, second] = yield* w.server.requests
        const toolMessage = (second!.body.messages as Array<any>).find((m) => m.role === "tool")
        expect(toolMessage.content).toContain(managed)
        expect(Buffer.byteLength(JSON.stringify(toolMessage))).toBeLessThan(60 * 1024)
      })
  )

  it.scopedLive(
    "Once a tool operation succeeds, bounding its Model Tool Output and publishing its one durable settlement form an interruption-safe completion region",
    () =>
      Effect.gen(function* () {
        const w = yield* world()
        const line = `${"x".repeat(99)}\n`
        const raw = line.repeat(2_000_000) // 200 MB: bounding it takes a while
        yield* w.register(big(() => raw))
        yield* w.server.enqueue(
          reply(toolCall("call_1", "big", {}), finish("tool-calls")),
          reply(text("unused"), finish("stop"))
        )
        yield* w.prompt("print a lot")
        // Wait until bounding is writing the managed file, then interrupt the session.
        let midway = false
        for (let i = 0; i < 20_000; i++) {
          const files = fs.existsSync(w.toolOutputDir) ? fs.readdirSync(w.toolOutputDir) : []
          if (files.length > 0) {
            midway = fs.statSync(path.join(w.toolOutputDir, files[0]!)).size < raw.length
            break
          }
          yield* Effect.sleep("1 millis")
        }
        yield* w.interrupt
        expect(midway).toBe(true)
        // The success is published once, bounded, after the interruption; then the Step settles: ended
        // with the provider's finish when its stream had ended, else failed as interrupted (the
        // interruption may land either side of the stream's end).
        const types = yield* w.types
        expect(types.slice(-3, -1)).toEqual(["tool.called", "tool.success"])
        expect(types).not.toContain("tool.failed")
        const all = yield* w.events
        const settled = all.at(-1)!
        if (settled.type === "session.next.step.ended") expect(data(all, "step.ended").finish).toBe("tool-calls")
        else expect(data(all, "step.failed").error.message).toBe(StepRunner.providerInterruptedMessage)
        const success = data(all, "tool.success")
        expect(Buffer.byteLength(success.content[0].text)).toBeLessThanOrEqual(50 * 1024)
        expect(fs.statSync(success.outputPaths[0]).size).toBe(raw.length)
        expect(JSON.stringify(all).length).toBeLessThan(200_000)
      }),
    60_000
  )

  it.scopedLive(
    "Failure to retain a Managed Tool Output File does not change a successful tool operation into a failed one",
    () =>
      Effect.gen(function* () {
        // The tool-output directory's path is taken by a file: no output file can be kept there.
        const w = yield* world({
          dataDir: (root) => {
            fs.mkdirSync(path.join(root, "data"))
            fs.writeFileSync(path.join(root, "data", "tool-output"), "")
            return path.join(root, "data")
          }
        })
        yield* w.register(big(() => "line\n".repeat(100_000)))
        yield* w.server.enqueue(
          reply(toolCall("call_1", "big", {}), finish("tool-calls")),
          reply(text("ok"), finish("stop"))
        )
        yield* w.prompt("print a lot")
        yield* w.wait
        const all = yield* w.events
        expect(yield* w.types).not.toContain("tool.failed")
        const success = data(all, "tool.success")
        expect(success.outputPaths).toEqual([])
        expect(success.content[0].text).toContain("The full output could not be kept: this output is lossy")
        expect(success.structured).toEqual({ exitCode: 0 })
      })
  )

  it.scopedLive("an oversized progress report is clipped before it is published", () =>
    Effect.gen(function* () {
      const w = yield* world()
      yield* w.register({
        name: "big",
        description: "Reports a lot of progress",
        inputSchema: { type: "object", properties: {} },
        execute: (_, context) =>
          Effect.as(context.progress({ content: [{ type: "text", text: "progress\n".repeat(200_000) }] }), {
            content: [{ type: "text" as const, text: "finished" }]
          })
      })
      yield* w.server.enqueue(
        reply(toolCall("call_1", "big", {}), finish("tool-calls")),
        reply(text("ok"), finish("stop"))
      )
      yield* w.prompt("go")
      yield* w.wait
      const all = yield* w.events
      const progress = data(all, "tool.progress")
      expect(Buffer.byteLength(progress.content[0].text)).toBeLessThanOrEqual(50 * 1024)
      expect(progress.content[0].text).toContain("not shown in this progress report")
      expect(data(all, "tool.success").content).toEqual([{ type: "text", text: "finished" }])
      expect(fs.existsSync(w.toolOutputDir) ? fs.readdirSync(w.toolOutputDir) : []).toEqual([])
    })
  )
})
