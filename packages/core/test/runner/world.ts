import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  Config,
  type ConfigInfo,
  type Core,
  EventLog,
  Locations,
  SessionInput,
  SessionRunner,
  Sessions,
  ToolRegistry
} from "@opencode-ai/core"
import { ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect, Layer } from "effect"
import { TestDatabase } from "../../src/testing/test-database.js"

/** Retries without waiting, so a retry test needs no clock. */
export const fastRetry = {
  maxAttempts: 4,
  initialDelayMs: 1,
  factor: 1,
  maxDelayMs: 1,
  jitter: 0,
  maxRetryAfterMs: 60_000
}

/**
 * A Core over a fresh database whose one provider is a scripted LLM server on 127.0.0.1, speaking
 * `protocol` to the real adapter. `agents` merges into the config's `agent` key, `reference` is the
 * config's `reference` key.
 */
export const world = (
  options: {
    readonly protocol?: "openai-compatible" | "anthropic" | "google"
    readonly agent?: Record<string, unknown>
    readonly reference?: Record<string, unknown>
    /** The scripted model's token limits (default: context 100,000, output 1,000). */
    readonly limit?: { readonly context: number; readonly output: number }
    /** The scripted model's `cost` (models.dev shape, USD per million tokens); default none (it costs 0). */
    readonly cost?: Record<string, unknown>
    /** The config's `mcp` key. */
    readonly mcp?: Record<string, unknown>
    /** The config's `compaction` key. */
    readonly compaction?: Record<string, unknown>
    /** Answers requests when the script's queue is empty (ScriptedLLMServer `respond`). */
    readonly respond?: ScriptedLLMServer.Options["respond"]
    /** Each reply's frames in one socket write (ScriptedLLMServer `coalesce`). */
    readonly coalesce?: boolean
    /** Merged into the scripted model's config entry (e.g. `options`, `variants`, `headers`). */
    readonly model?: Record<string, unknown>
    /** The scripted model's input kinds (`modalities.input`); default text only. */
    readonly input?: ReadonlyArray<string>
    /** Runs on the project directory before the Core starts and the session is created (e.g. `git init`). */
    readonly setup?: (directory: string) => void
    /** The environment the Core honours (default none), e.g. `OPENCODE_EXPERIMENTAL_PLAN_MODE`. */
    readonly env?: Readonly<Record<string, string>>
    /** More models of the scripted provider, by key (config shape, e.g. `{ id: "gpt-4o" }`), beside `m`. */
    readonly models?: Readonly<Record<string, Record<string, unknown>>>
  } = {}
) =>
  Effect.gen(function* () {
    const server = yield* ScriptedLLMServer.make({
      ...(options.respond === undefined ? {} : { respond: options.respond }),
      ...(options.coalesce === undefined ? {} : { coalesce: options.coalesce })
    })
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-runner-")))
    const directory = path.join(root, "project")
    fs.mkdirSync(directory)
    options.setup?.(directory)
    const scripted = ScriptedLLMServer.config(server.url, {
      ...(options.protocol === undefined ? {} : { protocol: options.protocol }),
      ...(options.input === undefined ? {} : { input: options.input })
    }) as any
    if (options.limit !== undefined) scripted.provider.scripted.models.m.limit = options.limit
    if (options.models !== undefined) Object.assign(scripted.provider.scripted.models, options.models)
    if (options.model !== undefined) Object.assign(scripted.provider.scripted.models.m, options.model)
    if (options.cost !== undefined) scripted.provider.scripted.models.m.cost = options.cost
    const config = Config.layerTest({
      ...scripted,
      ...(options.agent !== undefined ? { agent: options.agent } : {}),
      ...(options.reference !== undefined ? { reference: options.reference } : {}),
      ...(options.compaction !== undefined ? { compaction: options.compaction } : {}),
      ...(options.mcp !== undefined ? { mcp: options.mcp } : {})
    } as ConfigInfo.Info)
    const context = yield* Layer.build(
      TestDatabase.coreLayer({
        databaseFile: path.join(root, "opencode.db"),
        directory,
        configDir: path.join(root, "config"),
        dataDir: path.join(root, "data"),
        env: options.env ?? {},
        config,
        retry: fastRetry
      })
    ).pipe(Effect.orDie)
    const run = <A, E>(effect: Effect.Effect<A, E, Core.Services>) => Effect.provide(effect, context)
    const session = yield* run(
      Effect.gen(function* () {
        const location = yield* (yield* Locations.Service).resolve({ directory })
        return yield* (yield* Sessions.Service).create({ location })
      })
    ).pipe(Effect.orDie)
    const prompt = (text: string, options: { readonly delivery?: "steer" | "queue"; readonly resume?: boolean } = {}) =>
      run(
        Effect.gen(function* () {
          const admitted = yield* (yield* SessionInput.Service).admit(session.id, {
            prompt: { text },
            ...(options.delivery !== undefined ? { delivery: options.delivery } : {})
          })
          if (options.resume !== false) yield* (yield* SessionRunner.Service).wake(session.id)
          return admitted
        })
      )
    const runner = run(SessionRunner.Service)
    const wait = Effect.flatMap(runner, (r) => r.wait(session.id))
    const interrupt = Effect.flatMap(runner, (r) => r.interrupt(session.id))
    const events = run(Effect.flatMap(EventLog.Service, (log) => log.read(session.id)))
    const types = Effect.map(events, (all) => all.map((e) => e.type.replace("session.next.", "")))
    const register = (tool: ToolRegistry.Tool) =>
      Effect.provide(
        Effect.flatMap(ToolRegistry.Service, (r) => r.register(tool)),
        context
      )
    const compact = Effect.flatMap(runner, (r) => r.compact(session.id))
    return {
      server,
      session,
      root,
      directory,
      dataDir: path.join(root, "data"),
      prompt,
      wait,
      interrupt,
      compact,
      events,
      types,
      register,
      run
    }
  })
