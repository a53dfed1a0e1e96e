/**
 * The host that crashes, for `restart.test.ts`: opens Core over the given database file with one
 * provider pointing at the parent's scripted LLM server, registers a tool that never returns, creates
 * a session, admits a prompt and wakes it. Once the Step has reached the point named by `mode` (and
 * that point is durable), it prints one `stranded <json>` line and then waits to be killed.
 *
 *   node --import tsx test/runner/restart.child.ts <databaseFile> <directory> <llmURL> <mode>
 *
 * - `tool`: waits for `tool.called` (the tool is running and never settles), then admits a second
 *   prompt as `queue`, which stays pending behind the running Step;
 * - `text`: waits for `text.started` (the parent's scripted reply holds the text open with a gate);
 * - `compaction`: once the first Step has ended, asks for a compaction and waits for
 *   `compaction.started` (the parent's scripted summary is held open with a gate);
 * - `compacted`: likewise, but waits for `compaction.ended` (the compaction committed).
 */

import * as path from "node:path"
import { Effect, Logger, LogLevel } from "effect"
import { Config } from "../../src/config/config.js"
import { EventLog } from "../../src/event/event-log.js"
import { SessionInput } from "../../src/input/session-input.js"
import { Locations } from "../../src/location/locations.js"
import { SessionRunner } from "../../src/runner/session-runner.js"
import { Sessions } from "../../src/session/sessions.js"
import { ScriptedLLMServer } from "../../src/testing/scripted-llm-server.js"
import { TestDatabase } from "../../src/testing/test-database.js"
import { ToolRegistry } from "../../src/tool/tool-registry.js"

const [databaseFile = "", directory = "", llmURL = "", mode = "tool"] = process.argv.slice(2)

const program = Effect.gen(function* () {
  const location = yield* (yield* Locations.Service).resolve({ directory })
  const session = yield* (yield* Sessions.Service).create({ location })
  yield* (yield* ToolRegistry.Service).register({
    name: "block",
    description: "Blocks forever",
    inputSchema: { type: "object", properties: { what: { type: "string" } } },
    execute: () => Effect.never
  })
  const input = yield* SessionInput.Service
  const runner = yield* SessionRunner.Service
  const log = yield* EventLog.Service
  yield* input.admit(session.id, { prompt: { text: mode === "tool" ? "run the blocking tool" : "tell me a story" } })
  yield* runner.wake(session.id)
  const reached = (type: string) =>
    Effect.gen(function* () {
      while (!(yield* log.read(session.id)).some((event) => event.type === type)) yield* Effect.sleep("5 millis")
    })

  if (mode === "compaction" || mode === "compacted") {
    yield* runner.wait(session.id)
    yield* runner.compact(session.id)
    yield* reached(mode === "compaction" ? "session.next.compaction.started" : "session.next.compaction.ended")
    process.stdout.write(`stranded ${JSON.stringify({ sessionID: session.id })}\n`)
    return yield* Effect.never
  }
  yield* reached(mode === "tool" ? "session.next.tool.called" : "session.next.text.started")
  if (mode === "tool") {
    yield* input.admit(session.id, { prompt: { text: "queued behind the tool" }, delivery: "queue" })
  }
  process.stdout.write(`stranded ${JSON.stringify({ sessionID: session.id })}\n`)
  return yield* Effect.never
})

Effect.runPromise(
  program.pipe(
    Effect.scoped,
    Effect.provide(
      TestDatabase.coreLayer({
        databaseFile,
        directory,
        configDir: path.join(directory, "config"),
        env: {},
        config: Config.layerTest(ScriptedLLMServer.config(llmURL))
      })
    ),
    Logger.withMinimumLogLevel(LogLevel.None)
  )
).catch((error) => {
  process.stderr.write(`${String(error)}\n`)
  process.exit(1)
})
