import { FetchHttpClient } from "@effect/platform"
import { OpencodeClient } from "@opencode-ai/client/effect"
import { ScriptedLLMServer } from "@opencode-ai/core/testing"
import { Effect } from "effect"
import { configHome, startServer } from "./harness.js"
import { effectApi, type MakeHost, promiseApi, rawRequest, sessionScenarios } from "./session-scenarios.suite.js"

/** The real listener on 127.0.0.1, configured by an `opencode.json` in a temporary XDG config home. */
const listen = (llmURL: string) =>
  Effect.map(startServer({ XDG_CONFIG_HOME: configHome(ScriptedLLMServer.config(llmURL)) }), (server) => server.url)

const promiseClient: MakeHost = (llmURL) =>
  Effect.map(listen(llmURL), (baseUrl) => ({ api: promiseApi({ baseUrl }), request: rawRequest(baseUrl) }))

const effectClient: MakeHost = (llmURL) =>
  Effect.gen(function* () {
    const baseUrl = yield* listen(llmURL)
    const client = yield* OpencodeClient.make({ baseUrl }).pipe(Effect.provide(FetchHttpClient.layer))
    return { api: effectApi(client), request: rawRequest(baseUrl) }
  })

sessionScenarios([
  ["Promise client over HTTP", promiseClient],
  ["Effect client over HTTP", effectClient]
])
