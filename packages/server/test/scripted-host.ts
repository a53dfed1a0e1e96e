import * as fs from "node:fs"
import * as path from "node:path"
import { HttpApiBuilder, HttpServer } from "@effect/platform"
import { Config, type ConfigInfo, type Core, EventLog } from "@opencode-ai/core"
import { ScriptedLLMServer, TestDatabase } from "@opencode-ai/core/testing"
import { Context, Effect, Layer, Option } from "effect"
import { Router } from "../src/router.js"
import { listener, tempDir } from "./harness.js"

/**
 * Server's router on a real listener over a Core whose one provider is a scripted LLM server on
 * 127.0.0.1, with one session. `requests` names the session's pending-request route (`permission`
 * or `question`) that `pending` polls; `agent` is merged into the config's agents.
 */
export const scriptedHost = (options: {
  readonly prefix: string
  readonly requests: "permission" | "question"
  readonly agent?: Record<string, unknown>
  /** Runs on the project directory before the Core starts and the session is created (e.g. `git init`). */
  readonly setup?: (directory: string) => void
}) =>
  Effect.gen(function* () {
    const llm = yield* ScriptedLLMServer.make()
    const root = fs.realpathSync(tempDir(options.prefix))
    const directory = path.join(root, "project")
    fs.mkdirSync(directory)
    options.setup?.(directory)
    const config = Config.layerTest({
      ...ScriptedLLMServer.config(llm.url),
      ...(options.agent !== undefined ? { agent: options.agent } : {})
    } as ConfigInfo.Info)
    const context = yield* Layer.build(
      HttpApiBuilder.serve().pipe(
        Layer.provide(Router.layer({ auth: Option.none() })),
        Layer.provideMerge(listener()),
        Layer.provideMerge(
          TestDatabase.coreLayer({
            databaseFile: path.join(root, "opencode.db"),
            directory,
            configDir: path.join(root, "config"),
            dataDir: path.join(root, "data"),
            env: {},
            config
          })
        )
      )
    ).pipe(Effect.orDie)
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    const url = `http://127.0.0.1:${address.port}`
    const call = (method: string, route: string, body?: unknown) =>
      Effect.promise(async () => {
        const response = await fetch(`${url}${route}`, {
          method,
          ...(body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {})
        })
        const raw = await response.text()
        return { status: response.status, body: raw === "" ? undefined : JSON.parse(raw) }
      })
    const session = (yield* call("POST", "/api/session", {})).body.data as { id: string; projectID: string }
    const base = `/api/session/${session.id}`
    const prompt = (words: string) => call("POST", `${base}/prompt`, { prompt: { text: words } })
    const pending = (count: number) =>
      Effect.gen(function* () {
        for (;;) {
          const listed = yield* call("GET", `${base}/${options.requests}`)
          if (listed.body.data.length >= count) return listed.body.data as Array<any>
          yield* Effect.sleep("5 millis")
        }
      })
    const wait = call("POST", `${base}/wait`)
    const events = Effect.provide(
      Effect.flatMap(EventLog.Service, (log) => log.read(session.id)),
      context as Context.Context<Core.Services>
    )
    const settled = (callID: string) =>
      Effect.map(events, (all) =>
        all.find(
          (e) =>
            (e.type === "session.next.tool.success" || e.type === "session.next.tool.failed") &&
            (e.data as any).callID === callID
        )
      )
    return { llm, url, root, directory, session, base, call, prompt, pending, wait, settled, context, events }
  })
