import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { createOpencodeClient, isSessionNotFoundError } from "@opencode-ai/client"
import { Config, Locations, Sessions } from "@opencode-ai/core"
import { OpenCode } from "@opencode-ai/sdk-next"
import { Effect, Exit, Scope } from "effect"

// What the health answer reports as `version`: the server package's.
const serverVersion: string = JSON.parse(
  fs.readFileSync(path.resolve(__dirname, "../../server/package.json"), "utf8")
).version

const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), `opencode-${prefix}-`))
const options = () => ({ databaseFile: path.join(temp("embedded"), "opencode.db"), directory: temp("instance") })

describe("Embedded OpenCode", () => {
  it.scopedLive("exposes the client capabilities on one object, without a nested client", () =>
    Effect.gen(function* () {
      const host = yield* OpenCode.embedded(options())
      expect(Object.keys(host).sort()).toEqual([
        "agents",
        "commands",
        "credentials",
        "events",
        "fetch",
        "files",
        "health",
        "instructions",
        "integrations",
        "location",
        "mcp",
        "models",
        "permissions",
        "providers",
        "ptys",
        "questions",
        "reference",
        "services",
        "sessions",
        "skills",
        "tools"
      ])
      expect(yield* host.health.get()).toEqual({ healthy: true, version: serverVersion })
      const session = yield* host.sessions.create()
      expect(yield* host.sessions.get({ sessionID: session.id })).toEqual(session)
      const missing = yield* host.sessions.get({ sessionID: "ses_missing" as typeof session.id }).pipe(Effect.flip)
      expect(missing._tag).toBe("SessionNotFoundError")
    })
  )

  it.scopedLive("opens no socket: no listen and no connect for a whole session scenario", () =>
    Effect.gen(function* () {
      let listens = 0
      let connects = 0
      const listen = net.Server.prototype.listen
      const connect = net.Socket.prototype.connect
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          net.Server.prototype.listen = function (this: net.Server, ...args: Array<any>) {
            listens++
            return listen.apply(this, args as any)
          } as typeof listen
          net.Socket.prototype.connect = function (this: net.Socket, ...args: Array<any>) {
            connects++
            return connect.apply(this, args as any)
          } as typeof connect
        }),
        () =>
          Effect.sync(() => {
            net.Server.prototype.listen = listen
            net.Socket.prototype.connect = connect
          })
      )
      const host = yield* OpenCode.embedded(options())
      const created = yield* host.sessions.create()
      yield* host.sessions.list({ limit: 10 })
      yield* host.sessions.get({ sessionID: created.id })
      yield* host.location.get()
      expect({ listens, connects }).toEqual({ listens: 0, connects: 0 })
    })
  )

  it.live("closing the scope releases the database", () =>
    Effect.gen(function* () {
      const opts = options()
      const scope = yield* Scope.make()
      const host = yield* OpenCode.embedded(opts).pipe(Scope.extend(scope))
      const session = yield* host.sessions.create()
      expect(fs.existsSync(`${opts.databaseFile}-wal`)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      // The last connection closed checkpoints and removes the write-ahead log.
      expect(fs.existsSync(`${opts.databaseFile}-wal`)).toBe(false)
      // The file is free again: a new host opens it and sees the durable session.
      const again = yield* Effect.scoped(
        Effect.flatMap(OpenCode.embedded(opts), (next) => next.sessions.get({ sessionID: session.id }))
      )
      expect(again).toEqual(session)
    })
  )

  it.scopedLive("two hosts are isolated from each other", () =>
    Effect.gen(function* () {
      const a = yield* OpenCode.embedded(options())
      const b = yield* OpenCode.embedded(options())
      const inA = yield* a.sessions.create()
      expect((yield* a.sessions.list()).items.map((s) => s.id)).toEqual([inA.id])
      expect((yield* b.sessions.list()).items).toEqual([])
      const fromB = yield* b.sessions.get({ sessionID: inA.id }).pipe(Effect.flip)
      expect(fromB._tag).toBe("SessionNotFoundError")
    })
  )

  it.scopedLive("is never a cluster runner: OPENCODE_RUNNER_ADDRESS in its environment opens no port", () =>
    Effect.gen(function* () {
      // Not even a valid address: a runner would refuse it before starting.
      const host = yield* OpenCode.embedded({ ...options(), env: { OPENCODE_RUNNER_ADDRESS: "not an address" } })
      expect((yield* host.sessions.create()).id).toMatch(/^ses_/)
    })
  )

  it.scopedLive("refuses a second live host on the same database file", () =>
    Effect.gen(function* () {
      const opts = options()
      yield* OpenCode.embedded(opts)
      const error = yield* OpenCode.embedded(opts).pipe(Effect.flip)
      expect(error._tag).toBe("StorageInUseError")
    })
  )

  it.scopedLive("serves the catalog of an explicit config layer (Config.layerTest) through the Effect client", () =>
    Effect.gen(function* () {
      const opts = options()
      const host = yield* OpenCode.embedded({
        ...opts,
        config: Config.layerTest({
          provider: {
            local: {
              npm: "@ai-sdk/openai-compatible",
              options: { baseURL: "http://127.0.0.1:8080/v1" },
              models: { qwen: { limit: { context: 32768, output: 4096 } } }
            }
          },
          agent: { plan: { disable: true }, reviewer: { mode: "subagent", steps: 2 } }
        })
      })
      const providers = yield* host.providers.list()
      expect(providers.data.map((provider) => [provider.id, provider.api])).toEqual([
        ["local", { type: "aisdk", package: "@ai-sdk/openai-compatible", url: "http://127.0.0.1:8080/v1" }]
      ])
      expect((yield* host.providers.get({ providerID: "local" })).data.id).toBe("local")
      const missing = yield* host.providers.get({ providerID: "nope" }).pipe(Effect.flip)
      expect(missing).toMatchObject({ _tag: "ProviderNotFoundError", providerID: "nope" })
      const models = yield* host.models.list()
      expect(models.data.map((model) => [model.providerID, model.id, model.limit])).toEqual([
        ["local", "qwen", { context: 32768, output: 4096 }]
      ])
      const agents = yield* host.agents.list()
      expect(agents.data.map((agent) => agent.id)).toEqual([
        "build",
        "general",
        "explore",
        "compaction",
        "title",
        "summary",
        "reviewer"
      ])
      expect(agents.data.find((agent) => agent.id === "reviewer")).toMatchObject({
        mode: "subagent",
        hidden: false,
        steps: 2
      })
      expect(agents.location.directory).toBe(fs.realpathSync(opts.directory))
    })
  )

  it.scopedLive(
    "fails its creation with the typed ConfigError of an invalid opencode.json, and frees the database",
    () =>
      Effect.gen(function* () {
        const configDir = temp("config")
        const file = path.join(configDir, "opencode.json")
        fs.writeFileSync(file, `{\n  "agent": {\n    "build": { "mode": "sideways" }\n  }\n}\n`)
        const opts = { ...options(), configDir }
        const error = yield* OpenCode.embedded(opts).pipe(Effect.flip)
        expect(error).toBeInstanceOf(Config.ConfigError)
        expect(error).toMatchObject({ _tag: "ConfigError", file, line: 3, key: "agent.build.mode" })
        expect(error.message).toContain(`${file}:3:`)
        // Fixed, the same database file opens at once in the same scope: the failed host released it.
        fs.writeFileSync(file, "{}")
        const host = yield* OpenCode.embedded(opts)
        expect(yield* host.health.get()).toEqual({ healthy: true, version: serverVersion })
      })
  )

  it.scopedLive("lists the custom commands of its config layer, global folder and project (command.list)", () =>
    Effect.gen(function* () {
      const opts = options()
      const configDir = temp("config")
      fs.mkdirSync(path.join(configDir, "command"))
      fs.writeFileSync(path.join(configDir, "command", "hello.md"), "---\ndescription: Greet\n---\nHello $1")
      fs.mkdirSync(path.join(opts.directory, ".opencode", "commands", "git"), { recursive: true })
      fs.writeFileSync(
        path.join(opts.directory, ".opencode", "commands", "git", "commit.md"),
        "---\nsubtask: true\nagent: general\n---\nCommit !`git diff`"
      )
      const host = yield* OpenCode.embedded({
        ...opts,
        configDir,
        config: Config.layerTest({ command: { hello: { template: "Hi from config", model: "local/qwen" } } })
      })
      const listed = yield* host.commands.list()
      expect(listed.location.directory).toBe(fs.realpathSync(opts.directory))
      expect(listed.data).toEqual([
        { name: "git/commit", template: "Commit !`git diff`", agent: "general", subtask: true },
        // The config's entry wins over the global folder's file of the same name.
        { name: "hello", template: "Hi from config", model: { providerID: "local", id: "qwen" } }
      ])
      const client = createOpencodeClient({ baseUrl: OpenCode.embeddedBaseUrl, fetch: host.fetch })
      const fromPromise = yield* Effect.promise(() => client.commands.list({}))
      expect(fromPromise.data).toEqual(listed.data)
    })
  )

  it.scopedLive("serves the Promise client through its in-memory fetch", () =>
    Effect.gen(function* () {
      const host = yield* OpenCode.embedded(options())
      const client = createOpencodeClient({ baseUrl: OpenCode.embeddedBaseUrl, fetch: host.fetch })
      const created = yield* Effect.promise(() => client.sessions.create({}))
      const fetched = yield* Effect.promise(() => client.sessions.get({ sessionID: created.id }))
      expect(fetched).toEqual(created)
      const failure = yield* Effect.promise(() =>
        client.sessions.get({ sessionID: "ses_nope" }).then(
          () => undefined,
          (e) => e
        )
      )
      expect(isSessionNotFoundError(failure)).toBe(true)
    })
  )

  it.scopedLive("deletes a session (with its child) through the Effect capabilities and the Promise client", () =>
    Effect.gen(function* () {
      const opts = options()
      const host = yield* OpenCode.embedded(opts)
      const parent = yield* host.sessions.create()
      const child = yield* Effect.flatMap(Sessions.Service, (sessions) =>
        sessions.get(parent.id).pipe(
          Effect.flatMap((info) => Effect.flatMap(Locations.Service, (locations) => locations.resolve(info.location))),
          Effect.flatMap((location) => sessions.create({ location, parentID: parent.id }))
        )
      ).pipe(Effect.provide(host.services))
      const kept = yield* host.sessions.create()
      yield* host.sessions.remove({ sessionID: parent.id })
      for (const id of [parent.id, child.id]) {
        expect((yield* host.sessions.get({ sessionID: id }).pipe(Effect.flip))._tag).toBe("SessionNotFoundError")
      }
      // A second delete is the 404 of `get`.
      expect((yield* host.sessions.remove({ sessionID: parent.id }).pipe(Effect.flip))._tag).toBe(
        "SessionNotFoundError"
      )
      const client = createOpencodeClient({ baseUrl: OpenCode.embeddedBaseUrl, fetch: host.fetch })
      yield* Effect.promise(() => client.sessions.remove({ sessionID: kept.id }))
      const failure = yield* Effect.promise(() =>
        client.sessions.remove({ sessionID: kept.id }).then(
          () => undefined,
          (e) => e
        )
      )
      expect(isSessionNotFoundError(failure)).toBe(true)
      expect((yield* host.sessions.list()).items).toEqual([])
    })
  )
})
