import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import {
  Config,
  type ConfigInfo,
  type Core,
  EventLog,
  Locations,
  SessionInput,
  SessionRunner,
  Sessions
} from "@opencode-ai/core"
import { ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect, Layer, Logger } from "effect"
import { TestDatabase } from "../../src/testing/test-database.js"

/** The stdio MCP server of these tests (see fixture-server.mjs for its environment variables). */
export const fixture = fileURLToPath(new URL("./fixture-server.mjs", import.meta.url))

/** A `local` server entry running the fixture with `environment`. */
export const local = (
  environment: Readonly<Record<string, string>>,
  options: { readonly timeout?: number } = {}
): ConfigInfo.McpLocal => ({
  type: "local",
  command: [process.execPath, fixture],
  environment: { ...environment },
  ...(options.timeout === undefined ? {} : { timeout: options.timeout })
})

/** A fresh temporary directory (real path). */
export const tempDir = (prefix: string): string => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)))

/** Collects every log line (level and message) instead of printing it. */
export const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    const parts = Array.isArray(message) ? message : [message]
    lines.push(
      `${logLevel.label} ${parts.map((part) => (typeof part === "string" ? part : JSON.stringify(part))).join(" ")}`
    )
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

/** Whether a process with `pid` still exists. */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Polls `alive(pid)` until it is false (at most ~5 s); resolves to whether it ever became false. */
export const gone = (pid: number) =>
  Effect.gen(function* () {
    for (let i = 0; i < 100; i++) {
      if (!alive(pid)) return true
      yield* Effect.sleep("50 millis")
    }
    return false
  })

/**
 * A Core over a fresh database whose one provider is a scripted LLM server on 127.0.0.1, with the
 * given `mcp` servers and `agent` overrides. Logs are captured in `logs`.
 */
export const world = (options: {
  readonly mcp: Readonly<Record<string, ConfigInfo.Mcp>>
  readonly agent?: Readonly<Record<string, ConfigInfo.Agent>>
  readonly permission?: ConfigInfo.Info["permission"]
}) =>
  Effect.gen(function* () {
    const server = yield* ScriptedLLMServer.make()
    const root = tempDir("opencode-mcp-")
    const directory = path.join(root, "project")
    fs.mkdirSync(directory)
    const config = Config.layerTest({
      ...ScriptedLLMServer.config(server.url),
      mcp: options.mcp,
      ...(options.agent === undefined ? {} : { agent: options.agent }),
      ...(options.permission === undefined ? {} : { permission: options.permission })
    })
    const logs = captureLogs()
    const context = yield* Layer.build(
      TestDatabase.coreLayer({
        databaseFile: path.join(root, "opencode.db"),
        directory,
        configDir: path.join(root, "config"),
        dataDir: path.join(root, "data"),
        env: {},
        config
      })
    ).pipe(Effect.provide(logs.layer), Effect.orDie)
    const run = <A, E>(effect: Effect.Effect<A, E, Core.Services>) => Effect.provide(effect, context)
    const session = yield* run(
      Effect.gen(function* () {
        const location = yield* (yield* Locations.Service).resolve({ directory })
        return yield* (yield* Sessions.Service).create({ location })
      })
    ).pipe(Effect.orDie)
    const prompt = (text: string) =>
      run(
        Effect.gen(function* () {
          yield* (yield* SessionInput.Service).admit(session.id, { prompt: { text } })
          yield* (yield* SessionRunner.Service).wake(session.id)
        })
      )
    const wait = run(Effect.flatMap(SessionRunner.Service, (runner) => runner.wait(session.id)))
    const interrupt = run(Effect.flatMap(SessionRunner.Service, (runner) => runner.interrupt(session.id)))
    const events = run(Effect.flatMap(EventLog.Service, (log) => log.read(session.id)))
    /** The system message of every request the provider received, in order. */
    const systems = Effect.map(server.requests, (requests) =>
      requests.map((request) => {
        const messages = request.body.messages as Array<{ role: string; content: string }>
        return messages
          .filter((message) => message.role === "system")
          .map((message) => message.content)
          .join("\n")
      })
    )
    return { server, session, directory, prompt, wait, interrupt, events, systems, run, logs: logs.lines }
  })
