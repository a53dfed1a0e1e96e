import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { createOpencodeClient } from "@opencode-ai/client"
import { OpencodeClient } from "@opencode-ai/client/effect"
import { OpenCode } from "@opencode-ai/sdk-next"
import { Serve } from "@opencode-ai/server"
import { Effect, Layer, LogLevel, type Scope } from "effect"

const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), `opencode-${prefix}-`))

/** The operations the scenario needs, as plain promises, whatever the transport underneath. */
interface Sessions {
  readonly create: (input: { location?: { directory: string } }) => Promise<any>
  readonly get: (sessionID: string) => Promise<any>
  /** An initial query or a continuation (a page's link), as the clients' Page projection takes them. */
  readonly list: (
    input: { limit?: number; directory?: string; order?: "asc" | "desc" } | { cursor: string }
  ) => Promise<any>
}

/** The real listener on 127.0.0.1 with an ephemeral port over a fresh database. */
const listen = Effect.gen(function* () {
  const context = yield* Layer.build(
    Serve.layer({
      port: 0,
      hostname: "127.0.0.1",
      printLogs: true,
      logLevel: LogLevel.None,
      directory: temp("instance"),
      env: {
        XDG_DATA_HOME: temp("data"),
        XDG_CONFIG_HOME: temp("config"),
        XDG_CACHE_HOME: temp("cache"),
        OPENCODE_DISABLE_MODELS_FETCH: "1"
      }
    })
  ).pipe(Effect.orDie)
  const { HttpServer } = yield* Effect.promise(() => import("@effect/platform"))
  const server = yield* HttpServer.HttpServer.pipe(Effect.provide(context))
  if (server.address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected TCP")
  return `http://127.0.0.1:${server.address.port}`
})

const fromEffectClient = (client: OpencodeClient.Service): Sessions => ({
  create: (input) => Effect.runPromise(client.sessions.create(input)),
  get: (sessionID) => Effect.runPromise(client.sessions.get({ sessionID: sessionID as any })),
  list: (input) => Effect.runPromise(client.sessions.list(input as any))
})

const transports: ReadonlyArray<readonly [string, Effect.Effect<Sessions, never, Scope.Scope>]> = [
  [
    "Promise client over HTTP",
    Effect.map(listen, (baseUrl) => {
      const client = createOpencodeClient({ baseUrl })
      return {
        create: (input) => client.sessions.create(input),
        get: (sessionID) => client.sessions.get({ sessionID }),
        list: (input) => client.sessions.list(input)
      } satisfies Sessions
    })
  ],
  [
    "Effect client over HTTP",
    Effect.flatMap(listen, (baseUrl) =>
      OpencodeClient.make({ baseUrl }).pipe(Effect.map(fromEffectClient), Effect.provide(FetchHttpClient.layer))
    )
  ],
  [
    "embedded host",
    OpenCode.embedded({ databaseFile: path.join(temp("embedded"), "opencode.db"), directory: temp("instance") }).pipe(
      Effect.map(fromEffectClient),
      Effect.orDie
    )
  ]
]

describe.each(transports)("session scenario through the %s", (_name, transport) => {
  it.scopedLive("creates 3 sessions in 2 directories, gets one and pages through them", () =>
    Effect.gen(function* () {
      const sessions = yield* transport
      const [dirA, dirB] = [temp("dir-a"), temp("dir-b")]
      const created: Array<any> = []
      for (const directory of [dirA, dirB, dirA]) {
        created.push(yield* Effect.promise(() => sessions.create({ location: { directory } })))
      }
      expect(created.map((s) => s.location.directory)).toEqual([dirA, dirB, dirA])
      for (const s of created) expect(s.id).toMatch(/^ses_[0-9a-f]{12}[0-9A-Za-z]{14}$/)

      const fetched = yield* Effect.promise(() => sessions.get(created[1].id))
      expect(fetched).toEqual(created[1])

      // Newest first, one per page, following `next` to the end.
      const newestFirst = [...created].reverse().map((s) => s.id)
      const seen: Array<string> = []
      let page = yield* Effect.promise(() => sessions.list({ limit: 1 }))
      expect(page.previous).toBeUndefined()
      seen.push(...page.items.map((s: any) => s.id))
      while (page.next) {
        const cursor: string = page.next
        page = yield* Effect.promise(() => sessions.list({ cursor }))
        seen.push(...page.items.map((s: any) => s.id))
      }
      expect(seen).toEqual(newestFirst)

      // And back again with `previous`.
      const back: Array<string> = [...page.items.map((s: any) => s.id)]
      while (page.previous) {
        const cursor: string = page.previous
        page = yield* Effect.promise(() => sessions.list({ cursor }))
        back.unshift(...page.items.map((s: any) => s.id))
      }
      expect(back).toEqual(newestFirst)

      const inA = yield* Effect.promise(() => sessions.list({ directory: dirA, order: "asc" }))
      expect(inA.items.map((s: any) => s.id)).toEqual([created[0].id, created[2].id])
      expect(inA).toEqual({ items: inA.items })
    })
  )
})
