import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { TestDatabase } from "@opencode-ai/core/testing"
import { Effect, Layer, LogLevel, type Scope } from "effect"
import { Serve } from "../src/serve.js"

export interface Running {
  readonly url: string
  readonly dataHome: string
  /** The XDG config home the server reads `opencode/opencode.json(c)` from (empty unless `env` names one). */
  readonly configHome: string
  readonly directory: string
}

/** A fresh temporary directory, removed when the test process exits. */
export const tempDir = (prefix: string): string => fs.mkdtempSync(path.join(os.tmpdir(), `opencode-${prefix}-`))

/**
 * A temporary XDG config home holding `opencode/opencode.json` with `document` (a string is written
 * as is, anything else as JSON): pass it as `XDG_CONFIG_HOME`.
 */
export const configHome = (document: unknown): string => {
  const home = tempDir("config")
  fs.mkdirSync(path.join(home, "opencode"))
  fs.writeFileSync(
    path.join(home, "opencode", "opencode.json"),
    typeof document === "string" ? document : JSON.stringify(document, null, 2)
  )
  return home
}

/**
 * Starts the real listener on 127.0.0.1 with an ephemeral port, a temporary XDG data home (so a
 * fresh SQLite file, or under `OPENCODE_TEST_DATABASE=postgres` a fresh PostgreSQL database), an empty temporary XDG config home (never the user's `~/.config`), a temporary
 * XDG cache home with the model database refresh off, and a temporary instance directory; `env` adds
 * to or overrides those, and `serve` sets further
 * `Serve.layer` options (e.g. a test configuration, allowed origins). Closed with the enclosing Scope.
 */
export const startServer = (
  env: Record<string, string> = {},
  serve: Partial<Pick<Serve.Options, "config" | "cors" | "ptyTickets" | "ui">> = {}
): Effect.Effect<Running & { readonly port: number }, never, Scope.Scope> =>
  Effect.gen(function* () {
    // A test that passes XDG_DATA_HOME restarts over the same data: its database follows it.
    const dataHome = env.XDG_DATA_HOME ?? tempDir("data")
    const xdgConfig = env.XDG_CONFIG_HOME ?? tempDir("config")
    const directory = tempDir("project")
    const context = yield* Layer.build(
      Serve.layer({
        port: 0,
        hostname: "127.0.0.1",
        printLogs: true,
        logLevel: LogLevel.None,
        directory,
        // No test reaches models.dev, and none reads the user's model cache: a test that refreshes
        // passes a loopback OPENCODE_MODELS_URL and clears the flag.
        env: {
          XDG_DATA_HOME: dataHome,
          XDG_CACHE_HOME: tempDir("cache"),
          OPENCODE_DISABLE_MODELS_FETCH: "1",
          // Under OPENCODE_TEST_DATABASE=postgres, a PostgreSQL database of this data home's own.
          ...TestDatabase.serverEnv(dataHome),
          ...env,
          XDG_CONFIG_HOME: xdgConfig
        },
        ...serve
      })
    ).pipe(Effect.orDie)
    const server = yield* HttpServer.HttpServer.pipe(Effect.provide(context))
    const address = server.address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    return { url: `http://127.0.0.1:${address.port}`, port: address.port, dataHome, configHome: xdgConfig, directory }
  })

/** A listener on 127.0.0.1 that, like `Serve.layer`'s, closes keep-alive connections once they drain at shutdown. */
export const listener = () => {
  const server = http.createServer()
  const closeDrained = Effect.addFinalizer(() =>
    Effect.sync(() => {
      const timer = setInterval(() => server.closeIdleConnections(), 25)
      server.once("close", () => clearInterval(timer))
    })
  )
  return Layer.scopedDiscard(closeDrained).pipe(
    Layer.provideMerge(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" }))
  )
}

/** A JSON request to `url` (a body is sent as `application/json`): its status and its parsed body, if any. */
export const call = (url: string, method: string, body?: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method,
      ...(body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {})
    })
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
  })
