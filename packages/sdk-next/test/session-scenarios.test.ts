import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Config } from "@opencode-ai/core"
import { ScriptedLLMServer } from "@opencode-ai/core/testing"
import { OpenCode } from "@opencode-ai/sdk-next"
import { Effect } from "effect"
import {
  effectApi,
  type MakeHost,
  promiseApi,
  rawRequest,
  sessionScenarios
} from "../../server/test/session-scenarios.suite.js"

const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), `opencode-${prefix}-`))

/** The embedded host over a fresh database, configured in code with `Config.layerTest`. */
const embedded = (llmURL: string) => {
  const dir = temp("embedded")
  return OpenCode.embedded({
    databaseFile: path.join(dir, "opencode.db"),
    directory: temp("instance"),
    configDir: path.join(dir, "config"),
    env: {},
    config: Config.layerTest(ScriptedLLMServer.config(llmURL))
  }).pipe(Effect.orDie)
}

const effectClient: MakeHost = (llmURL) =>
  Effect.map(embedded(llmURL), (host) => ({
    api: effectApi(host),
    request: rawRequest(OpenCode.embeddedBaseUrl, host.fetch)
  }))

const promiseClient: MakeHost = (llmURL) =>
  Effect.map(embedded(llmURL), (host) => ({
    api: promiseApi({ baseUrl: OpenCode.embeddedBaseUrl, fetch: host.fetch }),
    request: rawRequest(OpenCode.embeddedBaseUrl, host.fetch)
  }))

sessionScenarios([
  ["embedded host (its Effect client)", effectClient],
  ["embedded host (the Promise client over its fetch)", promiseClient]
])
