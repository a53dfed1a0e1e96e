/**
 * What a short text turn costs in process, counted rather than timed: the Effect operations the
 * runtime evaluates per turn (every step of every fiber, through a Supervisor with op supervision on),
 * the SQL statements it runs, and, as a second figure, its wall and CPU time. Turns run one after
 * another on one session of a Core over a temporary SQLite file, against a ScriptedLLMServer that
 * answers each request at once with one chunk of text.
 *
 *   node --import tsx bench/turn-ops.ts [--turns 200] [--warmup 30]
 *
 * A count does not move with the host's load, so it compares builds across days where the times do
 * not; the times here are this process's, the scripted server included. Figures are printed, never
 * asserted (DESIGN §7.10).
 */

import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { Effect, Logger, LogLevel, RuntimeFlags, RuntimeFlagsPatch, Supervisor } from "effect"
import { Locations, SessionInput, SessionRunner, Sessions } from "../packages/core/src/index.js"
import { LLMScript, ScriptedLLMServer } from "../packages/core/src/testing/index.js"
import { CoreHost } from "./core-host.js"
import { type Figure, numberFlag, runWhenMain } from "./figures.js"

const turns = numberFlag("turns", 200, (value) => value >= 1)
const warmup = numberFlag("warmup", 30, (value) => value >= 0)

let counting = false
let ops = 0
/** Counts every operation evaluated while {@link counting}. */
class OpCounter extends Supervisor.AbstractSupervisor<void> {
  readonly value = Effect.void
  override onEffect(): void {
    if (counting) ops++
  }
}

let statements = 0
/** Counts the statements better-sqlite3 runs while {@link counting} (Core's own copy of the driver). */
const countStatements = () => {
  const Sqlite = createRequire(path.join(import.meta.dirname, "../packages/core/package.json"))("better-sqlite3")
  const probe = new Sqlite(":memory:")
  const prototype = Object.getPrototypeOf(probe.prepare("SELECT 1"))
  probe.close()
  for (const method of ["run", "all", "get", "iterate"]) {
    const original = prototype[method]
    prototype[method] = function (this: unknown, ...args: Array<unknown>) {
      if (counting) statements++
      return original.apply(this, args)
    }
  }
}

export const run = async (): Promise<ReadonlyArray<Figure>> => {
  countStatements()
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-turn-ops-"))
  try {
    return await Effect.runPromise(
      Effect.gen(function* () {
        const llm = yield* ScriptedLLMServer.make({ record: false, coalesce: true })
        const directory = path.join(root, "project")
        const context = yield* CoreHost.build({
          databaseFile: path.join(root, "opencode.db"),
          directory,
          configDir: path.join(root, "config"),
          config: { ...ScriptedLLMServer.config(llm.url), agent: { title: { disable: true } } } as ReturnType<
            typeof ScriptedLLMServer.config
          >
        })
        const sessions = yield* Effect.provide(Sessions.Service, context)
        const input = yield* Effect.provide(SessionInput.Service, context)
        const runner = yield* Effect.provide(SessionRunner.Service, context)
        const location = yield* Effect.provide(
          Effect.flatMap(Locations.Service, (locations) => locations.resolve({ directory })),
          context
        )
        const session = yield* sessions.create({ location })
        const turn = (i: number) =>
          Effect.gen(function* () {
            yield* llm.enqueue(LLMScript.reply(LLMScript.text("Hel", "lo"), LLMScript.finish("stop")))
            yield* input.admit(session.id, { prompt: { text: `prompt ${i}` } })
            yield* runner.wake(session.id)
            yield* runner.wait(session.id)
          })
        for (let i = 0; i < warmup; i++) yield* turn(i)
        // Counted: every operation of every fiber (the drains, the scripted server) while the turns run.
        counting = true
        for (let i = 0; i < turns; i++) yield* turn(i)
        counting = false
        // Timed, without op supervision (it slows every step).
        const cpu = process.cpuUsage()
        const start = performance.now()
        yield* Effect.withRuntimeFlagsPatch(
          Effect.forEach(
            Array.from({ length: turns }, (_, i) => i),
            turn,
            { discard: true }
          ),
          RuntimeFlagsPatch.disable(RuntimeFlags.OpSupervision)
        )
        const wall = (performance.now() - start) / turns
        const used = process.cpuUsage(cpu)
        const figures: ReadonlyArray<Figure> = [
          { name: "turn-effect-ops", value: Math.round(ops / turns), unit: "count" },
          { name: "turn-sql-statements", value: Math.round((statements / turns) * 10) / 10, unit: "count" },
          { name: "turn-wall-in-process", value: wall, unit: "ms" },
          { name: "turn-cpu-in-process", value: (used.user + used.system) / 1000 / turns, unit: "ms" }
        ]
        console.log(
          `short text turns in process, one session, ${turns} counted after ${warmup} warm-up (ScriptedLLMServer, zero latency)`
        )
        return figures
      }).pipe(
        Effect.scoped,
        Effect.supervised(new OpCounter()),
        Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)),
        Logger.withMinimumLogLevel(LogLevel.Warning)
      )
    )
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

runWhenMain(import.meta.url, run)
