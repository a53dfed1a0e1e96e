import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  Config,
  type ConfigInfo,
  Core,
  EventLog,
  Locations,
  SessionInput,
  SessionRunner,
  Sessions,
  ToolRegistry
} from "@opencode-ai/core"
import { ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect, Layer } from "effect"

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
    readonly protocol?: "openai-compatible" | "anthropic"
    readonly agent?: Record<string, unknown>
    readonly reference?: Record<string, unknown>
    /** Runs on the project directory before the Core starts and the session is created (e.g. `git init`). */
    readonly setup?: (directory: string) => void
  } = {}
) =>
  Effect.gen(function* () {
    const server = yield* ScriptedLLMServer.make()
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-runner-")))
    const directory = path.join(root, "project")
    fs.mkdirSync(directory)
    options.setup?.(directory)
    const config = Config.layerTest({
      ...ScriptedLLMServer.config(server.url, options.protocol === undefined ? {} : { protocol: options.protocol }),
      ...(options.agent !== undefined ? { agent: options.agent } : {}),
      ...(options.reference !== undefined ? { reference: options.reference } : {})
    } as ConfigInfo.Info)
    const context = yield* Layer.build(
      Core.layer({
        databaseFile: path.join(root, "opencode.db"),
        directory,
        configDir: path.join(root, "config"),
        dataDir: path.join(root, "data"),
        env: {},
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
    return {
      server,
      session,
      root,
      directory,
      dataDir: path.join(root, "data"),
      prompt,
      wait,
      interrupt,
      events,
      types,
      register,
      run
    }
  })
