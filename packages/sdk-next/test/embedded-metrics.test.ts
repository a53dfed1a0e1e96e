import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { LLMScript, ScriptedLLMServer } from "@opencode-ai/core/testing"
import { HostTool, OpenCode } from "@opencode-ai/sdk-next"
import { Effect, Schema } from "effect"

const { reply, text, toolCall, usage, finish } = LLMScript
const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), `opencode-${prefix}-`))

/** The value of the sample line `name{labels}` in a Prometheus exposition, if there is one. */
const sample = (exposition: string, series: string): number | undefined => {
  const line = exposition.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe("GET /metrics on an embedded host", () => {
  it.scopedLive("serves the runtime metrics of a session run in this process", () =>
    Effect.gen(function* () {
      const llm = yield* ScriptedLLMServer.make()
      const dir = temp("embedded-metrics")
      const clock = HostTool.make({
        name: "metrics_probe",
        description: "Answers a fixed word",
        parameters: Schema.Struct({}),
        execute: () => Effect.succeed("tick")
      })
      const host = yield* OpenCode.embedded({
        databaseFile: path.join(dir, "opencode.db"),
        directory: temp("instance"),
        configDir: path.join(dir, "config"),
        env: { XDG_DATA_HOME: path.join(dir, "data") },
        config: ScriptedLLMServer.config(llm.url),
        tools: [clock]
      })
      yield* llm.enqueue(
        reply(toolCall("call_1", "metrics_probe", {}), usage({ input: 50, output: 4 }), finish("tool-calls")),
        reply(text("tick."), usage({ input: 60, output: 2 }), finish("stop"))
      )
      const session = yield* host.sessions.create()
      yield* host.sessions.prompt({ sessionID: session.id, prompt: { text: "probe" } })
      yield* host.sessions.wait({ sessionID: session.id })

      const response = yield* Effect.promise(() => host.fetch(`${OpenCode.embeddedBaseUrl}/metrics`))
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
      const exposition = yield* Effect.promise(() => response.text())
      expect(sample(exposition, 'opencode_tool_duration_seconds_count{tool="metrics_probe",outcome="success"}')).toBe(1)
      expect(sample(exposition, 'opencode_steps_total{provider="scripted",model="m",outcome="continue"}')).toBe(1)
      expect(sample(exposition, 'opencode_tokens_total{provider="scripted",model="m",kind="input"}')).toBe(110)
      expect(sample(exposition, "opencode_sessions_active")).toBe(0)
    })
  )
})
